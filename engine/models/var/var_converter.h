#pragma once
// Official VAR checkpoints -> KV Studio bundle.
// Reads `var_d{16,20,24,30,36}.pth` (VAR.state_dict(), raw or under "model" /
// "module" / "state_dict") and `vae_ch160v4096z32.pth` (VQVAE.state_dict()) with
// our code-free torch.save reader, infers both architectures from tensor shapes
// (depth, width, heads from the per-head attention scale, shared AdaLN, the scale
// schedule from the position table; the VQVAE's decoder levels and phi sharing),
// checks every key and shape strictly, and writes "var." / "vae." tensors.
// Recomputed buffers (lvl_1L, attn_bias_for_masking, zero_k_bias,
// ema_vocab_hit_SV) and the VQVAE encoder / quant_conv are dropped and listed.
#include <functional>
#include <string>
#include <vector>

#include "engine/models/var/var_config.h"

namespace kvs::var {

struct VarConvertOptions {
  std::string checkpoint;  // var_d*.pth
  std::string tokenizer;   // vae_ch160v4096z32.pth
  std::string out_dir;
  std::string name;                    // default: checkpoint file stem
  std::vector<int64_t> patch_nums;     // empty: the official schedule whose token count fits pos_1LC
  int64_t num_heads = 0;               // 0: from scale_mul_1H11, else depth (official)
  double quant_resi = 0.5;             // not stored in the state dict; official 0.5
  std::string weights_dtype = "keep";  // keep | f32 | f16 | bf16
};

struct VarConvertReport {
  VarConfig var;
  VqvaeConfig vae;
  int64_t tensors_written = 0;
  int64_t bytes_written = 0;
  std::vector<std::string> dropped_keys;  // known-unused keys, with their "var." / "vae." origin
};

using VarConvertProgress = std::function<void(double fraction, const std::string& stage)>;

VarConvertReport convert_var_checkpoint(const VarConvertOptions& options, const VarConvertProgress& progress = {});

}  // namespace kvs::var
