#pragma once
// What the converters of official checkpoints (LlamaGen, VAR, MAR) share when
// they read a torch.save state dict: names without the training wrappers, a
// required tensor with an error that names the file, and block counting.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace kvs::io {

using StateDict = std::map<std::string, at::Tensor>;

// `items` keyed by name without the DDP ("module.") and torch.compile
// ("_orig_mod.") prefixes; FormatError "<origin>: contains no tensors" when empty.
StateDict unwrapped_state_dict(std::vector<std::pair<std::string, at::Tensor>> items, const std::string& origin);

// read_torch_state_dict(path, what), unwrapped; `what` names the file in
// messages ("checkpoint", "tokenizer").
StateDict load_unwrapped_state_dict(const std::string& path, const char* what);

// sd[name]; ModelMismatchError "<origin>: missing tensors: <name>" when absent.
const at::Tensor& need_tensor(const StateDict& sd, const std::string& name, const std::string& origin);

// Number of distinct N in keys "<prefix>N.<suffix>" (tensor_spec.h's count_indexed).
int64_t count_indexed(const StateDict& sd, const std::string& prefix, const std::string& suffix);

}  // namespace kvs::io
