#pragma once
// The sampler of MAR's diffusion head: LTH14/mar diffusion/ (create_diffusion
// with noise_schedule "cosine", learn_sigma -> LEARNED_RANGE variance, EPSILON
// prediction, 1000 base steps; respace.py SpacedDiffusion / space_timesteps;
// gaussian_diffusion.py p_sample / p_sample_loop), ported to match the official
// code numerically: the schedule arrays are float64 (numpy in upstream) and each
// coefficient is cast to float32 after it is picked for a timestep, as
// _extract_into_tensor does; the model receives the original (un-respaced)
// timestep ids.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kvs::mar {

class MarRandom;

// betas_for_alpha_bar(steps, alpha_bar(t) = cos((t + 0.008) / 1.008 * pi / 2)^2, max_beta 0.999).
std::vector<double> cosine_betas(int64_t steps, double max_beta = 0.999);

// respace.py space_timesteps(num_timesteps, section_counts): "N" or "N1,N2,..."
// (equal sections, Python round() of a float stride) or "ddimN"; sorted ascending.
// Throws InvalidArgumentError for counts that do not fit.
std::vector<int64_t> space_timesteps(int64_t num_timesteps, const std::string& section_counts);

class GaussianDiffusion {
 public:
  // create_diffusion(timestep_respacing, noise_schedule="cosine", diffusion_steps).
  explicit GaussianDiffusion(const std::string& timestep_respacing, int64_t diffusion_steps = 1000);

  int64_t num_timesteps() const { return static_cast<int64_t>(timestep_map_.size()); }
  // Respaced timestep -> the original timestep id the model is given.
  const std::vector<int64_t>& timestep_map() const { return timestep_map_; }
  // The respaced schedule (float64), for tests and inspection.
  const std::vector<double>& betas() const { return betas_; }
  const std::vector<double>& alphas_cumprod() const { return alphas_cumprod_; }
  const std::vector<double>& posterior_log_variance_clipped() const { return posterior_log_variance_clipped_; }

  // The model of one reverse step: x [N, C] and the original timestep ids [N]
  // (int64, on x's device) -> [N, 2C] (eps, variance values). `t` is the respaced
  // step, for callers that cache per step.
  using ModelFn = std::function<at::Tensor(const at::Tensor& x, int64_t t, const at::Tensor& original_t)>;

  struct Step {
    at::Tensor sample;       // x_{t-1}
    at::Tensor pred_xstart;  // predicted x_0
  };
  // p_sample(model, x, t (every row at respaced step t), clip_denoised=False,
  // temperature): `noise` is the step's th.randn_like(x) draw.
  Step p_sample(const ModelFn& model, const at::Tensor& x, int64_t t, const at::Tensor& noise,
                double temperature) const;

  // p_sample_loop from x_T = `initial` over t = T-1 .. 0, one rng.normal(x.sizes())
  // per step (moved to x's device). `cancelled` (may be empty) is checked before
  // every step and throws CancelledError.
  at::Tensor p_sample_loop(const ModelFn& model, const at::Tensor& initial, MarRandom& rng, double temperature,
                           const std::function<bool()>& cancelled = {}) const;

 private:
  std::vector<int64_t> timestep_map_;
  std::vector<double> betas_, log_betas_, alphas_cumprod_, sqrt_recip_alphas_cumprod_, sqrt_recipm1_alphas_cumprod_;
  std::vector<double> posterior_log_variance_clipped_, posterior_mean_coef1_, posterior_mean_coef2_;
};

}  // namespace kvs::mar
