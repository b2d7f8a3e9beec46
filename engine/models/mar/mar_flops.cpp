#include "engine/models/mar/mar_flops.h"

namespace kvs::mar {
namespace {

constexpr int64_t kFrequencyEmbeddingSize = 256;  // TimestepEmbedder's sinusoid width

int64_t width(const MarConfig& c, bool decoder) { return decoder ? c.decoder_embed_dim : c.encoder_embed_dim; }
int64_t hidden(const MarConfig& c, bool decoder) { return decoder ? c.decoder_mlp_hidden() : c.encoder_mlp_hidden(); }

}  // namespace

double MarFlops::linear(int64_t rows, int64_t in, int64_t out) {
  return 2.0 * static_cast<double>(rows) * static_cast<double>(in) * static_cast<double>(out);
}

double MarFlops::attention(int64_t queries, int64_t keys, int64_t w) {
  return 4.0 * static_cast<double>(queries) * static_cast<double>(keys) * static_cast<double>(w);
}

double MarFlops::block_qkv(const MarConfig& c, bool decoder, int64_t rows, int64_t tokens) {
  const int64_t d = width(c, decoder);
  return linear(rows * tokens, d, 3 * d);
}

double MarFlops::block_attend(const MarConfig& c, bool decoder, int64_t rows, int64_t queries, int64_t keys) {
  const int64_t d = width(c, decoder);
  return static_cast<double>(rows) * attention(queries, keys, d) + linear(rows * queries, d, d);
}

double MarFlops::block_mlp(const MarConfig& c, bool decoder, int64_t rows, int64_t tokens) {
  const int64_t d = width(c, decoder), h = hidden(c, decoder);
  return linear(rows * tokens, d, h) + linear(rows * tokens, h, d);
}

double MarFlops::block(const MarConfig& c, bool decoder, int64_t rows, int64_t tokens) {
  return block_qkv(c, decoder, rows, tokens) + block_attend(c, decoder, rows, tokens, tokens) +
         block_mlp(c, decoder, rows, tokens);
}

double MarFlops::encoder_input(const MarConfig& c, int64_t rows) {
  return linear(rows * c.seq_len(), c.token_embed_dim(), c.encoder_embed_dim);
}

double MarFlops::decoder_input(const MarConfig& c, int64_t rows, int64_t known) {
  return linear(rows * (c.buffer_size + known), c.encoder_embed_dim, c.decoder_embed_dim);
}

double MarFlops::full_transformer(const MarConfig& c, int64_t rows, int64_t known) {
  const int64_t enc_tokens = c.buffer_size + known, dec_tokens = c.buffer_size + c.seq_len();
  return encoder_input(c, rows) + static_cast<double>(c.encoder_depth) * block(c, false, rows, enc_tokens) +
         decoder_input(c, rows, known) + static_cast<double>(c.decoder_depth) * block(c, true, rows, dec_tokens);
}

double MarFlops::head_condition(const MarConfig& c, int64_t rows) {
  const int64_t w = c.diffloss_w;
  return linear(rows, kFrequencyEmbeddingSize, w) + linear(rows, w, w) + linear(rows, c.decoder_embed_dim, w);
}

double MarFlops::head_input(const MarConfig& c, int64_t rows) {
  return linear(rows, c.token_embed_dim(), c.diffloss_w);
}

double MarFlops::head_res_block(const MarConfig& c, int64_t rows) {
  const int64_t w = c.diffloss_w;
  return linear(rows, w, 3 * w) + 2.0 * linear(rows, w, w);
}

double MarFlops::head_final(const MarConfig& c, int64_t rows) {
  const int64_t w = c.diffloss_w;
  return linear(rows, w, 2 * w) + linear(rows, w, c.head_out_channels());
}

double MarFlops::head_forward(const MarConfig& c, int64_t rows) {
  return head_condition(c, rows) + head_input(c, rows) + static_cast<double>(c.diffloss_d) * head_res_block(c, rows) +
         head_final(c, rows);
}

}  // namespace kvs::mar
