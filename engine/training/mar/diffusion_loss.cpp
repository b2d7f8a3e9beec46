#include "engine/training/mar/diffusion_loss.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <cmath>

#include "engine/core/errors.h"
#include "engine/models/mar/gaussian_diffusion.h"

namespace kvs::training {
namespace {

constexpr double kLn2 = 0.69314718055994530942;
constexpr double kPi = 3.141592653589793;

at::Tensor approx_standard_normal_cdf(const at::Tensor& x) {
  return (at::tanh((x + at::pow(x, 3) * 0.044715) * std::sqrt(2.0 / kPi)) + 1.0) * 0.5;
}

}  // namespace

at::Tensor normal_kl(const at::Tensor& mean1, const at::Tensor& logvar1, const at::Tensor& mean2,
                     const at::Tensor& logvar2) {
  return (logvar2 - logvar1 + at::exp(logvar1 - logvar2) + (mean1 - mean2).pow(2) * at::exp(-logvar2) - 1.0) * 0.5;
}

at::Tensor discretized_gaussian_log_likelihood(const at::Tensor& x, const at::Tensor& means,
                                               const at::Tensor& log_scales) {
  const at::Tensor centered = x - means;
  const at::Tensor inv_stdv = at::exp(-log_scales);
  const at::Tensor cdf_plus = approx_standard_normal_cdf(inv_stdv * (centered + 1.0 / 255.0));
  const at::Tensor cdf_min = approx_standard_normal_cdf(inv_stdv * (centered - 1.0 / 255.0));
  const at::Tensor log_cdf_plus = at::log(cdf_plus.clamp_min(1e-12));
  const at::Tensor log_one_minus_cdf_min = at::log((1.0 - cdf_min).clamp_min(1e-12));
  const at::Tensor log_cdf_delta = at::log((cdf_plus - cdf_min).clamp_min(1e-12));
  return at::where(x < -0.999, log_cdf_plus, at::where(x > 0.999, log_one_minus_cdf_min, log_cdf_delta));
}

DiffusionTrainingLoss::DiffusionTrainingLoss(int64_t diffusion_steps) {
  // timestep_respacing "" keeps every base step (SpacedDiffusion over all of them).
  const mar::GaussianDiffusion schedule("", diffusion_steps);
  betas_ = schedule.betas();
  const std::vector<double>& ac = schedule.alphas_cumprod();
  posterior_log_variance_clipped_ = schedule.posterior_log_variance_clipped();
  const size_t n = betas_.size();
  for (size_t i = 0; i < n; ++i) {
    const double acp = i == 0 ? 1.0 : ac[i - 1];
    log_betas_.push_back(std::log(betas_[i]));
    sqrt_alphas_cumprod_.push_back(std::sqrt(ac[i]));
    sqrt_one_minus_alphas_cumprod_.push_back(std::sqrt(1.0 - ac[i]));
    sqrt_recip_alphas_cumprod_.push_back(std::sqrt(1.0 / ac[i]));
    sqrt_recipm1_alphas_cumprod_.push_back(std::sqrt(1.0 / ac[i] - 1.0));
    posterior_mean_coef1_.push_back(betas_[i] * std::sqrt(acp) / (1.0 - ac[i]));
    posterior_mean_coef2_.push_back((1.0 - acp) * std::sqrt(1.0 - betas_[i]) / (1.0 - ac[i]));
  }
}

at::Tensor DiffusionTrainingLoss::pick(const std::vector<double>& table, const at::Tensor& t) const {
  const at::Tensor values =
      at::tensor(table, at::TensorOptions().dtype(at::kDouble)).index_select(0, t.to(at::kCPU, at::kLong));
  return values.to(at::kFloat).to(t.device()).unsqueeze(1);
}

at::Tensor DiffusionTrainingLoss::q_sample(const at::Tensor& x_start, const at::Tensor& t,
                                           const at::Tensor& noise) const {
  return pick(sqrt_alphas_cumprod_, t) * x_start + pick(sqrt_one_minus_alphas_cumprod_, t) * noise;
}

DiffusionTrainingLoss::Terms DiffusionTrainingLoss::training_losses(const Model& model, const at::Tensor& x_start,
                                                                    const at::Tensor& t,
                                                                    const at::Tensor& noise) const {
  if (x_start.dim() != 2 || noise.sizes() != x_start.sizes() || t.dim() != 1 || t.size(0) != x_start.size(0))
    throw InvalidArgumentError("diffusion loss: x_start and noise must be [N, C] and t [N], got " +
                               c10::str(x_start.sizes()) + ", " + c10::str(noise.sizes()) + ", " + c10::str(t.sizes()));
  if (t.numel() > 0) {
    const at::Tensor tc = t.to(at::kCPU);
    if (tc.min().item<int64_t>() < 0 || tc.max().item<int64_t>() >= num_timesteps())
      throw InvalidArgumentError("diffusion loss: timesteps must lie in [0, " + std::to_string(num_timesteps()) + ")");
  }
  const int64_t C = x_start.size(1);
  const at::Tensor x_t = q_sample(x_start, t, noise);
  const at::Tensor out = model(x_t, t);
  if (out.dim() != 2 || out.size(0) != x_start.size(0) || out.size(1) != 2 * C)
    throw InvalidArgumentError("diffusion loss: the model output has shape " + c10::str(out.sizes()) + ", expected [" +
                               std::to_string(x_start.size(0)) + ", " + std::to_string(2 * C) + "]");
  const at::Tensor eps = out.narrow(1, 0, C), values = out.narrow(1, C, C);

  // The VB term with the mean from sg(eps): it only trains the variance values.
  const at::Tensor frozen_eps = eps.detach();
  const at::Tensor frac = (values + 1.0) / 2.0;
  const at::Tensor model_log_variance = frac * pick(log_betas_, t) +
                                        (1.0 - frac) * pick(posterior_log_variance_clipped_, t);
  const at::Tensor pred_xstart = pick(sqrt_recip_alphas_cumprod_, t) * x_t -
                                 pick(sqrt_recipm1_alphas_cumprod_, t) * frozen_eps;
  const at::Tensor model_mean = pick(posterior_mean_coef1_, t) * pred_xstart + pick(posterior_mean_coef2_, t) * x_t;
  const at::Tensor true_mean = pick(posterior_mean_coef1_, t) * x_start + pick(posterior_mean_coef2_, t) * x_t;
  const at::Tensor true_log_variance = pick(posterior_log_variance_clipped_, t);
  const at::Tensor kl = normal_kl(true_mean, true_log_variance, model_mean, model_log_variance).mean(1) / kLn2;
  const at::Tensor decoder_nll =
      -discretized_gaussian_log_likelihood(x_start, model_mean, model_log_variance * 0.5).mean(1) / kLn2;

  Terms terms;
  terms.vb = at::where(t == 0, decoder_nll, kl);
  terms.mse = (noise - eps).pow(2).mean(1);
  terms.loss = terms.mse + terms.vb;
  return terms;
}

}  // namespace kvs::training
