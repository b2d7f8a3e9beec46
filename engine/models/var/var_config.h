#pragma once
// Architecture configuration of VAR (FoundationVision/VAR models/var.py: VAR) and
// of its multi-scale VQVAE (models/vqvae.py: VQVAE, models/quant.py:
// VectorQuantizer2, models/basic_vae.py: Decoder). Field names follow the
// upstream constructor arguments so configs read the same in both worlds.
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace kvs::var {

// VAR(...) constructor arguments that change inference (dropout rates, flash and
// fused kernels do not; cond_drop_rate only matters for training).
struct VarConfig {
  int64_t depth = 16;
  int64_t embed_dim = 1024;  // C (= D, the condition width)
  int64_t num_heads = 16;
  double mlp_ratio = 4.0;
  double norm_eps = 1e-6;
  bool shared_aln = false;     // d36: one shared AdaLN projection + per-block ada_gss
  bool attn_l2_norm = true;    // q/k L2-normalised, per-head learned scale, SDPA scale 1
  int64_t num_classes = 1000;  // the null (unconditional) class is num_classes
  int64_t vocab_size = 4096;   // V (from the VQVAE)
  int64_t cvae = 32;           // Cvae (the VQVAE's z_channels)
  std::vector<int64_t> patch_nums{1, 2, 3, 4, 5, 6, 8, 10, 13, 16};

  int64_t head_dim() const { return embed_dim / num_heads; }
  int64_t mlp_hidden() const;  // round(embed_dim * mlp_ratio)
  int64_t scales() const { return static_cast<int64_t>(patch_nums.size()); }
  int64_t scale_tokens(int64_t si) const { return patch_nums.at(si) * patch_nums.at(si); }
  int64_t scale_begin(int64_t si) const;  // flattened sequence index of the scale's first token
  int64_t total_tokens() const;           // L = sum pn^2
  int64_t first_l() const { return scale_tokens(0); }
  int64_t final_grid() const { return patch_nums.back(); }
  int64_t null_class() const { return num_classes; }
  // The SDPA scale: 1 with attn_l2_norm, else 0.25 / sqrt(head_dim).
  double attention_scale() const;
  int64_t parameter_count() const;

  // Throws InvalidArgumentError naming the offending field.
  void validate() const;
};

// VQVAE(...) constructor arguments (the decoder's ddconfig is hard-coded upstream:
// ch_mult (1,1,2,2,4), 2 res blocks, self-attention; kept as fields so that the
// size-capped conformance decoders and small demo models fit the same code).
struct VqvaeConfig {
  int64_t vocab_size = 4096;
  int64_t z_channels = 32;  // Cvae
  int64_t ch = 160;
  std::vector<int64_t> ch_mult{1, 1, 2, 2, 4};
  int64_t num_res_blocks = 2;
  bool using_sa = true;
  bool using_mid_sa = true;
  int64_t in_channels = 3;       // image channels (the decoder's output)
  int64_t quant_conv_ks = 3;     // post_quant_conv kernel size
  double quant_resi = 0.5;       // phi(h) = (1 - |r|) h + |r| conv(h); |r| <= 1e-6: identity
  int64_t share_quant_resi = 4;  // 0: one phi per scale, 1: one shared phi, K > 1: K partially shared
  int64_t default_qresi_counts = 0;
  std::vector<int64_t> v_patch_nums{1, 2, 3, 4, 5, 6, 8, 10, 13, 16};

  int64_t downsample() const { return int64_t{1} << (ch_mult.size() - 1); }
  bool phi_is_identity() const;
  // Number of phi convolutions stored (0 when phi is the identity).
  int64_t phi_count() const;
  // Which phi scale si (of v_patch_nums.size() scales) uses: PhiPartiallyShared /
  // PhiNonShared pick argmin |ticks - si/(SN-1)| over float64 numpy.linspace ticks,
  // reproduced here operation by operation (for the official 10-scale schedule
  // and K = 4 this is [0,0,1,1,1,2,2,3,3,3]; si = 2 and 7 are float64 ties).
  int64_t phi_index(int64_t si) const;
  std::vector<int64_t> phi_schedule() const;  // phi_index(si) for every scale
  std::vector<double> phi_ticks() const;      // the float64 ticks (empty for share_quant_resi == 1)
  int64_t image_size() const { return v_patch_nums.back() * downsample(); }

  void validate() const;
};

// The official scale schedules (utils/arg_util.py --pn): 256 -> 1..16 (10 scales),
// 512 -> 1..32 (10 scales), 1024 -> 1..64 (14 scales).
std::vector<int64_t> patch_nums_for_resolution(int64_t image_size);

// Official sizes (models/__init__.py build_vae_var: width 64*depth, heads = depth):
// "d16", "d20", "d24", "d30" (256 px) and "d36" (512 px, shared AdaLN). Also
// accepts "var-d16" etc. image_size 0 = the model's official resolution.
VarConfig var_preset(const std::string& name, int64_t image_size = 0, int64_t num_classes = 1000);
std::vector<std::string> var_preset_names();
// vae_ch160v4096z32.pth: VQVAE(vocab_size=4096, z_channels=32, ch=160) for the schedule.
VqvaeConfig vqvae_preset(const std::vector<int64_t>& patch_nums);

// JSON in upstream constructor spelling (unknown keys are rejected with their names).
VarConfig var_config_from_json(const nlohmann::json& j);
nlohmann::json to_json(const VarConfig& c);
VqvaeConfig vqvae_config_from_json(const nlohmann::json& j);
nlohmann::json to_json(const VqvaeConfig& c);

// The two halves must agree (vocabulary, Cvae, scale schedule); throws ModelMismatchError.
void check_compatible(const VarConfig& var, const VqvaeConfig& vae);

}  // namespace kvs::var
