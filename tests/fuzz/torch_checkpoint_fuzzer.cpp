// libFuzzer target for the torch.save reader's torch-free part
// (engine/io/torch_checkpoint_index): the zip container, data.pkl run by the
// bounded pickle machine, and the description of every tensor. Any input must
// either give a description whose every byte lies inside the file, or throw
// kvs::FormatError; never crash, hang or throw anything else.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/core/errors.h"
#include "engine/io/torch_checkpoint_index.h"

namespace {

// The view's elements, each inside its storage, computed independently of the reader.
void check_view(const kvs::io::CheckpointTensor& t, const kvs::io::CheckpointStorage& s) {
  if (t.sizes.size() != t.strides.size() || t.offset < 0) std::abort();
  __int128 last = t.offset;
  bool empty = false;
  for (std::size_t d = 0; d < t.sizes.size(); ++d) {
    if (t.sizes[d] < 0 || t.strides[d] < 0) std::abort();
    if (t.sizes[d] == 0) empty = true;
  }
  if (empty) {
    if (t.offset > s.numel) std::abort();
    return;
  }
  for (std::size_t d = 0; d < t.sizes.size(); ++d) last += static_cast<__int128>(t.sizes[d] - 1) * t.strides[d];
  if (last >= s.numel) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const kvs::io::CheckpointIndex index = kvs::io::index_torch_checkpoint(data, size, "fuzz-input",
                                                                           {"model", "module", "state_dict"});
    for (const auto& s : index.storages) {
      if (s.numel < 0 || s.data_offset > size || s.nbytes > size - s.data_offset) std::abort();
      if (static_cast<__int128>(s.numel) * kvs::io::checkpoint_dtype_size(s.dtype) != s.nbytes) std::abort();
    }
    for (const auto& t : index.tensors) {
      if (t.storage >= index.storages.size()) std::abort();
      check_view(t, index.storages[t.storage]);
    }
  } catch (const kvs::FormatError&) {
  }
  return 0;
}
