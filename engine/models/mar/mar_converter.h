#pragma once
// Official MAR checkpoints -> KV Studio bundle.
// Reads `checkpoint-last.pth` (main_mar.py save_model: {"model", "model_ema",
// "optimizer", "epoch", "scaler", "args"}; the EMA weights are what the official
// evaluation and demo use) and `kl16.ckpt` ({"model": AutoencoderKL.state_dict()})
// with our code-free torch.save reader, infers both architectures from tensor
// shapes (widths, depths, buffer, sequence length, head width/depth; the VAE
// decoder's levels), checks every key and shape strictly and writes "mar." /
// "vae." tensors. The VAE encoder, quant_conv and any loss.* parts are dropped
// and listed. The head count is not stored in a state dict: it comes from the
// official size table (width 768 -> 12, 1024 / 1280 -> 16) or --n-head.
#include <functional>
#include <string>
#include <vector>

#include "engine/models/mar/mar_config.h"

namespace kvs::mar {

struct MarConvertOptions {
  std::string checkpoint;  // checkpoint-last.pth
  std::string vae;         // kl16.ckpt
  std::string out_dir;
  std::string name;                        // default: the checkpoint's folder name (mar_base, ...)
  int64_t num_heads = 0;                   // 0: the official table
  int64_t vae_stride = 16;                 // MAR(vae_stride=...): 16 for kl16
  std::string num_sampling_steps = "100";  // the diffusion head's respacing (official evaluation: 100)
  bool use_ema = true;                     // "model_ema" (falls back to "model" when absent); false: "model"
  std::string weights_dtype = "keep";      // keep | f32 | f16 | bf16
};

struct MarConvertReport {
  MarConfig mar;
  KlVaeConfig vae;
  std::string source_key;  // which entry of the checkpoint was converted ("model_ema", "model", "" = top level)
  int64_t tensors_written = 0;
  int64_t bytes_written = 0;
  std::vector<std::string> dropped_keys;  // with their "vae." origin
  std::vector<std::string> warnings;
};

using MarConvertProgress = std::function<void(double fraction, const std::string& stage)>;

MarConvertReport convert_mar_checkpoint(const MarConvertOptions& options, const MarConvertProgress& progress = {});

}  // namespace kvs::mar
