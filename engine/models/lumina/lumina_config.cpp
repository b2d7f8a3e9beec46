#include "engine/models/lumina/lumina_config.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <regex>

#include "engine/core/errors.h"

namespace kvs::lumina {
namespace {

void require(bool ok, const std::string& message) {
  if (!ok) throw InvalidArgumentError(message);
}

std::vector<int64_t> int_list(const nlohmann::json& v) { return v.get<std::vector<int64_t>>(); }

}  // namespace

int64_t ChameleonConfig::parameter_count() const {
  const int64_t d = hidden_size, kv = num_key_value_heads * head_dim();
  const int64_t qk_norm = 2 * 2 * model_parallel_size * head_dim();
  const int64_t per_layer = d * d * 2 + d * kv * 2 + 3 * d * intermediate_size + 2 * d + qk_norm;
  return 2 * vocab_size * d + num_hidden_layers * per_layer + d;  // embeddings and lm_head are separate
}

void LuminaConfig::validate() const {
  const ChameleonConfig& l = lm;
  require(l.hidden_size > 0 && l.num_hidden_layers > 0 && l.num_attention_heads > 0 && l.intermediate_size > 0,
          "lumina config: hidden_size, num_hidden_layers, num_attention_heads and intermediate_size must be positive");
  require(l.hidden_size % l.num_attention_heads == 0, "lumina config: hidden_size " + std::to_string(l.hidden_size) +
                                                          " is not divisible by num_attention_heads " +
                                                          std::to_string(l.num_attention_heads));
  require(l.head_dim() % 2 == 0, "lumina config: head_dim must be even (RoPE pairs element j with j + head_dim/2)");
  require(l.num_key_value_heads > 0 && l.num_attention_heads % l.num_key_value_heads == 0,
          "lumina config: num_attention_heads " + std::to_string(l.num_attention_heads) +
              " is not a multiple of num_key_value_heads " + std::to_string(l.num_key_value_heads));
  require(l.model_parallel_size > 0 && l.num_attention_heads % l.model_parallel_size == 0 &&
              l.num_key_value_heads % l.model_parallel_size == 0,
          "lumina config: model_parallel_size " + std::to_string(l.model_parallel_size) +
              " must divide the query and key/value head counts (the qk-norm rows are shared by groups of heads)");
  require(l.rope_theta > 0 && l.rms_norm_eps > 0, "lumina config: rope_theta and rms_norm_eps must be positive");
  const VqganConfig& v = vqgan;
  require(v.embed_dim > 0 && v.z_channels > 0 && v.ch > 0 && v.num_res_blocks >= 0 && !v.ch_mult.empty() &&
              v.out_ch > 0,
          "lumina config: the VQGAN's embed_dim, z_channels, ch, ch_mult and out_ch must be positive");
  require(std::all_of(v.ch_mult.begin(), v.ch_mult.end(), [](int64_t m) { return m > 0; }),
          "lumina config: the VQGAN's ch_mult entries must be positive");
  require(v.n_embed == 8192, "lumina config: the VQGAN codebook has " + std::to_string(v.n_embed) +
                                 " codes; Chameleon's image vocabulary is 8192 tokens (ids 4..8195)");
  const int64_t highest_id = std::max({ids.grid_base + 64, ids.separator, ids.end_of_line, ids.begin_of_image});
  require(l.vocab_size > highest_id, "lumina config: vocab_size " + std::to_string(l.vocab_size) +
                                         " does not hold Chameleon's image and layout tokens (ids up to " +
                                         std::to_string(highest_id) + ")");
  require(image_size > 0 && image_size % 32 == 0,
          "lumina config: image_size " + std::to_string(image_size) + " is not a positive multiple of 32");
}

std::vector<LuminaImageSize> lumina_resolutions(int64_t base_size) {
  require(base_size >= 32 && base_size % 32 == 0,
          "lumina: base size " + std::to_string(base_size) + " is not a positive multiple of 32");
  const int64_t patches = (base_size / 32) * (base_size / 32);
  std::vector<LuminaImageSize> sizes;
  int64_t wp = patches, hp = 1;
  while (wp > 0) {
    if (std::max(wp, hp) <= 4 * std::min(wp, hp)) sizes.push_back({wp * 32, hp * 32});
    if ((hp + 1) * wp <= patches) ++hp;
    else --wp;
  }
  return sizes;
}

LuminaImageSize parse_lumina_image_size(const std::string& text) {
  std::smatch m;
  static const std::regex pattern(R"(\s*(\d{1,5})\s*[xX]\s*(\d{1,5})\s*)");
  if (!std::regex_match(text, m, pattern))
    throw InvalidArgumentError("image size '" + text + "' is not WIDTHxHEIGHT in pixels (e.g. 768x768)");
  LuminaImageSize size{std::stoll(m[1]), std::stoll(m[2])};
  if (size.width <= 0 || size.height <= 0 || size.width % 32 != 0 || size.height % 32 != 0)
    throw InvalidArgumentError("image size " + text +
                               ": Lumina-mGPT writes images in 32-pixel grid units; both sides must be positive "
                               "multiples of 32");
  return size;
}

LuminaConfig lumina_preset(const std::string& name) {
  LuminaConfig c;
  if (name == "lumina-mgpt-7b") {
    // The defaults: Chameleon-7B.
  } else if (name == "lumina-mgpt-34b") {
    c.lm.hidden_size = 8192;
    c.lm.intermediate_size = 22016;
    c.lm.num_hidden_layers = 48;
    c.lm.num_attention_heads = 64;
    c.lm.num_key_value_heads = 8;
    c.lm.model_parallel_size = 8;
    c.lm.swin_norm = true;
  } else {
    throw InvalidArgumentError("unknown Lumina-mGPT size '" + name + "' (known: lumina-mgpt-7b, lumina-mgpt-34b)");
  }
  c.validate();
  return c;
}

std::vector<std::string> lumina_preset_names() { return {"lumina-mgpt-7b", "lumina-mgpt-34b"}; }

ChameleonConfig chameleon_config_from_hf(const nlohmann::json& j) {
  auto fail = [](const std::string& what) { throw FormatError("config.json: " + what); };
  if (!j.is_object()) fail("not a JSON object");
  ChameleonConfig c;
  try {
    const std::string type = j.value("model_type", std::string("chameleon"));
    if (type != "chameleon" && type != "xllmx_chameleon")
      fail("model_type " + j.at("model_type").dump() + " is not Chameleon (Lumina-mGPT's language model)");
    // ChameleonConfig's own defaults for fields a file leaves out.
    c.vocab_size = j.value("vocab_size", c.vocab_size);
    c.hidden_size = j.value("hidden_size", c.hidden_size);
    c.intermediate_size = j.value("intermediate_size", c.intermediate_size);
    c.num_hidden_layers = j.value("num_hidden_layers", c.num_hidden_layers);
    c.num_attention_heads = j.value("num_attention_heads", c.num_attention_heads);
    // ChameleonConfig's own default is 32 whatever the head count.
    c.num_key_value_heads = j.value("num_key_value_heads", int64_t{32});
    if (j.contains("num_key_value_heads") && j.at("num_key_value_heads").is_null())
      c.num_key_value_heads = c.num_attention_heads;
    c.max_position_embeddings = j.value("max_position_embeddings", c.max_position_embeddings);
    c.rms_norm_eps = j.value("rms_norm_eps", c.rms_norm_eps);
    c.rope_theta = j.value("rope_theta", c.rope_theta);
    c.model_parallel_size = j.value("model_parallel_size", c.model_parallel_size);
    c.swin_norm = j.value("swin_norm", c.swin_norm);
    if (j.contains("rope_scaling") && !j.at("rope_scaling").is_null())
      fail("rope_scaling is set; Lumina-mGPT uses plain RoPE and scaled RoPE is not supported");
    if (j.value("hidden_act", std::string("silu")) != "silu") fail("hidden_act must be silu (Chameleon's SwiGLU)");
    if (j.value("attention_bias", false) || j.value("mlp_bias", false))
      fail("attention or MLP biases are not part of Chameleon's language model");
    // With mask_image_logits every image logit is set to the float minimum and
    // image sampling degenerates to uniform: no released checkpoint sets it.
    // ChameleonConfig defaults it to true: a file must say false.
    if (j.value("mask_image_logits", true))
      fail(
          "mask_image_logits is true or missing (ChameleonConfig's default is true): every image logit would be "
          "masked (the released Lumina-mGPT checkpoints set it to false)");
  } catch (const nlohmann::json::exception& e) {
    fail(std::string("wrong value type (") + e.what() + ")");
  }
  return c;
}

VqganConfig vqgan_config_from_params(const nlohmann::json& params) {
  auto fail = [](const std::string& what) { throw FormatError("vqgan.yaml: " + what); };
  VqganConfig c;
  try {
    if (!params.is_object() || !params.contains("ddconfig")) fail("no model.params.ddconfig");
    c.embed_dim = params.at("embed_dim").get<int64_t>();
    c.n_embed = params.at("n_embed").get<int64_t>();
    const nlohmann::json& dd = params.at("ddconfig");
    if (dd.value("double_z", false)) fail("ddconfig.double_z is true; Chameleon's VQGAN has a single z");
    // The decoder variants vqgan.py builds from these; Chameleon's release uses none.
    if (dd.value("attn_type", std::string("vanilla")) != "vanilla")
      fail("ddconfig.attn_type " + dd.at("attn_type").dump() + " is not vanilla attention");
    for (const char* flag : {"tanh_out", "give_pre_end", "use_linear_attn"})
      if (dd.value(flag, false)) fail(std::string("ddconfig.") + flag + " is set; Chameleon's decoder does not use it");
    if (!dd.value("resamp_with_conv", true))
      fail("ddconfig.resamp_with_conv is false; Chameleon's decoder upsamples with a convolution");
    if (params.contains("remap") && !params.at("remap").is_null())
      fail("params.remap is set; Chameleon's codebook is used without a remap");
    c.z_channels = dd.at("z_channels").get<int64_t>();
    c.ch = dd.at("ch").get<int64_t>();
    c.ch_mult = int_list(dd.at("ch_mult"));
    c.num_res_blocks = dd.at("num_res_blocks").get<int64_t>();
    c.attn_resolutions = int_list(dd.value("attn_resolutions", nlohmann::json::array()));
    c.resolution = dd.at("resolution").get<int64_t>();
    c.out_ch = dd.value("out_ch", c.out_ch);
  } catch (const nlohmann::json::exception& e) {
    fail(std::string("missing or wrong field (") + e.what() + ")");
  }
  return c;
}

LuminaConfig lumina_config_from_json(const nlohmann::json& a, const nlohmann::json& t) {
  require(a.is_object() && t.is_object(), "lumina config: architecture.chameleon and tokenizer must be JSON objects");
  LuminaConfig c;
  try {
    for (auto it = a.begin(); it != a.end(); ++it) {
      const std::string& k = it.key();
      const auto& v = it.value();
      ChameleonConfig& l = c.lm;
      if (k == "vocab_size") l.vocab_size = v.get<int64_t>();
      else if (k == "hidden_size") l.hidden_size = v.get<int64_t>();
      else if (k == "intermediate_size") l.intermediate_size = v.get<int64_t>();
      else if (k == "num_hidden_layers") l.num_hidden_layers = v.get<int64_t>();
      else if (k == "num_attention_heads") l.num_attention_heads = v.get<int64_t>();
      else if (k == "num_key_value_heads") l.num_key_value_heads = v.get<int64_t>();
      else if (k == "max_position_embeddings") l.max_position_embeddings = v.get<int64_t>();
      else if (k == "model_parallel_size") l.model_parallel_size = v.get<int64_t>();
      else if (k == "rms_norm_eps") l.rms_norm_eps = v.get<double>();
      else if (k == "rope_theta") l.rope_theta = v.get<double>();
      else if (k == "swin_norm") l.swin_norm = v.get<bool>();
      else if (k == "image_size") c.image_size = v.get<int64_t>();
      else throw InvalidArgumentError("lumina config: unknown field '" + k + "'");
    }
    for (auto it = t.begin(); it != t.end(); ++it) {
      const std::string& k = it.key();
      const auto& v = it.value();
      VqganConfig& q = c.vqgan;
      if (k == "embed_dim") q.embed_dim = v.get<int64_t>();
      else if (k == "n_embed") q.n_embed = v.get<int64_t>();
      else if (k == "z_channels") q.z_channels = v.get<int64_t>();
      else if (k == "ch") q.ch = v.get<int64_t>();
      else if (k == "ch_mult") q.ch_mult = int_list(v);
      else if (k == "num_res_blocks") q.num_res_blocks = v.get<int64_t>();
      else if (k == "attn_resolutions") q.attn_resolutions = int_list(v);
      else if (k == "resolution") q.resolution = v.get<int64_t>();
      else if (k == "out_ch") q.out_ch = v.get<int64_t>();
      else throw InvalidArgumentError("lumina tokenizer config: unknown field '" + k + "'");
    }
  } catch (const nlohmann::json::exception& e) {
    throw InvalidArgumentError(std::string("lumina config: wrong value type (") + e.what() + ")");
  }
  c.validate();
  return c;
}

nlohmann::json to_json(const ChameleonConfig& l, int64_t image_size) {
  return {{"vocab_size", l.vocab_size},
          {"hidden_size", l.hidden_size},
          {"intermediate_size", l.intermediate_size},
          {"num_hidden_layers", l.num_hidden_layers},
          {"num_attention_heads", l.num_attention_heads},
          {"num_key_value_heads", l.num_key_value_heads},
          {"max_position_embeddings", l.max_position_embeddings},
          {"model_parallel_size", l.model_parallel_size},
          {"rms_norm_eps", l.rms_norm_eps},
          {"rope_theta", l.rope_theta},
          {"swin_norm", l.swin_norm},
          {"image_size", image_size}};
}

nlohmann::json to_json(const VqganConfig& q) {
  return {{"embed_dim", q.embed_dim},
          {"n_embed", q.n_embed},
          {"z_channels", q.z_channels},
          {"ch", q.ch},
          {"ch_mult", q.ch_mult},
          {"num_res_blocks", q.num_res_blocks},
          {"attn_resolutions", q.attn_resolutions},
          {"resolution", q.resolution},
          {"out_ch", q.out_ch}};
}

}  // namespace kvs::lumina
