#pragma once
// Reads the tensors of a torch.save checkpoint without Python and without running
// any of its code. LibTorch's own torch::jit::pickle_load rejects ordinary
// checkpoints (a state dict is a collections.OrderedDict carrying a `_metadata`
// attribute, which it cannot rebuild), so we unpickle them ourselves.
//
// Only the zip format written by torch.save since PyTorch 1.6 is read: the pickle
// is the record data.pkl, tensor storages are the records data/<key>. Everything
// up to the description of each tensor (the zip container, the bounded pickle
// machine, storage sizes, shapes, strides, offsets) is torch-free and checked in
// torch_checkpoint_index.h; this file only builds the at::Tensors over the
// memory-mapped file. No class or function the pickle names is ever imported,
// resolved or called. Malformed input throws kvs::FormatError; it never crashes
// or reads outside the file.
#include <ATen/core/Tensor.h>

#include <string>
#include <utility>
#include <vector>

namespace kvs::io {

// Returns the state dict of the checkpoint at `path`, in insertion order: the
// top-level dict itself, or the dict under the first of the keys "model",
// "module", "state_dict" whose value is a dict (other top-level entries such as
// "optimizer", "steps" or "args" are ignored). Every entry of the selected dict
// must have a string key and a tensor value. Tensors are on the CPU with their
// stored dtype and may be views sharing one storage, as torch.load returns them.
// An empty state dict gives an empty vector (the caller decides whether that is an error).
//
// `what` names the file in messages ("checkpoint", "tokenizer", ...), e.g.
//   "checkpoint /path/x.pt: not a PyTorch checkpoint (expected the zip format written by torch.save)".
// Throws FileError (missing/unreadable) or FormatError (anything malformed or unsupported).
std::vector<std::pair<std::string, at::Tensor>> read_torch_state_dict(const std::string& path, const std::string& what);

// The same with the candidate keys given: the dict under the first of `keys`
// whose value is a dict (a key holding None or a non-dict is passed over), else
// the top-level dict. `selected_key` tells which one was read ("" = top level).
// E.g. MAR's checkpoint-last.pth: {"model_ema", "model"} picks the EMA weights.
struct TorchStateDict {
  std::string selected_key;
  std::vector<std::pair<std::string, at::Tensor>> tensors;
};
TorchStateDict read_torch_state_dict_under(const std::string& path, const std::string& what,
                                           const std::vector<std::string>& keys);

}  // namespace kvs::io
