#pragma once
// Architecture configuration of LlamaGen's VQ tokenizer
// (tokenizer/tokenizer_image/vq_model.py ModelArgs + Decoder arguments), field
// names as upstream. A shared block: LlamaGen decodes with it, and Janus-Pro's
// gen_vision_model is the same VQ-16.
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace kvs::vq {

struct VqConfig {
  int64_t codebook_size = 16384;
  int64_t codebook_embed_dim = 8;
  bool codebook_l2_norm = true;
  int64_t z_channels = 256;
  int64_t ch = 128;  // Decoder(ch=...) — VQModel itself always uses 128
  std::vector<int64_t> decoder_ch_mult{1, 1, 2, 2, 4};
  int64_t num_res_blocks = 2;
  int64_t out_channels = 3;

  int64_t downsample() const { return int64_t{1} << (decoder_ch_mult.size() - 1); }
  void validate() const;
};

// "VQ-16" (ch_mult [1,1,2,2,4]) and "VQ-8" (ch_mult [1,2,2,4]).
VqConfig vq_preset(const std::string& name, int64_t codebook_size = 16384, int64_t codebook_embed_dim = 8);

// JSON in upstream ModelArgs spelling (unknown keys are rejected with their names).
VqConfig vq_config_from_json(const nlohmann::json& j);
nlohmann::json to_json(const VqConfig& c);

}  // namespace kvs::vq
