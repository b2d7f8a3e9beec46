#include "engine/models/blocks/vq_config.h"

#include <nlohmann/json.hpp>

#include <set>

#include "engine/core/errors.h"

namespace kvs::vq {
namespace {

void require(bool ok, const std::string& message) {
  if (!ok) throw InvalidArgumentError(message);
}

}  // namespace

void VqConfig::validate() const {
  require(codebook_size > 0 && codebook_embed_dim > 0,
          "vq config: codebook_size and codebook_embed_dim must be positive");
  require(!decoder_ch_mult.empty(), "vq config: decoder_ch_mult must not be empty");
  require(ch > 0 && z_channels > 0 && num_res_blocks >= 0, "vq config: ch, z_channels must be positive");
  for (int64_t m : decoder_ch_mult) {
    require(m > 0 && (ch * m) % 32 == 0,
            "vq config: every decoder channel count ch*ch_mult must be a positive multiple of 32 (GroupNorm(32))");
  }
}

VqConfig vq_preset(const std::string& name, int64_t codebook_size, int64_t codebook_embed_dim) {
  VqConfig c;
  c.codebook_size = codebook_size;
  c.codebook_embed_dim = codebook_embed_dim;
  if (name == "VQ-16") c.decoder_ch_mult = {1, 1, 2, 2, 4};
  else if (name == "VQ-8") c.decoder_ch_mult = {1, 2, 2, 4};
  else throw InvalidArgumentError("unknown LlamaGen tokenizer '" + name + "' (known: VQ-16, VQ-8)");
  return c;
}

VqConfig vq_config_from_json(const nlohmann::json& j) {
  require(j.is_object(), "vq config must be a JSON object");
  VqConfig c;
  static const std::set<std::string> kIgnored = {"codebook_show_usage", "commit_loss_beta", "entropy_loss_ratio",
                                                 "encoder_ch_mult", "dropout_p"};
  try {
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string& k = it.key();
      const auto& v = it.value();
      if (k == "codebook_size") c.codebook_size = v.get<int64_t>();
      else if (k == "codebook_embed_dim") c.codebook_embed_dim = v.get<int64_t>();
      else if (k == "codebook_l2_norm") c.codebook_l2_norm = v.get<bool>();
      else if (k == "z_channels") c.z_channels = v.get<int64_t>();
      else if (k == "ch") c.ch = v.get<int64_t>();
      else if (k == "decoder_ch_mult") c.decoder_ch_mult = v.get<std::vector<int64_t>>();
      else if (k == "num_res_blocks") c.num_res_blocks = v.get<int64_t>();
      else if (k == "out_channels") c.out_channels = v.get<int64_t>();
      else if (kIgnored.count(k) == 0) throw InvalidArgumentError("vq config: unknown field '" + k + "'");
    }
  } catch (const nlohmann::json::exception& e) {
    throw InvalidArgumentError(std::string("vq config: wrong value type (") + e.what() + ")");
  }
  c.validate();
  return c;
}

nlohmann::json to_json(const VqConfig& c) {
  return {{"codebook_size", c.codebook_size},
          {"codebook_embed_dim", c.codebook_embed_dim},
          {"codebook_l2_norm", c.codebook_l2_norm},
          {"z_channels", c.z_channels},
          {"ch", c.ch},
          {"decoder_ch_mult", c.decoder_ch_mult},
          {"num_res_blocks", c.num_res_blocks},
          {"out_channels", c.out_channels}};
}

}  // namespace kvs::vq
