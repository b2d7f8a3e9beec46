#pragma once
// Official Infinity downloads -> KV Studio bundle. Three inputs:
//   --checkpoint: infinity_2b_reg.pth (torch.save of Infinity.state_dict(), raw
//     or under "model" / "module" / "state_dict"), or a folder of safetensors
//     shards with their index (infinity_8b_weights/);
//   --vae: infinity_vae_d32reg.pth / infinity_vae_d56_f8_14_patchify.pth
//     (torch.save({"vae": state_dict})) or a .safetensors of that state dict;
//     only the decoder is kept, in the official wrapped names (a plain-named
//     checkpoint is mapped as vae.py's loader maps it);
//   --t5: the google/flan-t5-xl Hugging Face folder (config.json, spiece.model
//     and its weight shards); only the encoder is kept.
// The architectures are read from the tensor shapes (depth and chunking from
// the block keys, heads from the cosine-attention scales, d from the decoder's
// input, patchify from 4d bits per token), and every tensor is checked strictly:
// the official loader takes its checkpoint with strict=False, where a chunking
// mismatch would silently run random blocks; here a missing or unknown tensor
// is refused by name before anything is written. The code-free torch.save
// reader (engine/io/torch_checkpoint.h) never runs anything in a .pth.
#include <functional>
#include <string>

#include "engine/models/infinity/infinity_model.h"

namespace kvs::infinity {

struct InfinityConvertOptions {
  std::string checkpoint, vae, t5, out_dir;
  std::string name;                    // default: the checkpoint's file or folder stem
  std::string weights_dtype = "keep";  // keep | f32 | f16 | bf16
  std::string pixel_budget = "1M";     // the released models' (13 scales, 1024 px)
};

struct InfinityConvertReport {
  InfinityModelConfig config;
  int64_t tensors_written = 0, bytes_written = 0, tensors_dropped = 0;
};

InfinityConvertReport convert_infinity_checkpoint(const InfinityConvertOptions& options,
                                                  const std::function<void(double, const std::string&)>& progress = {});

}  // namespace kvs::infinity
