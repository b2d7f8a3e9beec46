#include "engine/io/torch_checkpoint_index.h"

#include <optional>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "engine/core/errors.h"
#include "engine/io/message_text.h"
#include "engine/io/pickle_machine.h"
#include "engine/io/zip_archive.h"

namespace kvs::io {
namespace {

using pickle::Kind;
using pickle::Value;

// Storage classes and dtypes that name a tensor's element type in a persistent id.
std::optional<CheckpointDType> storage_dtype(const pickle::GlobalData& g) {
  using D = CheckpointDType;
  if (g.module != "torch") return std::nullopt;
  static const std::pair<const char*, D> kTable[] = {
      {"FloatStorage", D::F32}, {"DoubleStorage", D::F64}, {"HalfStorage", D::F16},   {"BFloat16Storage", D::BF16},
      {"LongStorage", D::I64},  {"IntStorage", D::I32},    {"ShortStorage", D::I16},  {"CharStorage", D::I8},
      {"ByteStorage", D::U8},   {"BoolStorage", D::Bool},  {"UntypedStorage", D::U8}, {"float32", D::F32},
      {"float", D::F32},        {"float64", D::F64},       {"double", D::F64},        {"float16", D::F16},
      {"half", D::F16},         {"bfloat16", D::BF16},     {"int64", D::I64},         {"long", D::I64},
      {"int32", D::I32},        {"int", D::I32},           {"int16", D::I16},         {"short", D::I16},
      {"int8", D::I8},          {"uint8", D::U8},          {"bool", D::Bool}};
  for (const auto& [name, type] : kTable)
    if (g.name == name) return type;
  return std::nullopt;
}

// The first bytes tell a zip archive from the legacy format (PyTorch < 1.6, a
// pickled magic number: PROTO 2, LONG1 of 10 bytes) and from anything else.
void check_zip_magic(const uint8_t* data, std::size_t size, const std::string& origin) {
  const bool zip = size >= 4 && data[0] == 'P' && data[1] == 'K' && data[2] == 3 && data[3] == 4;
  if (zip) return;
  const bool legacy = size >= 4 && data[0] == 0x80 && data[1] == 0x02 && data[2] == 0x8a && data[3] == 0x0a;
  throw FormatError(origin + ": not a PyTorch checkpoint (expected the zip format written by torch.save)" +
                    (legacy ? "; this is the legacy format of PyTorch < 1.6, load and re-save it with a "
                              "current PyTorch"
                            : ""));
}

// Turns the pickle's storages into checked records, each once.
class StorageTable {
 public:
  StorageTable(const ZipArchive& zip, const pickle::Unpickler& vm, CheckpointIndex& index)
      : zip_(zip), vm_(vm), index_(index) {}

  std::size_t storage_of(const pickle::TensorData& t, const std::string& tensor) {
    const pickle::StorageData& s = vm_.storages[t.storage];
    const std::string& origin = zip_.origin();
    const std::optional<CheckpointDType> dtype = storage_dtype(s.type);
    if (!dtype)
      throw FormatError(
          origin + ": tensor " + tensor + " has storage type " + one_line(s.type.full()) +
          ", which is not supported (supported: float32/64, float16, bfloat16, int8/16/32/64, uint8, bool)");
    auto it = by_key_.find(s.key);
    if (it != by_key_.end()) {
      const CheckpointStorage& known = index_.storages[it->second];
      if (known.dtype != *dtype || known.numel != s.numel)
        throw FormatError(origin + ": storage data/" + one_line(s.key) + " is used with two different types or sizes");
      return it->second;
    }
    const std::string record = "data/" + s.key;
    const std::string shown = "data/" + one_line(s.key);
    const ZipEntry* entry = zip_.find(record);
    if (entry == nullptr) throw FormatError(origin + ": tensor " + tensor + " refers to the missing record " + record);
    uint64_t want = 0;
    const bool overflow = __builtin_mul_overflow(static_cast<uint64_t>(s.numel), checkpoint_dtype_size(*dtype), &want);
    if (overflow || entry->size != want)
      throw FormatError(origin + ": record " + shown + " has " + std::to_string(entry->size) + " bytes, expected " +
                        (overflow ? std::string("more than 2^64") : std::to_string(want)) + " (" +
                        std::to_string(s.numel) + " x " + checkpoint_dtype_name(*dtype) + ")");
    const std::string_view bytes = zip_.bytes(*entry);
    if (*dtype == CheckpointDType::Bool)
      for (const char c : bytes)
        if (c != 0 && c != 1) throw FormatError(origin + ": record " + shown + " holds a bool that is neither 0 nor 1");
    index_.storages.push_back(CheckpointStorage{s.key, *dtype, s.numel, entry->data_offset, entry->size});
    by_key_.emplace(s.key, index_.storages.size() - 1);
    return index_.storages.size() - 1;
  }

 private:
  const ZipArchive& zip_;
  const pickle::Unpickler& vm_;
  CheckpointIndex& index_;
  std::unordered_map<std::string, std::size_t> by_key_;
};

}  // namespace

const char* checkpoint_dtype_name(CheckpointDType dtype) {
  switch (dtype) {
    case CheckpointDType::F32: return "float32";
    case CheckpointDType::F64: return "float64";
    case CheckpointDType::F16: return "float16";
    case CheckpointDType::BF16: return "bfloat16";
    case CheckpointDType::I64: return "int64";
    case CheckpointDType::I32: return "int32";
    case CheckpointDType::I16: return "int16";
    case CheckpointDType::I8: return "int8";
    case CheckpointDType::U8: return "uint8";
    case CheckpointDType::Bool: return "bool";
  }
  return "?";
}

std::size_t checkpoint_dtype_size(CheckpointDType dtype) {
  switch (dtype) {
    case CheckpointDType::F64:
    case CheckpointDType::I64: return 8;
    case CheckpointDType::F32:
    case CheckpointDType::I32: return 4;
    case CheckpointDType::F16:
    case CheckpointDType::BF16:
    case CheckpointDType::I16: return 2;
    case CheckpointDType::I8:
    case CheckpointDType::U8:
    case CheckpointDType::Bool: return 1;
  }
  return 1;
}

CheckpointIndex index_torch_checkpoint(const uint8_t* data, std::size_t size, const std::string& origin,
                                       const std::vector<std::string>& keys) {
  check_zip_magic(data, size, origin);
  const ZipArchive zip(data, size, origin);
  const ZipEntry* pkl = zip.find("data.pkl");
  if (pkl == nullptr) throw FormatError(origin + ": zip archive has no data.pkl record (not written by torch.save?)");
  if (const ZipEntry* order = zip.find("byteorder")) {
    const std::string_view value = zip.bytes(*order);
    if (value != "little")
      throw FormatError(origin + ": tensors are stored in " + one_line(value, 16) +
                        "-endian byte order; only little-endian is supported");
  }
  const std::string_view pkl_bytes = zip.bytes(*pkl);
  pickle::Unpickler vm(reinterpret_cast<const uint8_t*>(pkl_bytes.data()), pkl_bytes.size(), origin);
  const Value root = vm.load();
  if (root.kind != Kind::Dict)
    throw FormatError(origin + ": top level is " + vm.describe(root) +
                      ", expected a dict (a state dict or {\"model\": ...})");

  // {"<key>": sd} for the first of `keys` (e.g. "model", "module", "state_dict") / the state dict itself.
  CheckpointIndex index;
  std::size_t selected = root.ref;
  std::string where = "state dict";
  for (const std::string& key : keys) {
    const pickle::DictData& top = vm.dicts[root.ref];
    auto it = top.by_str.find(key);
    if (it != top.by_str.end() && top.items[it->second].second.kind == Kind::Dict) {
      selected = top.items[it->second].second.ref;
      where = "state dict \"" + key + "\"";
      index.selected_key = key;
      break;
    }
  }

  StorageTable storages(zip, vm, index);
  const pickle::DictData& sd = vm.dicts[selected];
  index.tensors.reserve(sd.items.size());
  for (const auto& [key, value] : sd.items) {
    if (key.kind != Kind::Str)
      throw FormatError(origin + ": " + where + " has a key that is " + vm.describe(key) + ", expected a string");
    const std::string& name = vm.strings[key.ref];
    if (!pickle::valid_utf8(name)) throw FormatError(origin + ": " + where + " has a key that is not valid UTF-8");
    if (value.kind != Kind::Tensor)
      throw FormatError(origin + ": " + where + " entry '" + one_line(name) + "' is " + vm.describe(value) +
                        ", expected a tensor (is this a state dict?)");
    const pickle::TensorData& t = vm.tensors[value.ref];
    // Built by appending: GCC 12 warns (-Wrestrict, falsely) on "'" + std::string&&.
    std::string quoted(1, '\'');
    quoted += one_line(name);
    quoted += '\'';
    CheckpointTensor out{name, storages.storage_of(t, quoted), t.offset, t.sizes, t.strides};
    index.tensors.push_back(std::move(out));
  }
  return index;
}

}  // namespace kvs::io
