#include "engine/io/safetensors_format.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <set>

#include "engine/core/errors.h"

namespace kvs::io {
namespace {

[[noreturn]] void fail(const std::string& origin, const std::string& what) {
  throw FormatError("file " + origin + ": " + what);
}

uint64_t read_u64_le(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

uint64_t json_u64(const nlohmann::json& v, const std::string& origin, const std::string& what) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer()) {
    const int64_t i = v.get<int64_t>();
    if (i >= 0) return static_cast<uint64_t>(i);
  }
  fail(origin, what + " must be a non-negative integer, got " + v.dump());
}

// Folds each "NAME::row_scale" tensor into its I8 partner NAME (see the header).
void fold_row_scales(SafetensorsIndex& index, const std::string& origin) {
  const std::string suffix = kRowScaleSuffix;
  std::map<std::string, const TensorEntry*> scales;
  for (const auto& t : index.tensors)
    if (t.name.size() > suffix.size() && t.name.compare(t.name.size() - suffix.size(), suffix.size(), suffix) == 0)
      scales[t.name.substr(0, t.name.size() - suffix.size())] = &t;
  if (scales.empty()) return;
  for (auto& t : index.tensors) {
    const auto it = scales.find(t.name);
    if (it == scales.end()) continue;
    const TensorEntry& scale = *it->second;
    const std::string where = "tensor '" + scale.name + "'";
    if (t.dtype != DType::I8)
      fail(origin,
           where + " scales the rows of '" + t.name + "', which is stored as " + dtype_name(t.dtype) + ", not I8");
    if (t.shape.empty()) fail(origin, where + " scales the rows of '" + t.name + "', which has no rows (a scalar)");
    if (scale.dtype != DType::F32 || scale.shape != std::vector<int64_t>{t.shape[0]})
      fail(origin, where + " must be F32 of shape [" + std::to_string(t.shape[0]) + "] (one scale per row of '" +
                       t.name + "'), got " + dtype_name(scale.dtype) + " " + shape_string(scale.shape));
    t.row_scaled = true;
    t.scale_begin = scale.begin;
    t.scale_end = scale.end;
  }
  for (const auto& [owner, scale] : scales)
    if (index.find(owner) == nullptr)
      fail(origin, "tensor '" + scale->name + "' has no I8 tensor '" + owner + "' to scale");
  index.tensors.erase(std::remove_if(index.tensors.begin(), index.tensors.end(),
                                     [&](const TensorEntry& t) {
                                       return t.name.size() > suffix.size() &&
                                              t.name.compare(t.name.size() - suffix.size(), suffix.size(), suffix) == 0;
                                     }),
                      index.tensors.end());
}

}  // namespace

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::F32: return "F32";
    case DType::F16: return "F16";
    case DType::BF16: return "BF16";
    case DType::I64: return "I64";
    case DType::I32: return "I32";
    case DType::U8: return "U8";
    case DType::I8: return "I8";
  }
  return "?";
}

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::F32: return 4;
    case DType::F16: return 2;
    case DType::BF16: return 2;
    case DType::I64: return 8;
    case DType::I32: return 4;
    case DType::U8: return 1;
    case DType::I8: return 1;
  }
  return 0;
}

bool parse_dtype(const std::string& name, DType* out) {
  static const std::pair<const char*, DType> kTable[] = {{"F32", DType::F32},   {"F16", DType::F16},
                                                         {"BF16", DType::BF16}, {"I64", DType::I64},
                                                         {"I32", DType::I32},   {"U8", DType::U8},
                                                         {"I8", DType::I8}};
  for (const auto& [n, d] : kTable) {
    if (name == n) {
      *out = d;
      return true;
    }
  }
  return false;
}

bool TensorEntry::decodes_to_float() const {
  return dtype == DType::F32 || dtype == DType::F16 || dtype == DType::BF16 || (dtype == DType::I8 && row_scaled);
}

uint64_t TensorEntry::numel() const {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

const TensorEntry* SafetensorsIndex::find(const std::string& name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

SafetensorsIndex parse_safetensors(const uint8_t* data, std::size_t size, const std::string& origin) {
  if (size < 8) {
    fail(origin, "too short to be a safetensors file (" + std::to_string(size) +
                     " bytes; the 8-byte header length alone is missing)");
  }
  SafetensorsIndex index;
  index.header_bytes = read_u64_le(data);
  if (index.header_bytes > size - 8) {
    fail(origin, "header length " + std::to_string(index.header_bytes) + " exceeds the file size (" +
                     std::to_string(size) + " bytes); the file is truncated or not safetensors");
  }
  if (index.header_bytes > kMaxHeaderBytes) {
    fail(origin, "header length " + std::to_string(index.header_bytes) + " is larger than the " +
                     std::to_string(kMaxHeaderBytes) + "-byte limit");
  }
  if (index.header_bytes < 2) fail(origin, "header is empty (expected a JSON object)");
  index.data_offset = 8 + index.header_bytes;
  index.data_bytes = size - index.data_offset;

  const char* header_begin = reinterpret_cast<const char*>(data + 8);
  const char* header_end = header_begin + index.header_bytes;

  // Duplicate top-level names would silently shadow each other in a JSON object;
  // detect them while parsing.
  std::set<std::string> seen_keys;
  std::string duplicate;
  auto on_event = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    if (event == nlohmann::json::parse_event_t::key && depth == 1 && parsed.is_string()) {
      const auto& k = parsed.get_ref<const std::string&>();
      if (!seen_keys.insert(k).second && duplicate.empty()) duplicate = k;
    }
    return true;
  };
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(header_begin, header_end, on_event, /*allow_exceptions=*/true,
                                   /*ignore_comments=*/false);
  } catch (const nlohmann::json::exception& e) {
    fail(origin, std::string("header is not valid JSON (") + e.what() + ")");
  }
  if (!duplicate.empty()) fail(origin, "header names tensor '" + duplicate + "' more than once");
  if (!header.is_object()) fail(origin, "header must be a JSON object, got " + std::string(header.type_name()));

  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    const nlohmann::json& value = it.value();
    if (name == "__metadata__") {
      if (!value.is_object()) fail(origin, "__metadata__ must be an object of strings");
      for (auto m = value.begin(); m != value.end(); ++m) {
        if (!m.value().is_string()) fail(origin, "__metadata__ entry '" + m.key() + "' is not a string");
        index.metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    const std::string where = "tensor '" + name + "'";
    if (!value.is_object()) fail(origin, where + " must be an object with dtype, shape and data_offsets");
    for (auto f = value.begin(); f != value.end(); ++f) {
      if (f.key() != "dtype" && f.key() != "shape" && f.key() != "data_offsets")
        fail(origin, where + " has unknown field '" + f.key() + "'");
    }
    if (!value.contains("dtype") || !value.contains("shape") || !value.contains("data_offsets"))
      fail(origin, where + " must have dtype, shape and data_offsets");

    TensorEntry entry;
    entry.name = name;
    const auto& dtype = value["dtype"];
    if (!dtype.is_string()) fail(origin, where + ": dtype must be a string");
    if (!parse_dtype(dtype.get<std::string>(), &entry.dtype))
      fail(origin, where + " has unsupported dtype '" + dtype.get<std::string>() +
                       "' (supported: F32, F16, BF16, I64, I32, U8, I8)");

    const auto& shape = value["shape"];
    if (!shape.is_array()) fail(origin, where + ": shape must be an array");
    if (shape.size() > 16)
      fail(origin, where + ": shape has " + std::to_string(shape.size()) + " dimensions (at most 16)");
    // numel * dtype size must not overflow 64 bits: bound it by the data size.
    const uint64_t elem = dtype_size(entry.dtype);
    uint64_t bytes = elem;
    bool overflow = false;
    for (const auto& d : shape) {
      const uint64_t dim = json_u64(d, origin, where + " shape entry");
      if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) overflow = true;
      entry.shape.push_back(static_cast<int64_t>(std::min<uint64_t>(dim, std::numeric_limits<int64_t>::max())));
      if (dim != 0 && bytes > std::numeric_limits<uint64_t>::max() / dim) overflow = true;
      else bytes *= dim;
    }
    if (overflow) {
      bool any_zero = std::any_of(entry.shape.begin(), entry.shape.end(), [](int64_t d) { return d == 0; });
      if (!any_zero) fail(origin, where + " shape " + shape_string(entry.shape) + " is too large");
      bytes = 0;
    }

    const auto& offsets = value["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2) fail(origin, where + ": data_offsets must be [begin, end]");
    entry.begin = json_u64(offsets[0], origin, where + " data_offsets[0]");
    entry.end = json_u64(offsets[1], origin, where + " data_offsets[1]");
    if (entry.end < entry.begin)
      fail(origin, where + " has data_offsets [" + std::to_string(entry.begin) + "," + std::to_string(entry.end) +
                       "] with end before begin");
    if (entry.end - entry.begin != bytes)
      fail(origin, where + " with dtype " + dtype_name(entry.dtype) + " and shape " + shape_string(entry.shape) +
                       " needs " + std::to_string(bytes) + " bytes but data_offsets span " +
                       std::to_string(entry.end - entry.begin));
    if (entry.end > index.data_bytes)
      fail(origin, where + " data_offsets end " + std::to_string(entry.end) + " lies beyond the data section (" +
                       std::to_string(index.data_bytes) + " bytes); the file is truncated");
    index.tensors.push_back(std::move(entry));
  }

  // Non-overlap: sort non-empty spans by begin and compare neighbours.
  std::vector<const TensorEntry*> spans;
  for (const auto& t : index.tensors)
    if (t.end > t.begin) spans.push_back(&t);
  std::sort(spans.begin(), spans.end(), [](const TensorEntry* a, const TensorEntry* b) { return a->begin < b->begin; });
  for (std::size_t i = 1; i < spans.size(); ++i) {
    if (spans[i]->begin < spans[i - 1]->end)
      fail(origin, "tensors '" + spans[i - 1]->name + "' and '" + spans[i]->name + "' overlap in the data section");
  }
  fold_row_scales(index, origin);
  return index;
}

}  // namespace kvs::io
