#pragma once
// Architecture of Lumina-mGPT's text-to-image path (Alpha-VLLM/Lumina-mGPT,
// lumina_mgpt/model/chameleon: a vendored, modified transformers Chameleon): the
// Chameleon decoder-only language model, the Chameleon VQGAN that decodes its
// image tokens, and the token ids its image layout is written with. Field names
// follow the official config.json and vqgan.yaml, so a converted folder reads
// the same in both worlds.
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kvs::lumina {

// ChameleonConfig, the fields generation reads. Defaults: Lumina-mGPT-7B
// (Chameleon-7B's sizes).
struct ChameleonConfig {
  int64_t vocab_size = 65536;
  int64_t hidden_size = 4096;
  int64_t intermediate_size = 11008;
  int64_t num_hidden_layers = 32;
  int64_t num_attention_heads = 32;
  int64_t num_key_value_heads = 32;
  int64_t max_position_embeddings = 4096;
  // qk-norm parameters are [model_parallel_size, head_dim]: head h uses row
  // h / (heads / model_parallel_size).
  int64_t model_parallel_size = 1;
  double rms_norm_eps = 1e-5;
  double rope_theta = 10000.0;
  bool swin_norm = false;  // 34B: norms after attention and MLP instead of before

  int64_t head_dim() const { return hidden_size / num_attention_heads; }
  int64_t parameter_count() const;
};

// The Chameleon VQGAN (vqgan.yaml model.params): an 8192-code codebook of
// embed_dim vectors and the taming decoder. Defaults: Chameleon's release.
struct VqganConfig {
  int64_t embed_dim = 256;
  int64_t n_embed = 8192;
  int64_t z_channels = 256;
  int64_t ch = 128;
  std::vector<int64_t> ch_mult{1, 1, 2, 2, 4};
  int64_t num_res_blocks = 2;
  std::vector<int64_t> attn_resolutions;
  int64_t resolution = 512;  // only decides where attn_resolutions apply
  int64_t out_ch = 3;

  int64_t upsampling() const { return int64_t{1} << (ch_mult.size() - 1); }
};

// Token ids of Chameleon's vocabulary that the image layout uses (the official
// code hard-codes them; the loader checks their names in the tokenizer).
struct LuminaTokenIds {
  int64_t bos = 0;                // <s>, before the prompt
  int64_t first_image = 4;        // 8192 image tokens (IMGIMG...Z names) from here
  int64_t end_of_image = 8196;    // <eoss>
  int64_t begin_of_image = 8197;  // <racm3:break>
  int64_t separator = 8710;       // <reserved08706>: ends the prompt, and generation
  int64_t end_of_line = 8803;     // <reserved08799>: after every image row
  int64_t grid_base = 8804;       // <reserved{8800+n}> = grid_base + n: n = pixels / 32
};

struct LuminaConfig {
  ChameleonConfig lm;
  VqganConfig vqgan;
  LuminaTokenIds ids;
  // The resolution the checkpoint was trained at (7B-512 / 768 / 1024): the
  // default image size and the base of the sizes offered (lumina_resolutions).
  int64_t image_size = 768;

  int64_t image_tokens_in_vocabulary() const { return vqgan.n_embed; }
  // Throws InvalidArgumentError naming the offending field.
  void validate() const;
};

// An image size as the prompt states it (pixels, width first in the text) and
// the token grid the model writes for it: one grid unit = 32 px = 2 tokens of
// 16 px each. What the decoder returns is tokens x vqgan.upsampling() pixels
// (the released VQGAN: x16, the prompt's size).
struct LuminaImageSize {
  int64_t width = 768, height = 768;  // pixels named in the prompt, multiples of 32
  int64_t grid_width() const { return width / 32; }
  int64_t grid_height() const { return height / 32; }
  int64_t token_width() const { return 2 * grid_width(); }    // W
  int64_t token_height() const { return 2 * grid_height(); }  // H
  int64_t line_tokens() const { return token_width() + 1; }   // W image tokens + end of line
  int64_t body_tokens() const { return token_height() * line_tokens(); }
};

// The official size list (item_processor.py generate_crop_size_list((base/32)^2,
// 32)): every (width, height) in 32 px units whose area is at most (base/32)^2
// and whose sides differ by at most 4x, the tallest for each width, widest first.
std::vector<LuminaImageSize> lumina_resolutions(int64_t base_size);
// "768x768", "1536x384" -> a size; InvalidArgumentError unless both are positive multiples of 32.
LuminaImageSize parse_lumina_image_size(const std::string& text);

// Official sizes: "lumina-mgpt-7b" (Chameleon-7B: 4096 x 32 layers, 32 heads)
// and "lumina-mgpt-34b" (8192 x 48, 64 heads, swin_norm, model_parallel_size 8),
// each with Chameleon's VQGAN, at 768 px.
LuminaConfig lumina_preset(const std::string& name);
std::vector<std::string> lumina_preset_names();

// The official config.json (ChameleonConfig as save_pretrained writes it) -> the
// language model's config. Refuses what the port does not run (scaled RoPE,
// biases, mask_image_logits = true) with FormatError naming the field.
ChameleonConfig chameleon_config_from_hf(const nlohmann::json& config_json);
// vqgan.yaml's model.params as JSON (embed_dim, n_embed, ddconfig{...}).
VqganConfig vqgan_config_from_params(const nlohmann::json& params);

// Bundle model.json sections: "architecture": {"chameleon": ...} and "tokenizer";
// unknown keys are refused with their names.
LuminaConfig lumina_config_from_json(const nlohmann::json& architecture, const nlohmann::json& tokenizer);
nlohmann::json to_json(const ChameleonConfig& c, int64_t image_size);
nlohmann::json to_json(const VqganConfig& c);

}  // namespace kvs::lumina
