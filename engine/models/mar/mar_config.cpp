#include "engine/models/mar/mar_config.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <set>

#include "engine/core/errors.h"

namespace kvs::mar {
namespace {

void require(bool ok, const std::string& message) {
  if (!ok) throw InvalidArgumentError(message);
}

// Constructor arguments that only matter for training.
const std::set<std::string> kIgnoredMarFields = {"mask_ratio_min", "label_drop_prob",     "attn_dropout",
                                                 "proj_dropout",   "diffusion_batch_mul", "grad_checkpointing"};
const std::set<std::string> kIgnoredVaeFields = {"use_variational", "ckpt_path",   "dropout",     "resamp_with_conv",
                                                 "double_z",        "in_channels", "give_pre_end"};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// "mar-B", "mar_base", "MAR-b", "base", "b" -> "b" (or "" when unknown).
std::string size_letter(const std::string& name) {
  std::string n = lower(name);
  for (const char* prefix : {"mar-", "mar_", "mar"})
    if (n.rfind(prefix, 0) == 0) {
      n = n.substr(std::string(prefix).size());
      break;
    }
  if (n == "b" || n == "base") return "b";
  if (n == "l" || n == "large") return "l";
  if (n == "h" || n == "huge") return "h";
  return "";
}

}  // namespace

int64_t MarConfig::encoder_mlp_hidden() const {
  return static_cast<int64_t>(static_cast<double>(encoder_embed_dim) * mlp_ratio);
}

int64_t MarConfig::decoder_mlp_hidden() const {
  return static_cast<int64_t>(static_cast<double>(decoder_embed_dim) * mlp_ratio);
}

void MarConfig::validate() const {
  require(img_size > 0 && vae_stride > 0 && patch_size > 0,
          "mar config: img_size, vae_stride and patch_size must be positive");
  require(img_size % (vae_stride * patch_size) == 0, "mar config: img_size " + std::to_string(img_size) +
                                                         " is not a multiple of vae_stride * patch_size (" +
                                                         std::to_string(vae_stride * patch_size) + ")");
  require(encoder_embed_dim > 0 && encoder_depth > 0 && encoder_num_heads > 0,
          "mar config: encoder_embed_dim, encoder_depth and encoder_num_heads must be positive");
  require(decoder_embed_dim > 0 && decoder_depth > 0 && decoder_num_heads > 0,
          "mar config: decoder_embed_dim, decoder_depth and decoder_num_heads must be positive");
  require(encoder_embed_dim % encoder_num_heads == 0,
          "mar config: encoder_embed_dim " + std::to_string(encoder_embed_dim) +
              " is not divisible by encoder_num_heads " + std::to_string(encoder_num_heads));
  require(decoder_embed_dim % decoder_num_heads == 0,
          "mar config: decoder_embed_dim " + std::to_string(decoder_embed_dim) +
              " is not divisible by decoder_num_heads " + std::to_string(decoder_num_heads));
  require(mlp_ratio > 0 && encoder_mlp_hidden() > 0 && decoder_mlp_hidden() > 0,
          "mar config: mlp_ratio must be positive");
  require(norm_eps > 0, "mar config: norm_eps must be positive");
  require(vae_embed_dim > 0, "mar config: vae_embed_dim must be positive");
  require(class_num > 0, "mar config: class_num must be positive");
  require(buffer_size >= 0, "mar config: buffer_size must be >= 0");
  require(diffloss_d >= 0 && diffloss_w > 0, "mar config: diffloss_d must be >= 0 and diffloss_w positive");
  require(!num_sampling_steps.empty(), "mar config: num_sampling_steps must not be empty");
}

void KlVaeConfig::validate() const {
  require(embed_dim > 0, "vae config: embed_dim must be positive");
  require(!ch_mult.empty(), "vae config: ch_mult must not be empty");
  require(ch > 0 && num_res_blocks >= 0, "vae config: ch must be positive and num_res_blocks >= 0");
  for (int64_t m : ch_mult)
    require(m > 0 && (ch * m) % 32 == 0,
            "vae config: every decoder channel count ch*ch_mult must be a positive multiple of 32 (GroupNorm(32))");
  require(out_ch > 0, "vae config: out_ch must be positive");
  require(resolution > 0, "vae config: resolution must be positive");
  require(latent_scale > 0, "vae config: latent_scale must be positive");
}

MarConfig mar_preset(const std::string& name, int64_t num_classes) {
  const std::string size = size_letter(name);
  MarConfig c;
  if (size == "b") {
    c.encoder_embed_dim = c.decoder_embed_dim = 768;
    c.encoder_depth = c.decoder_depth = 12;
    c.encoder_num_heads = c.decoder_num_heads = 12;
    c.diffloss_d = 6;
    c.diffloss_w = 1024;
  } else if (size == "l") {
    c.encoder_embed_dim = c.decoder_embed_dim = 1024;
    c.encoder_depth = c.decoder_depth = 16;
    c.encoder_num_heads = c.decoder_num_heads = 16;
    c.diffloss_d = 8;
    c.diffloss_w = 1280;
  } else if (size == "h") {
    c.encoder_embed_dim = c.decoder_embed_dim = 1280;
    c.encoder_depth = c.decoder_depth = 20;
    c.encoder_num_heads = c.decoder_num_heads = 16;
    c.diffloss_d = 12;
    c.diffloss_w = 1536;
  } else {
    throw InvalidArgumentError("unknown MAR size '" + name + "' (known: mar-B, mar-L, mar-H)");
  }
  c.class_num = num_classes;
  c.validate();
  return c;
}

std::vector<std::string> mar_preset_names() { return {"mar-B", "mar-L", "mar-H"}; }

KlVaeConfig kl16_config() { return KlVaeConfig{}; }

nlohmann::json mar_sampling_defaults(const std::string& preset) {
  const std::string size = size_letter(preset);
  const double cfg = size == "l" ? 3.0 : size == "h" ? 3.2 : 2.9;
  // README evaluates with 256 decoding steps; 64 is its suggested faster setting.
  return {{"cfg_scale", cfg}, {"cfg_schedule", "linear"}, {"temperature", 1.0}, {"steps", 64}};
}

MarConfig mar_config_from_json(const nlohmann::json& j) {
  require(j.is_object(), "mar config must be a JSON object");
  MarConfig c;
  try {
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string& k = it.key();
      const auto& v = it.value();
      if (k == "img_size") c.img_size = v.get<int64_t>();
      else if (k == "vae_stride") c.vae_stride = v.get<int64_t>();
      else if (k == "patch_size") c.patch_size = v.get<int64_t>();
      else if (k == "encoder_embed_dim") c.encoder_embed_dim = v.get<int64_t>();
      else if (k == "encoder_depth") c.encoder_depth = v.get<int64_t>();
      else if (k == "encoder_num_heads") c.encoder_num_heads = v.get<int64_t>();
      else if (k == "decoder_embed_dim") c.decoder_embed_dim = v.get<int64_t>();
      else if (k == "decoder_depth") c.decoder_depth = v.get<int64_t>();
      else if (k == "decoder_num_heads") c.decoder_num_heads = v.get<int64_t>();
      else if (k == "mlp_ratio") c.mlp_ratio = v.get<double>();
      else if (k == "norm_eps") c.norm_eps = v.get<double>();
      else if (k == "vae_embed_dim") c.vae_embed_dim = v.get<int64_t>();
      else if (k == "class_num") c.class_num = v.get<int64_t>();
      else if (k == "buffer_size") c.buffer_size = v.get<int64_t>();
      else if (k == "diffloss_d") c.diffloss_d = v.get<int64_t>();
      else if (k == "diffloss_w") c.diffloss_w = v.get<int64_t>();
      else if (k == "num_sampling_steps")
        c.num_sampling_steps = v.is_number_integer() ? std::to_string(v.get<int64_t>()) : v.get<std::string>();
      else if (kIgnoredMarFields.count(k) == 0) throw InvalidArgumentError("mar config: unknown field '" + k + "'");
    }
  } catch (const nlohmann::json::exception& e) {
    throw InvalidArgumentError(std::string("mar config: wrong value type (") + e.what() + ")");
  }
  c.validate();
  return c;
}

nlohmann::json to_json(const MarConfig& c) {
  return {{"img_size", c.img_size},
          {"vae_stride", c.vae_stride},
          {"patch_size", c.patch_size},
          {"encoder_embed_dim", c.encoder_embed_dim},
          {"encoder_depth", c.encoder_depth},
          {"encoder_num_heads", c.encoder_num_heads},
          {"decoder_embed_dim", c.decoder_embed_dim},
          {"decoder_depth", c.decoder_depth},
          {"decoder_num_heads", c.decoder_num_heads},
          {"mlp_ratio", c.mlp_ratio},
          {"norm_eps", c.norm_eps},
          {"vae_embed_dim", c.vae_embed_dim},
          {"class_num", c.class_num},
          {"buffer_size", c.buffer_size},
          {"diffloss_d", c.diffloss_d},
          {"diffloss_w", c.diffloss_w},
          {"num_sampling_steps", c.num_sampling_steps}};
}

KlVaeConfig kl_vae_config_from_json(const nlohmann::json& j) {
  require(j.is_object(), "vae config must be a JSON object");
  KlVaeConfig c;
  try {
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string& k = it.key();
      const auto& v = it.value();
      if (k == "embed_dim" || k == "z_channels") c.embed_dim = v.get<int64_t>();
      else if (k == "ch") c.ch = v.get<int64_t>();
      else if (k == "ch_mult") c.ch_mult = v.get<std::vector<int64_t>>();
      else if (k == "num_res_blocks") c.num_res_blocks = v.get<int64_t>();
      else if (k == "attn_resolutions") c.attn_resolutions = v.get<std::vector<int64_t>>();
      else if (k == "resolution") c.resolution = v.get<int64_t>();
      else if (k == "out_ch") c.out_ch = v.get<int64_t>();
      else if (k == "latent_scale") c.latent_scale = v.get<double>();
      else if (kIgnoredVaeFields.count(k) == 0) throw InvalidArgumentError("vae config: unknown field '" + k + "'");
    }
  } catch (const nlohmann::json::exception& e) {
    throw InvalidArgumentError(std::string("vae config: wrong value type (") + e.what() + ")");
  }
  c.validate();
  return c;
}

nlohmann::json to_json(const KlVaeConfig& c) {
  return {{"embed_dim", c.embed_dim},
          {"ch", c.ch},
          {"ch_mult", c.ch_mult},
          {"num_res_blocks", c.num_res_blocks},
          {"attn_resolutions", c.attn_resolutions},
          {"resolution", c.resolution},
          {"out_ch", c.out_ch},
          {"latent_scale", c.latent_scale}};
}

void check_compatible(const MarConfig& mar, const KlVaeConfig& vae) {
  if (mar.vae_embed_dim != vae.embed_dim)
    throw ModelMismatchError("MAR vae_embed_dim " + std::to_string(mar.vae_embed_dim) +
                             " does not match the VAE embed_dim " + std::to_string(vae.embed_dim));
}

}  // namespace kvs::mar
