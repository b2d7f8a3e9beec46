#include "engine/io/converted_state_dict.h"

#include <cstring>

#include "engine/core/errors.h"
#include "engine/io/bundle_weights.h"
#include "engine/io/tensor_spec.h"
#include "engine/io/torch_checkpoint.h"

namespace kvs::io {

StateDict unwrapped_state_dict(std::vector<std::pair<std::string, at::Tensor>> items, const std::string& origin) {
  StateDict out;
  for (auto& [key, tensor] : items) {
    std::string name = key;
    for (const char* prefix : {"module.", "_orig_mod."})
      if (name.rfind(prefix, 0) == 0) name = name.substr(std::strlen(prefix));
    out[name] = tensor;
  }
  if (out.empty()) throw FormatError(origin + ": contains no tensors");
  return out;
}

StateDict load_unwrapped_state_dict(const std::string& path, const char* what) {
  return unwrapped_state_dict(read_torch_state_dict(path, what), std::string(what) + " " + path);
}

const at::Tensor& need_tensor(const StateDict& sd, const std::string& name, const std::string& origin) {
  auto it = sd.find(name);
  if (it == sd.end()) throw ModelMismatchError(origin + ": missing tensors: " + name);
  return it->second;
}

int64_t count_indexed(const StateDict& sd, const std::string& prefix, const std::string& suffix) {
  return count_indexed(shapes_of(sd), prefix, suffix);
}

}  // namespace kvs::io
