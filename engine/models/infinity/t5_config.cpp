#include "engine/models/infinity/t5_config.h"

#include <nlohmann/json.hpp>

#include "engine/core/errors.h"

namespace kvs::infinity {

void T5Config::validate() const {
  auto fail = [](const std::string& what) { throw InvalidArgumentError("T5 config: " + what); };
  if (vocab_size <= 0 || d_model <= 0 || d_kv <= 0 || d_ff <= 0 || num_layers <= 0 || num_heads <= 0)
    fail("vocab_size, d_model, d_kv, d_ff, num_layers and num_heads must be positive");
  if (relative_attention_num_buckets < 4 || relative_attention_max_distance <= relative_attention_num_buckets / 4)
    fail("relative_attention_num_buckets must be at least 4 and max_distance above a quarter of it");
  if (!(layer_norm_epsilon > 0.0)) fail("layer_norm_epsilon must be positive");
  if (feed_forward_proj != "gated-gelu" && feed_forward_proj != "relu")
    fail("feed_forward_proj '" + feed_forward_proj + "' is not supported (gated-gelu or relu)");
}

nlohmann::json T5Config::to_json() const {
  return {{"vocab_size", vocab_size},
          {"d_model", d_model},
          {"d_kv", d_kv},
          {"d_ff", d_ff},
          {"num_layers", num_layers},
          {"num_heads", num_heads},
          {"relative_attention_num_buckets", relative_attention_num_buckets},
          {"relative_attention_max_distance", relative_attention_max_distance},
          {"layer_norm_epsilon", layer_norm_epsilon},
          {"feed_forward_proj", feed_forward_proj}};
}

T5Config T5Config::from_hf_json(const nlohmann::json& j) {
  // transformers' T5Config defaults (t5-small) for absent fields.
  T5Config c;
  try {
    c.vocab_size = j.value("vocab_size", int64_t{32128});
    c.d_model = j.value("d_model", int64_t{512});
    c.d_kv = j.value("d_kv", int64_t{64});
    c.d_ff = j.value("d_ff", int64_t{2048});
    c.num_layers = j.value("num_layers", int64_t{6});
    c.num_heads = j.value("num_heads", int64_t{8});
    c.relative_attention_num_buckets = j.value("relative_attention_num_buckets", int64_t{32});
    c.relative_attention_max_distance = j.value("relative_attention_max_distance", int64_t{128});
    c.layer_norm_epsilon = j.value("layer_norm_epsilon", 1e-6);
    c.feed_forward_proj = j.value("feed_forward_proj", std::string("relu"));
  } catch (const nlohmann::json::exception& e) {
    throw FormatError(std::string("T5 config: a field has the wrong type (") + e.what() + ")");
  }
  c.validate();
  return c;
}

T5Config flan_t5_xl_config() { return T5Config{}; }

}  // namespace kvs::infinity
