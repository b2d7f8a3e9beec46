#pragma once
// Architecture configuration of MAR (LTH14/mar models/mar.py: MAR, with the
// diffusion head of models/diffloss.py) and of its KL-16 VAE decoder
// (models/vae.py: AutoencoderKL / Decoder). Field names follow the upstream
// constructor arguments so configs read the same in both worlds.
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace kvs::mar {

// MAR(...) constructor arguments that change inference (dropouts, the training
// mask-ratio generator, label dropout, diffusion_batch_mul and grad_checkpointing
// do not; they are accepted in JSON and ignored).
struct MarConfig {
  int64_t img_size = 256;
  int64_t vae_stride = 16;
  int64_t patch_size = 1;
  int64_t encoder_embed_dim = 1024;
  int64_t encoder_depth = 16;
  int64_t encoder_num_heads = 16;
  int64_t decoder_embed_dim = 1024;
  int64_t decoder_depth = 16;
  int64_t decoder_num_heads = 16;
  double mlp_ratio = 4.0;
  double norm_eps = 1e-6;  // norm_layer = partial(nn.LayerNorm, eps=1e-6) in every official factory
  int64_t vae_embed_dim = 16;
  int64_t class_num = 1000;
  int64_t buffer_size = 64;   // class-embedding positions prepended to the sequence
  int64_t diffloss_d = 3;     // residual blocks of the diffusion head
  int64_t diffloss_w = 1024;  // its width
  // create_diffusion(timestep_respacing=...): "100", "25,25", "ddim50", ...
  std::string num_sampling_steps = "100";

  int64_t seq_h() const { return img_size / vae_stride / patch_size; }
  int64_t seq_w() const { return seq_h(); }
  int64_t seq_len() const { return seq_h() * seq_w(); }
  int64_t token_embed_dim() const { return vae_embed_dim * patch_size * patch_size; }
  int64_t encoder_mlp_hidden() const;  // timm Mlp: int(dim * mlp_ratio)
  int64_t decoder_mlp_hidden() const;
  int64_t head_out_channels() const { return 2 * token_embed_dim(); }  // eps + variance interpolation

  // Throws InvalidArgumentError naming the offending field.
  void validate() const;
};

// AutoencoderKL(embed_dim, ch_mult) with its Decoder's defaults; `ch` is kept as
// a field so that small decoders (conformance cases, demo models) fit the same code.
struct KlVaeConfig {
  int64_t embed_dim = 16;  // latent channels (= Decoder z_channels)
  int64_t ch = 128;
  std::vector<int64_t> ch_mult{1, 1, 2, 2, 4};
  int64_t num_res_blocks = 2;
  std::vector<int64_t> attn_resolutions;  // kl16: none (only the middle attention)
  int64_t resolution = 256;               // only decides where attn_resolutions apply
  int64_t out_ch = 3;
  // engine_mar.py decodes vae.decode(tokens / 0.2325): the latent scale the MAR
  // tokens were trained at (main_cache.py multiplies posterior samples by it).
  double latent_scale = 0.2325;

  int64_t upsampling() const { return int64_t{1} << (ch_mult.size() - 1); }
  void validate() const;
};

// Official sizes (models/mar.py mar_base / mar_large / mar_huge with the diffusion
// heads of the released checkpoints, README): "mar-B" (768 wide, 12+12 blocks,
// head 6 x 1024), "mar-L" (1024, 16+16, head 8 x 1280), "mar-H" (1280, 20+20,
// 16 heads, head 12 x 1536). Also accepts "mar_base", "MAR-B", "B", ...
MarConfig mar_preset(const std::string& name, int64_t num_classes = 1000);
std::vector<std::string> mar_preset_names();  // "mar-B", "mar-L", "mar-H"
// kl16.ckpt: AutoencoderKL(embed_dim=16, ch_mult=(1, 1, 2, 2, 4)), ch 128.
KlVaeConfig kl16_config();

// Upstream sampling settings for a preset (README evaluation commands): cfg
// 2.9 / 3.0 / 3.2 with the linear schedule, temperature 1.0. Returned as the
// bundle's "sampling_defaults" object.
nlohmann::json mar_sampling_defaults(const std::string& preset);

// JSON in upstream constructor spelling (unknown keys are rejected with their names).
MarConfig mar_config_from_json(const nlohmann::json& j);
nlohmann::json to_json(const MarConfig& c);
KlVaeConfig kl_vae_config_from_json(const nlohmann::json& j);
nlohmann::json to_json(const KlVaeConfig& c);

// MAR's token width must be the VAE's latent width; throws ModelMismatchError.
// (vae_stride need not equal the decoder's upsampling: the image is
// seq_h * patch_size * upsampling() pixels wide, as in the size-capped
// conformance cases whose 4x decoders decode a 16x16 grid to 64 px.)
void check_compatible(const MarConfig& mar, const KlVaeConfig& vae);

}  // namespace kvs::mar
