#pragma once
// `kvstudio-cli convert --family lumina-mgpt`: the two downloads a Lumina-mGPT
// run needs -> one bundle.
//   --checkpoint DIR  the Hugging Face model folder (Alpha-VLLM/Lumina-mGPT-7B-768,
//                     -7B-512, -7B-1024, -34B-512, ...): config.json, the
//                     tokenizer files, model*.safetensors shards with their index
//                     (or pytorch_model*.bin);
//   --vqgan DIR       Meta's Chameleon tokenizer folder (ckpts/chameleon/tokenizer
//                     in the official layout): vqgan.yaml and vqgan.ckpt (and,
//                     when there, text_tokenizer.json, whose image-token names
//                     must be tokenizer.json's: the official code reads them there).
// The bundle keeps the language model (without the HF model's VQ encoder) and
// the VQGAN's decoding side, in the dtype asked for (keep: as stored; the
// released weights are bf16, ~14 GB for 7B). Shards are read through the
// memory map and written out tensor by tensor: a checkpoint is never held twice.
// A missing file is refused by name before anything is written.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/models/lumina/lumina_config.h"

namespace kvs::lumina {

struct LuminaConvertOptions {
  std::string checkpoint;  // the HF model folder
  std::string vqgan;       // the folder with vqgan.yaml and vqgan.ckpt
  std::string out_dir;
  std::string name;                    // default: the model folder's name
  std::string weights_dtype = "keep";  // keep | f32 | f16 | bf16
  // The resolution the checkpoint was trained at (the default image size); 0:
  // read from the folder's name (-512 / -768 / -1024), else 768.
  int64_t image_size = 0;
};

struct LuminaConvertReport {
  LuminaConfig config;
  int64_t tensors_written = 0;
  int64_t bytes_written = 0;
  int64_t tensors_dropped = 0;  // the HF model's VQ encoder, the VQGAN's encoder side
  std::vector<std::string> weight_files;
};

LuminaConvertReport convert_lumina_checkpoint(const LuminaConvertOptions& options,
                                              const std::function<void(double, const std::string&)>& progress = {});

}  // namespace kvs::lumina
