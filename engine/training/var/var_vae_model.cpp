#include "engine/training/var/var_vae_model.h"

#include <nlohmann/json.hpp>

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <c10/core/GradMode.h>

#include "engine/core/errors.h"
#include "engine/models/blocks/conv_blocks.h"
#include "engine/models/var/multiscale_vqvae.h"
#include "engine/models/var/vae_decoder.h"
#include "engine/models/var/var_weights.h"

namespace kvs::training {
namespace blocks = conv_blocks;

void VarVaeModelConfig::validate() const {
  arch.validate();
  if (beta < 0) throw InvalidArgumentError("VAR VAE: beta must not be negative");
  if (arch.v_patch_nums.size() < 2) throw InvalidArgumentError("VAR VAE: the scale schedule needs at least two scales");
}

nlohmann::json to_json(const VarVaeModelConfig& c) { return {{"tokenizer", var::to_json(c.arch)}, {"beta", c.beta}}; }

VarVaeModelConfig var_vae_model_config_from_json(const nlohmann::json& j) {
  VarVaeModelConfig c;
  try {
    c.arch = var::vqvae_config_from_json(j.at("tokenizer"));
    c.beta = j.at("beta").get<double>();
  } catch (const nlohmann::json::exception& e) {
    throw FormatError(std::string("VAR VAE config: ") + e.what());
  }
  c.validate();
  return c;
}

std::vector<io::ExpectedTensor> var_vae_expected_tensors(const VarVaeModelConfig& c) {
  std::vector<io::ExpectedTensor> out = var::vqvae_encoder_expected_tensors(c.arch);
  for (auto& e : var::vqvae_expected_tensors(c.arch)) out.push_back(e);
  out.push_back({kVocabHitBuffer, {static_cast<int64_t>(c.arch.v_patch_nums.size()), c.arch.vocab_size}});
  return out;
}

ParameterSet init_var_vae_parameters(const VarVaeModelConfig& c, uint64_t seed, at::Device device) {
  c.validate();
  return init_parameters(var_vae_expected_tensors(c), seed, device,
                         [](const std::string& name, const std::vector<int64_t>& shape, at::Generator& gen) {
                           if (name == "quantize.embedding.weight") return at::normal(0.0, 1.0, shape, gen);
                           if (name == kVocabHitBuffer) return at::zeros(shape);
                           return at::Tensor();
                         });
}

VarVaeModel::VarVaeModel(VarVaeModelConfig config, const std::map<std::string, at::Tensor>& weights, at::Device device)
    : config_(std::move(config)), device_(device) {
  config_.validate();
  io::ShapeMap shapes;
  for (const auto& [name, t] : weights) shapes[name] = t.sizes().vec();
  io::check_tensor_set(shapes, var_vae_expected_tensors(config_), "VAR VAE");
  // .to() and .contiguous() keep float32 contiguous tensors as they are: shared storage.
  for (const auto& [name, t] : weights) weights_[name] = t.to(device, at::kFloat).contiguous();
  vqvae_ = std::make_unique<var::MultiScaleVqvae>(config_.arch, weights_, device);
}

VarVaeModel::~VarVaeModel() = default;
VarVaeModel::VarVaeModel(VarVaeModel&&) noexcept = default;

at::Tensor VarVaeModel::encode(const at::Tensor& images) const {
  const auto& w = weights_;
  const var::VqvaeConfig& a = config_.arch;
  const int64_t levels = static_cast<int64_t>(a.ch_mult.size());
  at::Tensor h = blocks::conv(w, images.to(device_, at::kFloat), "encoder.conv_in", 1);
  for (int64_t level = 0; level < levels; ++level) {
    const std::string p = "encoder.down." + std::to_string(level);
    for (int64_t i = 0; i < a.num_res_blocks; ++i) {
      h = blocks::resnet_block(w, h, p + ".block." + std::to_string(i));
      if (level == levels - 1 && a.using_sa) h = var::vae_attn_block(w, h, p + ".attn." + std::to_string(i));
    }
    // Downsample2x: F.pad(x, (0, 1, 0, 1)), then a 3x3 stride-2 conv without padding.
    if (level != levels - 1) h = blocks::conv(w, at::constant_pad_nd(h, {0, 1, 0, 1}, 0), p + ".downsample.conv", 0, 2);
  }
  h = blocks::resnet_block(w, h, "encoder.mid.block_1");
  if (a.using_mid_sa) h = var::vae_attn_block(w, h, "encoder.mid.attn_1");
  h = blocks::resnet_block(w, h, "encoder.mid.block_2");
  h = blocks::conv(w, at::silu(blocks::group_norm(w, h, "encoder.norm_out")), "encoder.conv_out", 1);
  return blocks::conv(w, h, "quant_conv", a.quant_conv_ks / 2);
}

VarQuantized VarVaeModel::quantize(const at::Tensor& f, bool with_losses, bool with_lookup_inputs) const {
  const var::MultiScaleVqvae& q = *vqvae_;
  const int64_t scales = q.scales(), c = config_.arch.z_channels;
  if (f.dim() != 4 || f.size(1) != c || f.size(2) != q.final_grid() || f.size(3) != q.final_grid())
    throw InvalidArgumentError("VAR VAE: latent must be [B, " + std::to_string(c) + ", " +
                               std::to_string(q.final_grid()) + ", " + std::to_string(q.final_grid()) + "], got " +
                               c10::str(f.sizes()));
  const at::Tensor f_no_grad = f.detach();
  at::Tensor f_rest = f_no_grad.clone();
  at::Tensor f_hat = at::zeros_like(f_rest);
  VarQuantized out;
  at::Tensor loss;
  std::vector<at::Tensor> lookups;
  for (int64_t si = 0; si < scales; ++si) {
    if (with_lookup_inputs) {
      const int64_t pn = config_.arch.v_patch_nums[static_cast<size_t>(si)];
      at::Tensor rest = si == scales - 1 ? f_rest : at::adaptive_avg_pool2d(f_rest, {pn, pn});
      lookups.push_back(rest.permute({0, 2, 3, 1}).reshape({-1, c}));
    }
    out.ids.push_back(q.lookup_scale(f_rest, si));
    // Gradients reach the codebook and the phi convolutions through h only.
    const at::Tensor h = q.scale_contribution(q.embed_scale(out.ids.back(), si), si);
    f_hat = f_hat + h;
    f_rest = f_rest - h.detach();
    if (with_losses) {
      at::Tensor term = config_.beta * at::mse_loss(f_hat.detach(), f) + at::mse_loss(f_hat, f_no_grad);
      loss = loss.defined() ? loss + term : term;
    }
  }
  if (with_losses) out.vq_loss = loss / static_cast<double>(scales);
  if (with_lookup_inputs) out.lookup_inputs = at::cat(lookups).detach();
  out.f_hat_codes = f_hat.detach();
  out.f_hat = (out.f_hat_codes - f_no_grad) + f;  // (f_hat.data - f_no_grad).add_(f_BChw)
  return out;
}

at::Tensor VarVaeModel::decode(const at::Tensor& f_hat) const { return vqvae_->decode_raw(f_hat); }

VarVaeOutput VarVaeModel::forward(const at::Tensor& images, bool with_losses, bool with_lookup_inputs) const {
  VarVaeOutput out;
  out.quantized = quantize(encode(images), with_losses, with_lookup_inputs);
  out.reconstruction = decode(out.quantized.f_hat);
  return out;
}

std::vector<at::Tensor> VarVaeModel::encode_ids(const at::Tensor& images) const {
  c10::NoGradGuard no_grad;
  return vqvae_->f_to_ids(encode(images));
}

}  // namespace kvs::training
