#include "engine/session/model_family.h"

#include "engine/core/errors.h"
#include "engine/core/number_parsing.h"

namespace kvs {

bool FamilyOptions::has(const std::string& name) const {
  const bool present = values_.count(name) > 0;
  if (present) read_[name] = true;
  return present;
}

std::string FamilyOptions::get(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  read_[name] = true;
  return it->second;
}

std::string FamilyOptions::require(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) throw InvalidArgumentError("missing required option " + name);
  read_[name] = true;
  return it->second;
}

int64_t FamilyOptions::get_int(const std::string& name, int64_t fallback) const {
  if (!values_.count(name)) return fallback;
  return parse_int_option(name, get(name, ""));
}

uint64_t FamilyOptions::get_u64(const std::string& name, uint64_t fallback) const {
  if (!values_.count(name)) return fallback;
  return parse_u64_option(name, get(name, ""));
}

std::vector<int64_t> FamilyOptions::get_int_list(const std::string& name) const {
  return parse_int_list_option(name, require(name));
}

std::vector<std::string> FamilyOptions::unused() const {
  std::vector<std::string> out;
  for (const auto& [name, value] : values_)
    if (!read_.count(name)) out.push_back(name);
  return out;
}

void FamilyOptions::refuse_unused(const std::string& what) const {
  const std::vector<std::string> names = unused();
  if (!names.empty()) throw InvalidArgumentError("option " + names.front() + " does not apply to " + what);
}

bool ModelFamily::owns_conformance_case(const nlohmann::ordered_json& manifest) const {
  const std::string& key = description().conformance_constructor;
  return !key.empty() && manifest.contains("constructors") && manifest["constructors"].contains(key);
}

std::string ModelFamily::calibrate(const io::ModelBundle&, const DeviceChoice&,
                                   const CalibrationRequest& request) const {
  throw InvalidArgumentError("policy '" + request.policy + "' needs no calibration on " + description().display_name +
                             " models");
}

}  // namespace kvs
