#pragma once
// Official LlamaGen checkpoints -> KV Studio bundle.
// Reads `c2i_*.pt` (top level {"model": state_dict}, {"module": ...},
// {"state_dict": ...} or a raw state dict) and the VQ tokenizer
// (`vq_ds16_c2i.pt`, {"model": state_dict}) with torch::pickle_load, infers the
// architecture from tensor shapes (n_head from the official size table, image size
// from --image-size or the file name, e.g. c2i_B_384.pt), then checks every key and
// shape strictly and reports missing/unexpected keys by name.
#include <functional>
#include <string>
#include <vector>

#include "engine/models/llamagen/llamagen_config.h"

namespace kvs::llamagen {

struct ConvertOptions {
  std::string checkpoint;  // c2i_*.pt
  std::string tokenizer;   // vq_ds*_c2i.pt
  std::string out_dir;
  std::string name;                    // default: checkpoint file stem
  int64_t image_size = 0;              // 0: from the file name
  int64_t n_head = 0;                  // 0: from the official size table
  std::string weights_dtype = "keep";  // keep | f32 | f16 | bf16
};

struct ConvertReport {
  GptConfig gpt;
  VqConfig vq;
  int64_t tensors_written = 0;
  int64_t bytes_written = 0;
  std::vector<std::string> dropped_keys;  // known-unused tokenizer keys (codebook_used, an incomplete encoder)
  // The tokenizer's encoder half went into the bundle (files.vq_encoder), so it
  // can finish pictures; false when the checkpoint lacks some of its tensors.
  bool encoder_kept = false;
};

using ConvertProgress = std::function<void(double fraction, const std::string& stage)>;

ConvertReport convert_llamagen_checkpoint(const ConvertOptions& options, const ConvertProgress& progress = {});

}  // namespace kvs::llamagen
