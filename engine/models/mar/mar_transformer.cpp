#include "engine/models/mar/mar_transformer.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include "engine/core/errors.h"

namespace kvs::mar {
namespace {

at::Tensor take_as(const TensorMap& w, const std::string& name, at::Device device, at::ScalarType dtype) {
  auto it = w.find(name);
  if (it == w.end()) throw ModelMismatchError("MAR weights: missing tensor " + name);
  return it->second.to(device, dtype).contiguous();
}

const char* stack_name(MarStack s) { return s == MarStack::Encoder ? "encoder" : "decoder"; }

}  // namespace

MarTransformer::MarTransformer(MarConfig config, const TensorMap& w, at::Device device, at::ScalarType dtype)
    : config_(std::move(config)), device_(device), dtype_(dtype) {
  config_.validate();
  auto take = [&](const TensorMap& weights, const std::string& name, at::Device d) {
    return take_as(weights, name, d, dtype);
  };
  class_emb_ = take(w, "class_emb.weight", device);
  fake_latent_ = take(w, "fake_latent", device);
  z_proj_w_ = take(w, "z_proj.weight", device);
  z_proj_b_ = take(w, "z_proj.bias", device);
  z_proj_ln_w_ = take(w, "z_proj_ln.weight", device);
  z_proj_ln_b_ = take(w, "z_proj_ln.bias", device);
  encoder_pos_ = take(w, "encoder_pos_embed_learned", device);
  encoder_norm_w_ = take(w, "encoder_norm.weight", device);
  encoder_norm_b_ = take(w, "encoder_norm.bias", device);
  decoder_embed_w_ = take(w, "decoder_embed.weight", device);
  decoder_embed_b_ = take(w, "decoder_embed.bias", device);
  mask_token_ = take(w, "mask_token", device);
  decoder_pos_ = take(w, "decoder_pos_embed_learned", device);
  decoder_norm_w_ = take(w, "decoder_norm.weight", device);
  decoder_norm_b_ = take(w, "decoder_norm.bias", device);
  diffusion_pos_ = take(w, "diffusion_pos_embed_learned", device);
  auto load_blocks = [&](const std::string& prefix, int64_t depth, std::vector<Block>& out) {
    for (int64_t i = 0; i < depth; ++i) {
      const std::string p = prefix + std::to_string(i) + ".";
      Block b;
      b.norm1_w = take(w, p + "norm1.weight", device);
      b.norm1_b = take(w, p + "norm1.bias", device);
      b.qkv_w = take(w, p + "attn.qkv.weight", device);
      b.qkv_b = take(w, p + "attn.qkv.bias", device);
      b.proj_w = take(w, p + "attn.proj.weight", device);
      b.proj_b = take(w, p + "attn.proj.bias", device);
      b.norm2_w = take(w, p + "norm2.weight", device);
      b.norm2_b = take(w, p + "norm2.bias", device);
      b.fc1_w = take(w, p + "mlp.fc1.weight", device);
      b.fc1_b = take(w, p + "mlp.fc1.bias", device);
      b.fc2_w = take(w, p + "mlp.fc2.weight", device);
      b.fc2_b = take(w, p + "mlp.fc2.bias", device);
      out.push_back(std::move(b));
    }
  };
  load_blocks("encoder_blocks.", config_.encoder_depth, encoder_blocks_);
  load_blocks("decoder_blocks.", config_.decoder_depth, decoder_blocks_);
}

int64_t MarTransformer::depth(MarStack stack) const {
  return stack == MarStack::Encoder ? config_.encoder_depth : config_.decoder_depth;
}

int64_t MarTransformer::num_heads(MarStack stack) const {
  return stack == MarStack::Encoder ? config_.encoder_num_heads : config_.decoder_num_heads;
}

const MarTransformer::Block& MarTransformer::block(MarStack stack, int64_t layer) const {
  const auto& blocks = stack == MarStack::Encoder ? encoder_blocks_ : decoder_blocks_;
  if (layer < 0 || layer >= static_cast<int64_t>(blocks.size()))
    throw InvalidArgumentError(std::string("MAR ") + stack_name(stack) + " has no block " + std::to_string(layer) +
                               " (depth " + std::to_string(blocks.size()) + ")");
  return blocks[static_cast<size_t>(layer)];
}

at::Tensor MarTransformer::layer_norm(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) const {
  // Statistics in float32 (the casts are no-ops in float32).
  return at::layer_norm(x.to(at::kFloat), {x.size(-1)}, w.to(at::kFloat), b.to(at::kFloat), config_.norm_eps)
      .to(x.scalar_type());
}

at::Tensor MarTransformer::class_embedding(const at::Tensor& labels) const {
  at::Tensor l = labels.to(at::kCPU, at::kLong);
  if (l.numel() > 0 && (l.min().item<int64_t>() < 0 || l.max().item<int64_t>() >= config_.class_num))
    throw InvalidArgumentError("class labels must be in [0, " + std::to_string(config_.class_num) + ")");
  return at::embedding(class_emb_, l.to(device_));
}

at::Tensor MarTransformer::fake_latent(int64_t rows) const {
  return fake_latent_.expand({rows, fake_latent_.size(1)}).contiguous();
}

at::Tensor MarTransformer::encoder_keep_mask(const at::Tensor& mask) const {
  // Upstream keeps (1 - mask_with_buffer).nonzero(): the buffer and the known tokens.
  at::Tensor known = mask.to(device_) == 0;
  at::Tensor buffer = at::ones({known.size(0), config_.buffer_size}, known.options());
  return at::cat({buffer, known}, 1);
}

at::Tensor MarTransformer::encoder_input(const at::Tensor& tokens, const at::Tensor& mask,
                                         const at::Tensor& class_embedding) const {
  const int64_t B = tokens.size(0), L = config_.seq_len(), E = config_.encoder_embed_dim;
  if (tokens.dim() != 3 || tokens.size(1) != L || tokens.size(2) != config_.token_embed_dim())
    throw InvalidArgumentError("MAR encoder: tokens have shape " + c10::str(tokens.sizes()) + ", expected [B, " +
                               std::to_string(L) + ", " + std::to_string(config_.token_embed_dim()) + "]");
  if (mask.dim() != 2 || mask.size(0) != B || mask.size(1) != L)
    throw InvalidArgumentError("MAR encoder: mask has shape " + c10::str(mask.sizes()) + ", expected [" +
                               std::to_string(B) + ", " + std::to_string(L) + "]");
  at::Tensor x = at::linear(tokens.to(device_, dtype_), z_proj_w_, z_proj_b_);
  at::Tensor buffer = class_embedding.to(device_, dtype_).unsqueeze(1).expand({B, config_.buffer_size, E});
  x = at::cat({buffer, x}, 1) + encoder_pos_;
  x = layer_norm(x, z_proj_ln_w_, z_proj_ln_b_);
  at::Tensor keep = encoder_keep_mask(mask);
  at::Tensor kept = keep.sum(1);
  if (B > 1 && !at::equal(kept, kept[0].expand_as(kept)))
    throw InvalidArgumentError("MAR encoder: every image must have the same number of unknown tokens");
  return at::masked_select(x, keep.unsqueeze(-1)).reshape({B, -1, E});
}

at::Tensor MarTransformer::encoder_output(const at::Tensor& x) const {
  return layer_norm(x, encoder_norm_w_, encoder_norm_b_);
}

at::Tensor MarTransformer::decoder_input(const at::Tensor& encoded, const at::Tensor& mask) const {
  const int64_t B = encoded.size(0), D = config_.decoder_embed_dim;
  at::Tensor x = at::linear(encoded.to(device_, dtype_), decoder_embed_w_, decoder_embed_b_);
  at::Tensor keep = encoder_keep_mask(mask);
  at::Tensor padded = mask_token_.expand({B, keep.size(1), D}).contiguous();
  // x_after_pad[(1 - mask_with_buffer).nonzero()] = x: row-major order, as masked_scatter fills.
  padded.masked_scatter_(keep.unsqueeze(-1).expand_as(padded), x.contiguous());
  return padded + decoder_pos_;
}

at::Tensor MarTransformer::decoder_output(const at::Tensor& x) const {
  at::Tensor h = layer_norm(x, decoder_norm_w_, decoder_norm_b_);
  return h.narrow(1, config_.buffer_size, config_.seq_len()) + diffusion_pos_;
}

MarBlockQkv MarTransformer::block_qkv(MarStack stack, int64_t layer, const at::Tensor& x) const {
  const Block& b = block(stack, layer);
  const int64_t rows = x.size(0), n = x.size(1), heads = num_heads(stack), dim = x.size(2);
  at::Tensor qkv = at::linear(layer_norm(x, b.norm1_w, b.norm1_b), b.qkv_w, b.qkv_b)
                       .reshape({rows, n, 3, heads, dim / heads})
                       .permute({2, 0, 3, 1, 4});
  auto parts = qkv.unbind(0);
  return {parts[0], parts[1], parts[2]};
}

at::Tensor MarTransformer::block_attend(MarStack stack, int64_t layer, const at::Tensor& x, const at::Tensor& q,
                                        const at::Tensor& k, const at::Tensor& v) const {
  const Block& b = block(stack, layer);
  // timm: F.scaled_dot_product_attention with the default scale head_dim^-0.5.
  at::Tensor o = at::scaled_dot_product_attention(q, k, v);
  o = o.transpose(1, 2).reshape({x.size(0), x.size(1), x.size(2)});
  return x + at::linear(o, b.proj_w, b.proj_b);
}

at::Tensor MarTransformer::block_mlp(MarStack stack, int64_t layer, const at::Tensor& x) const {
  const Block& b = block(stack, layer);
  at::Tensor h = at::gelu(at::linear(layer_norm(x, b.norm2_w, b.norm2_b), b.fc1_w, b.fc1_b));  // exact (erf) GELU
  return x + at::linear(h, b.fc2_w, b.fc2_b);
}

at::Tensor MarTransformer::block_forward(MarStack stack, int64_t layer, const at::Tensor& x,
                                         const MarBlockObserver* observer) const {
  if (observer && observer->before_block) observer->before_block(stack, layer, x);
  const MarBlockQkv qkv = block_qkv(stack, layer, x);
  if (observer && observer->on_qkv) observer->on_qkv(stack, layer, qkv);
  at::Tensor h = block_mlp(stack, layer, block_attend(stack, layer, x, qkv.q, qkv.k, qkv.v));
  if (observer && observer->after_block) observer->after_block(stack, layer, h);
  return h;
}

at::Tensor MarTransformer::forward_encoder(const at::Tensor& tokens, const at::Tensor& mask,
                                           const at::Tensor& class_embedding, const MarBlockObserver* observer) const {
  at::Tensor x = encoder_input(tokens, mask, class_embedding);
  for (int64_t i = 0; i < config_.encoder_depth; ++i) x = block_forward(MarStack::Encoder, i, x, observer);
  return encoder_output(x);
}

at::Tensor MarTransformer::forward_decoder(const at::Tensor& encoded, const at::Tensor& mask,
                                           const MarBlockObserver* observer) const {
  at::Tensor x = decoder_input(encoded, mask);
  for (int64_t i = 0; i < config_.decoder_depth; ++i) x = block_forward(MarStack::Decoder, i, x, observer);
  return decoder_output(x);
}

}  // namespace kvs::mar
