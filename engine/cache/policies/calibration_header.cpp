#include "engine/cache/policies/calibration_header.h"

#include <limits>
#include <utility>

namespace kvs {
namespace {

std::string field(const std::string& key) { return "field \"" + key + "\""; }

// What a value is, for "must be an integer, got ...": numbers as written,
// anything else by its kind (a long string or list would swamp the message).
std::string described(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::boolean: return "a boolean";
    case nlohmann::json::value_t::string: return "a string";
    case nlohmann::json::value_t::array: return "a list";
    case nlohmann::json::value_t::object: return "an object";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float: return v.dump();
    default: return "something else";
  }
}

}  // namespace

CalibrationReader::CalibrationReader(const std::string& json_text, std::string source, std::string format,
                                     std::string kind)
    : source_(std::move(source)), kind_(std::move(kind)) {
  try {
    json_ = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {
    throw error(std::string("invalid JSON (") + e.what() + ")");
  }
  // A "format" of another type is the wrong file too; json::value() would throw
  // the library's type_error for it.
  const nlohmann::json* f = json_.is_object() ? find("format") : nullptr;
  if (f == nullptr || !f->is_string() || f->get_ref<const std::string&>() != format)
    throw error("format is not '" + format + "'");
  // Compared as JSON: 4294967297 must not wrap to 1 on the way to an int.
  const nlohmann::json& version = required("version");
  if (version != 1) throw error("unsupported version " + version.dump());

  header_.model = text("model", std::string());
  header_.layers = integer("layers");
  header_.unit_tokens = integers("unit_tokens");
  header_.classes = integers("classes", {});
  header_.seed = unsigned_integer("seed", 0);
  header_.cfg = real("cfg", 0.0);
  if (header_.layers < 1 || header_.layers > kCalibrationMaxLayers || header_.scales() < 2 ||
      header_.scales() > kCalibrationMaxScales)
    throw error("layers (1.." + std::to_string(kCalibrationMaxLayers) + ") and 2.." +
                std::to_string(kCalibrationMaxScales) + " scales are required, got " + std::to_string(header_.layers) +
                " layers and " + std::to_string(header_.scales()) + " scales");
  for (int64_t t : header_.unit_tokens)
    if (t <= 0) throw error("a scale has no tokens (" + std::to_string(t) + ")");
}

FormatError CalibrationReader::error(const std::string& why) const {
  return FormatError(source_ + ": not " + kind_ + ": " + why);
}

const nlohmann::json* CalibrationReader::find(const char* key) const {
  const auto it = json_.find(key);
  return it == json_.end() ? nullptr : &*it;
}

const nlohmann::json& CalibrationReader::required(const char* key) const {
  const nlohmann::json* v = find(key);
  if (v == nullptr) throw error(field(key) + " is missing");
  return *v;
}

int64_t CalibrationReader::integer_of(const nlohmann::json& v, const std::string& name) const {
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    throw error(name + " is " + v.dump() + ", more than 2^63 - 1");
  if (!v.is_number_integer()) throw error(name + " must be an integer, got " + described(v));
  return v.get<int64_t>();
}

double CalibrationReader::real_of(const nlohmann::json& v, const std::string& name) const {
  if (!v.is_number()) throw error(name + " must be a number, got " + described(v));
  return v.get<double>();
}

const nlohmann::json& CalibrationReader::list_of(const nlohmann::json& v, const std::string& name) const {
  if (!v.is_array()) throw error(name + " must be a list, got " + described(v));
  return v;
}

std::vector<int64_t> CalibrationReader::integers_of(const nlohmann::json& v, const std::string& name) const {
  std::vector<int64_t> out;
  out.reserve(list_of(v, name).size());
  for (size_t i = 0; i < v.size(); ++i) out.push_back(integer_of(v[i], name + "[" + std::to_string(i) + "]"));
  return out;
}

std::vector<double> CalibrationReader::reals_of(const nlohmann::json& v, const std::string& name) const {
  std::vector<double> out;
  out.reserve(list_of(v, name).size());
  for (size_t i = 0; i < v.size(); ++i) out.push_back(real_of(v[i], name + "[" + std::to_string(i) + "]"));
  return out;
}

int64_t CalibrationReader::integer(const char* key) const { return integer_of(required(key), field(key)); }

int64_t CalibrationReader::integer(const char* key, int64_t fallback) const {
  const nlohmann::json* v = find(key);
  return v == nullptr ? fallback : integer_of(*v, field(key));
}

uint64_t CalibrationReader::unsigned_integer(const char* key, uint64_t fallback) const {
  const nlohmann::json* v = find(key);
  if (v == nullptr) return fallback;
  if (!v->is_number_unsigned()) throw error(field(key) + " must be an integer >= 0, got " + described(*v));
  return v->get<uint64_t>();
}

double CalibrationReader::real(const char* key) const { return real_of(required(key), field(key)); }

double CalibrationReader::real(const char* key, double fallback) const {
  const nlohmann::json* v = find(key);
  return v == nullptr ? fallback : real_of(*v, field(key));
}

std::string CalibrationReader::text(const char* key, const std::string& fallback) const {
  const nlohmann::json* v = find(key);
  if (v == nullptr) return fallback;
  if (!v->is_string()) throw error(field(key) + " must be a string, got " + described(*v));
  return v->get<std::string>();
}

std::vector<int64_t> CalibrationReader::integers(const char* key) const {
  return integers_of(required(key), field(key));
}

std::vector<int64_t> CalibrationReader::integers(const char* key, const std::vector<int64_t>& fallback) const {
  const nlohmann::json* v = find(key);
  return v == nullptr ? fallback : integers_of(*v, field(key));
}

std::vector<double> CalibrationReader::reals(const char* key) const { return reals_of(required(key), field(key)); }

std::vector<std::vector<std::vector<double>>> CalibrationReader::reals_3d(const char* key) const {
  const std::string name = field(key);
  const nlohmann::json& outer = list_of(required(key), name);
  std::vector<std::vector<std::vector<double>>> out(outer.size());
  for (size_t i = 0; i < outer.size(); ++i) {
    const std::string at_i = name + "[" + std::to_string(i) + "]";
    const nlohmann::json& middle = list_of(outer[i], at_i);
    out[i].reserve(middle.size());
    for (size_t j = 0; j < middle.size(); ++j)
      out[i].push_back(reals_of(middle[j], at_i + "[" + std::to_string(j) + "]"));
  }
  return out;
}

std::string calibration_geometry(int64_t layers, const std::vector<int64_t>& unit_tokens, int64_t heads) {
  // Appended piece by piece: GCC 12 warns (-Wrestrict, a false positive) on
  // " " + std::to_string(t) here.
  std::string s = std::to_string(layers) + " layers";
  if (heads > 0) s.append(" x ").append(std::to_string(heads)).append(" heads");
  s += ", scales of";
  for (int64_t t : unit_tokens) s.append(" ").append(std::to_string(t));
  return s + " tokens";
}

void CalibrationReader::require_table_size(const std::string& name, size_t values, std::initializer_list<int64_t> dims,
                                           const std::string& dims_text) const {
  int64_t expected = 1;
  for (int64_t d : dims)
    if (d < 0 || __builtin_mul_overflow(expected, d, &expected)) {
      expected = -1;
      break;
    }
  if (expected >= 0 && static_cast<int64_t>(values) == expected) return;
  throw error(name + " has " + std::to_string(values) + " values, expected " +
              (expected < 0 ? dims_text + " = more than 2^63" : std::to_string(expected)));
}

}  // namespace kvs
