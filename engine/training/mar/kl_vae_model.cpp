#include "engine/training/mar/kl_vae_model.h"

#include "engine/io/expected_tensor_builders.h"

#include <nlohmann/json.hpp>

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <algorithm>

#include "engine/core/errors.h"
#include "engine/models/blocks/conv_blocks.h"
#include "engine/models/mar/kl_vae_decoder.h"
#include "engine/models/mar/mar_weights.h"

namespace kvs::training {

using io::add_conv;
using io::add_norm;
using io::add_resnet;
namespace blocks = conv_blocks;
namespace {

bool has_attention(const mar::KlVaeConfig& c, int64_t resolution) {
  return std::find(c.attn_resolutions.begin(), c.attn_resolutions.end(), resolution) != c.attn_resolutions.end();
}

}  // namespace

void KlVaeModelConfig::validate() const {
  arch.validate();
  if (kl_weight < 0) throw InvalidArgumentError("KL VAE: --kl-weight must not be negative");
}

nlohmann::json to_json(const KlVaeModelConfig& c) {
  return {{"tokenizer", mar::to_json(c.arch)}, {"kl_weight", c.kl_weight}};
}

KlVaeModelConfig kl_vae_model_config_from_json(const nlohmann::json& j) {
  KlVaeModelConfig c;
  try {
    c.arch = mar::kl_vae_config_from_json(j.at("tokenizer"));
    c.kl_weight = j.at("kl_weight").get<double>();
  } catch (const nlohmann::json::exception& e) {
    throw FormatError(std::string("KL VAE config: ") + e.what());
  }
  c.validate();
  return c;
}

std::vector<io::ExpectedTensor> kl_vae_encoder_expected_tensors(const mar::KlVaeConfig& c) {
  std::vector<io::ExpectedTensor> out;
  const int64_t levels = static_cast<int64_t>(c.ch_mult.size());
  add_conv(out, "encoder.conv_in", 3, c.ch, 3);
  int64_t block_in = c.ch, curr_res = c.resolution;
  for (int64_t level = 0; level < levels; ++level) {
    const std::string p = "encoder.down." + std::to_string(level);
    const int64_t block_out = c.ch * c.ch_mult[static_cast<size_t>(level)];
    for (int64_t i = 0; i < c.num_res_blocks; ++i) {
      add_resnet(out, p + ".block." + std::to_string(i), block_in, block_out);
      block_in = block_out;
      if (has_attention(c, curr_res)) io::add_attn_separate_qkv(out, p + ".attn." + std::to_string(i), block_in);
    }
    if (level != levels - 1) {
      add_conv(out, p + ".downsample.conv", block_in, block_in, 3);
      curr_res /= 2;
    }
  }
  add_resnet(out, "encoder.mid.block_1", block_in, block_in);
  io::add_attn_separate_qkv(out, "encoder.mid.attn_1", block_in);
  add_resnet(out, "encoder.mid.block_2", block_in, block_in);
  add_norm(out, "encoder.norm_out", block_in);
  add_conv(out, "encoder.conv_out", block_in, 2 * c.embed_dim, 3);
  add_conv(out, "quant_conv", 2 * c.embed_dim, 2 * c.embed_dim, 1);
  return out;
}

std::vector<io::ExpectedTensor> kl_vae_training_expected_tensors(const mar::KlVaeConfig& c) {
  std::vector<io::ExpectedTensor> out = kl_vae_encoder_expected_tensors(c);
  for (auto& e : mar::kl_vae_expected_tensors(c)) out.push_back(std::move(e));
  return out;
}

ParameterSet init_kl_vae_parameters(const KlVaeModelConfig& c, uint64_t seed, at::Device device) {
  c.validate();
  return init_parameters(kl_vae_training_expected_tensors(c.arch), seed, device);
}

at::Tensor KlPosterior::std() const { return at::exp(logvar * 0.5); }

at::Tensor KlPosterior::kl() const { return (mean.pow(2) + at::exp(logvar) - 1.0 - logvar).sum({1, 2, 3}) * 0.5; }

at::Tensor KlPosterior::sample(at::Generator& gen) const {
  at::Tensor noise = at::normal(0.0, 1.0, mean.sizes(), gen, at::TensorOptions().dtype(at::kFloat));
  return mean + std() * noise.to(mean.device());
}

KlPosterior posterior_from_moments(const at::Tensor& moments) {
  if (moments.dim() != 4 || moments.size(1) % 2 != 0)
    throw InvalidArgumentError("KL VAE: moments must be [B, 2E, h, w], got " + c10::str(moments.sizes()));
  auto parts = moments.chunk(2, 1);
  return {parts[0], parts[1].clamp(-30.0, 20.0)};
}

KlVaeModel::KlVaeModel(KlVaeModelConfig config, const std::map<std::string, at::Tensor>& weights, at::Device device)
    : config_(std::move(config)), device_(device) {
  config_.validate();
  io::ShapeMap shapes;
  for (const auto& [name, t] : weights) shapes[name] = t.sizes().vec();
  io::check_tensor_set(shapes, kl_vae_training_expected_tensors(config_.arch), "KL VAE");
  // .to() and .contiguous() keep float32 contiguous tensors as they are: shared storage.
  for (const auto& [name, t] : weights) weights_[name] = t.to(device, at::kFloat).contiguous();
  decoder_ = std::make_unique<mar::KlVaeDecoder>(config_.arch, weights_, device);
}

KlVaeModel::~KlVaeModel() = default;
KlVaeModel::KlVaeModel(KlVaeModel&&) noexcept = default;

int64_t KlVaeModel::latent_size(int64_t image_size) const { return image_size / config_.arch.upsampling(); }

at::Tensor KlVaeModel::encode_moments(const at::Tensor& images) const {
  const auto& w = weights_;
  const mar::KlVaeConfig& a = config_.arch;
  if (images.dim() != 4 || images.size(1) != 3 || images.size(2) % a.upsampling() != 0 ||
      images.size(3) % a.upsampling() != 0)
    throw InvalidArgumentError("KL VAE: images must be [B, 3, H, W] with H and W multiples of " +
                               std::to_string(a.upsampling()) + ", got " + c10::str(images.sizes()));
  const int64_t levels = static_cast<int64_t>(a.ch_mult.size());
  at::Tensor h = blocks::conv(w, images.to(device_, at::kFloat), "encoder.conv_in", 1);
  int64_t curr_res = a.resolution;
  for (int64_t level = 0; level < levels; ++level) {
    const std::string p = "encoder.down." + std::to_string(level);
    for (int64_t i = 0; i < a.num_res_blocks; ++i) {
      h = blocks::resnet_block(w, h, p + ".block." + std::to_string(i));
      if (has_attention(a, curr_res)) h = blocks::attn_block(w, h, p + ".attn." + std::to_string(i));
    }
    if (level != levels - 1) {
      // Downsample(with_conv): F.pad(x, (0, 1, 0, 1)), then a 3x3 stride-2 conv without padding.
      h = blocks::conv(w, at::constant_pad_nd(h, {0, 1, 0, 1}, 0), p + ".downsample.conv", 0, 2);
      curr_res /= 2;
    }
  }
  h = blocks::resnet_block(w, h, "encoder.mid.block_1");
  h = blocks::attn_block(w, h, "encoder.mid.attn_1");
  h = blocks::resnet_block(w, h, "encoder.mid.block_2");
  h = blocks::conv(w, at::silu(blocks::group_norm(w, h, "encoder.norm_out")), "encoder.conv_out", 1);
  return blocks::conv(w, h, "quant_conv", 0);
}

at::Tensor KlVaeModel::decode(const at::Tensor& z) const { return decoder_->decode(z); }

}  // namespace kvs::training
