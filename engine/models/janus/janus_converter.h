#pragma once
// `kvstudio-cli convert --family janus-pro --checkpoint DIR`: the official
// Hugging Face folder as a user downloads it (deepseek-ai/Janus-Pro-1B / -7B:
// config.json, the tokenizer files, and the weights as `*.safetensors` shards
// with model.safetensors.index.json, a single model.safetensors, or
// `pytorch_model*.bin` shards with pytorch_model.bin.index.json) -> a bundle
// that keeps only what image generation needs (no understanding path, no text
// head, no VQ encoder) plus the tokenizer files in tokenizer/.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/models/janus/janus_config.h"

namespace kvs::janus {

struct JanusConvertOptions {
  std::string checkpoint;              // the downloaded folder
  std::string out_dir;                 // the bundle to write
  std::string name;                    // default: the folder's name
  std::string weights_dtype = "keep";  // keep | f32 | f16 | bf16
  // The generation size: generation_inference.py's img_size (384 for both
  // official models; config.json does not record it).
  int64_t image_size = 384;
};

struct JanusConvertReport {
  JanusConfig config;
  int64_t tensors_written = 0;
  int64_t bytes_written = 0;
  int64_t tensors_dropped = 0;  // understanding path, text head (and an incomplete VQ encoder)
  // gen_vision_model's encoder half went into the bundle (files.vq_encoder), so
  // it can finish pictures; false when the folder lacks some of its tensors.
  bool encoder_kept = false;
  std::vector<std::string> weight_files;
};

// Throws FileError / FormatError / ModelMismatchError naming the file and the
// tensor or field; writes nothing until every tensor was found and checked.
JanusConvertReport convert_janus_checkpoint(const JanusConvertOptions& options,
                                            const std::function<void(double, const std::string&)>& progress = {});

// The tokenizer files a converted bundle carries (tokenizer.json is required).
std::vector<std::string> janus_tokenizer_file_names();

}  // namespace kvs::janus
