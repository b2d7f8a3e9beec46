#include "engine/io/safetensors_writer.h"

#include <nlohmann/json.hpp>

#include <set>

#include "engine/core/errors.h"
#include "engine/io/mapped_file.h"
#include "engine/io/safetensors_reader.h"

namespace kvs::io {

void write_safetensors(const std::string& path, const NamedTensors& tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<at::Tensor> contiguous;
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    if (!names.insert(name).second) throw Error("write " + path + ": duplicate tensor name '" + name + "'");
    at::Tensor c = t.detach().to(at::kCPU).contiguous();
    const DType dtype = from_scalar_type(c.scalar_type());
    const uint64_t bytes = static_cast<uint64_t>(c.numel()) * dtype_size(dtype);
    header[name] = {{"dtype", dtype_name(dtype)},
                    {"shape", c.sizes().vec()},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    contiguous.push_back(std::move(c));
  }
  std::string header_text = header.dump();
  while ((header_text.size() % 8) != 0) header_text.push_back(' ');
  std::string out;
  out.reserve(8 + header_text.size() + offset);
  uint64_t n = header_text.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  out += header_text;
  for (const auto& c : contiguous) {
    out.append(static_cast<const char*>(c.data_ptr()), c.nbytes());
  }
  write_file_atomic(path, out);
}

}  // namespace kvs::io
