#include "engine/models/llamagen/llamagen_weights.h"

#include "engine/io/expected_tensor_builders.h"

namespace kvs::llamagen {

std::vector<io::ExpectedTensor> gpt_expected_tensors(const GptConfig& c) {
  const int64_t kv = c.kv_heads() * c.head_dim();
  const int64_t hidden = c.ffn_hidden_dim();
  std::vector<io::ExpectedTensor> out = {
      {"tok_embeddings.weight", {c.vocab_size, c.dim}},
      {"cls_embedding.embedding_table.weight", {c.label_rows(), c.dim}},
  };
  for (int64_t i = 0; i < c.n_layer; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    out.push_back({p + "attention.wqkv.weight", {c.dim + 2 * kv, c.dim}});
    out.push_back({p + "attention.wo.weight", {c.dim, c.dim}});
    out.push_back({p + "feed_forward.w1.weight", {hidden, c.dim}});
    out.push_back({p + "feed_forward.w3.weight", {hidden, c.dim}});
    out.push_back({p + "feed_forward.w2.weight", {c.dim, hidden}});
    out.push_back({p + "attention_norm.weight", {c.dim}});
    out.push_back({p + "ffn_norm.weight", {c.dim}});
  }
  out.push_back({"norm.weight", {c.dim}});
  out.push_back({"output.weight", {c.vocab_size, c.dim}});
  return out;
}

}  // namespace kvs::llamagen
