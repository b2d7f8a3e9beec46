#include "engine/models/var/multiscale_vqvae.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <c10/core/GradMode.h>

#include "engine/core/errors.h"
#include "engine/models/var/var_weights.h"

namespace kvs::var {
namespace {

at::Tensor take(const std::map<std::string, at::Tensor>& weights, const std::string& name, at::Device device) {
  auto it = weights.find(name);
  if (it == weights.end()) throw ModelMismatchError("VQVAE weights: missing tensor " + name);
  return it->second.to(device, at::kFloat).contiguous();
}

}  // namespace

MultiScaleVqvae::MultiScaleVqvae(VqvaeConfig config, const std::map<std::string, at::Tensor>& weights,
                                 at::Device device, at::ScalarType decoder_dtype)
    : config_(std::move(config)), device_(device) {
  config_.validate();
  embedding_ = take(weights, "quantize.embedding.weight", device);
  for (int64_t i = 0; i < config_.phi_count(); ++i) {
    phi_weight_.push_back(take(weights, phi_key(config_, i) + ".weight", device));
    phi_bias_.push_back(take(weights, phi_key(config_, i) + ".bias", device));
  }
  phi_schedule_ = config_.phi_schedule();
  post_quant_weight_ = take(weights, "post_quant_conv.weight", device);
  post_quant_bias_ = take(weights, "post_quant_conv.bias", device);
  decoder_ = std::make_unique<VaeDecoder>(config_, weights, device, decoder_dtype);
}

at::Tensor MultiScaleVqvae::empty_fhat(int64_t batch) const {
  const int64_t hw = final_grid();
  return at::zeros({batch, config_.z_channels, hw, hw}, at::TensorOptions().dtype(at::kFloat).device(device_));
}

at::Tensor MultiScaleVqvae::embed_scale(const at::Tensor& ids, int64_t si) const {
  const int64_t pn = config_.v_patch_nums.at(si);
  const int64_t b = ids.size(0);
  if (ids.dim() != 2 || ids.size(1) != pn * pn)
    throw InvalidArgumentError("scale " + std::to_string(si) + " needs " + std::to_string(pn * pn) +
                               " token ids per image, got shape " + c10::str(ids.sizes()));
  // embedding(idx_Bl).transpose(1, 2).view(B, Cvae, pn, pn)
  return at::embedding(embedding_, ids.to(device_, at::kLong)).transpose(1, 2).reshape({b, config_.z_channels, pn, pn});
}

at::Tensor MultiScaleVqvae::phi(const at::Tensor& h, int64_t si) const {
  if (config_.phi_is_identity()) return h;
  const size_t index = static_cast<size_t>(phi_schedule_.at(si));
  const double r = std::abs(config_.quant_resi);
  const int64_t pad = phi_weight_[index].size(-1) / 2;
  // h.mul(1 - r) + conv(h).mul_(r)
  return h * (1.0 - r) + at::conv2d(h, phi_weight_[index], phi_bias_[index], {1, 1}, {pad, pad}) * r;
}

at::Tensor MultiScaleVqvae::scale_contribution(const at::Tensor& h, int64_t si) const {
  const int64_t hw = final_grid();
  if (si == scales() - 1) return phi(h.to(at::kFloat), si);
  // F.interpolate(h, size=(HW, HW), mode='bicubic') (align_corners False, no scale factors).
  at::Tensor up = at::upsample_bicubic2d(h.to(at::kFloat), {hw, hw}, /*align_corners=*/false, c10::nullopt,
                                         c10::nullopt);
  return phi(up, si);
}

void MultiScaleVqvae::accumulate(at::Tensor& f_hat, const at::Tensor& h, int64_t si) const {
  f_hat.add_(scale_contribution(h, si));
}

at::Tensor MultiScaleVqvae::lookup_scale(const at::Tensor& f_rest, int64_t si) const {
  c10::NoGradGuard no_grad;
  const int64_t pn = config_.v_patch_nums.at(si), b = f_rest.size(0), c = config_.z_channels;
  at::Tensor rest = si == scales() - 1 ? f_rest : at::adaptive_avg_pool2d(f_rest, {pn, pn});
  if (rest.size(2) != pn || rest.size(3) != pn || rest.size(1) != c)
    throw InvalidArgumentError("scale " + std::to_string(si) + " lookup needs a [B, " + std::to_string(c) + ", " +
                               std::to_string(final_grid()) + ", " + std::to_string(final_grid()) + "] residual, got " +
                               c10::str(f_rest.sizes()));
  at::Tensor rest_nc = rest.detach().to(at::kFloat).permute({0, 2, 3, 1}).reshape({-1, c});
  const at::Tensor e = embedding_.detach();
  // d = sum(r^2, keepdim) + sum(e^2); d.addmm_(r, e^T, alpha=-2, beta=1), as upstream.
  at::Tensor d = rest_nc.square().sum(1, true) + e.square().sum(1);
  d.addmm_(rest_nc, e.t(), /*beta=*/1, /*alpha=*/-2);
  return at::argmin(d, 1).view({b, pn * pn});
}

std::vector<at::Tensor> MultiScaleVqvae::f_to_ids(const at::Tensor& f) const {
  c10::NoGradGuard no_grad;
  at::Tensor f_rest = f.detach().to(device_, at::kFloat).clone();
  std::vector<at::Tensor> ids;
  for (int64_t si = 0; si < scales(); ++si) {
    ids.push_back(lookup_scale(f_rest, si));
    f_rest.sub_(scale_contribution(embed_scale(ids.back(), si), si));
  }
  return ids;
}

at::Tensor MultiScaleVqvae::next_scale_input(const at::Tensor& f_hat, int64_t si) const {
  const int64_t pn = config_.v_patch_nums.at(si + 1);
  // F.interpolate(f_hat, size=(pn, pn), mode='area') is adaptive average pooling.
  return at::adaptive_avg_pool2d(f_hat, {pn, pn});
}

at::Tensor MultiScaleVqvae::ids_to_var_input(const std::vector<at::Tensor>& ids) const {
  if (static_cast<int64_t>(ids.size()) < scales() - 1)
    throw InvalidArgumentError("teacher forcing needs token ids for the first " + std::to_string(scales() - 1) +
                               " scales, got " + std::to_string(ids.size()));
  if (ids.empty()) throw InvalidArgumentError("teacher forcing needs token ids");
  const int64_t b = ids[0].size(0);
  at::Tensor f_hat = empty_fhat(b);
  std::vector<at::Tensor> next_scales;
  for (int64_t si = 0; si + 1 < scales(); ++si) {
    accumulate(f_hat, embed_scale(ids[si], si), si);
    at::Tensor next = next_scale_input(f_hat, si);
    next_scales.push_back(next.reshape({b, config_.z_channels, -1}).transpose(1, 2));
  }
  if (next_scales.empty()) return at::zeros({b, 0, config_.z_channels}, f_hat.options());
  return at::cat(next_scales, 1);
}

at::Tensor MultiScaleVqvae::ids_to_fhat(const std::vector<at::Tensor>& ids) const {
  if (static_cast<int64_t>(ids.size()) != scales())
    throw InvalidArgumentError("f_hat needs token ids for all " + std::to_string(scales()) + " scales, got " +
                               std::to_string(ids.size()));
  at::Tensor f_hat = empty_fhat(ids[0].size(0));
  for (int64_t si = 0; si < scales(); ++si) accumulate(f_hat, embed_scale(ids[si], si), si);
  return f_hat;
}

at::Tensor MultiScaleVqvae::decode_raw(const at::Tensor& f_hat) const {
  const int64_t pad = post_quant_weight_.size(-1) / 2;
  at::Tensor z = at::conv2d(f_hat.to(device_, at::kFloat), post_quant_weight_, post_quant_bias_, {1, 1}, {pad, pad});
  return decoder_->forward(z);
}

at::Tensor MultiScaleVqvae::fhat_to_img(const at::Tensor& f_hat) const { return decode_raw(f_hat).clamp(-1, 1); }

at::Tensor var_images_to_uint8_nhwc(const at::Tensor& images) {
  at::Tensor x = ((images.to(at::kCPU, at::kFloat) + 1.0) * 0.5 * 255.0).clamp(0, 255);
  return x.to(at::kByte).permute({0, 2, 3, 1}).contiguous();
}

}  // namespace kvs::var
