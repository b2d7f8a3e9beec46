#pragma once
// The training loss of MAR's diffusion head (LTH14/mar models/diffloss.py
// DiffLoss.forward over diffusion/gaussian_diffusion.py training_losses), for
// the configuration MAR trains with: create_diffusion(timestep_respacing="",
// noise_schedule="cosine") — 1000 cosine steps, EPSILON prediction, LEARNED_RANGE
// variance, LossType.MSE (no rescaling):
//   x_t  = sqrt(abar_t) x_0 + sqrt(1 - abar_t) noise                 (q_sample)
//   out  = model(x_t, t) = [eps_hat, v]                               ([N, 2C])
//   mse  = mean_c (noise - eps_hat)^2
//   vb   = the variational-bound term of p(x_{t-1} | x_t) with the mean built from
//          sg(eps_hat) (the "frozen_out" stop-gradient: the VB trains only the
//          variance interpolation v), in bits: mean_c KL(q(x_{t-1}|x_t,x_0) || p) / ln 2,
//          or at t = 0 the discretised Gaussian decoder NLL (1/255 bins, as upstream
//          applies it to latents too) / ln 2
//   loss = mse + vb   (per row; DiffLoss averages it over the masked rows)
// The schedule is the engine's GaussianDiffusion (float64, as numpy), and each
// coefficient is cast to float32 after it is picked for a row, as
// _extract_into_tensor does.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <vector>

namespace kvs::training {

class DiffusionTrainingLoss {
 public:
  explicit DiffusionTrainingLoss(int64_t diffusion_steps = 1000);

  int64_t num_timesteps() const { return static_cast<int64_t>(betas_.size()); }

  // x_start, noise [N, C] float32; t [N] int64 in [0, num_timesteps).
  at::Tensor q_sample(const at::Tensor& x_start, const at::Tensor& t, const at::Tensor& noise) const;

  struct Terms {
    at::Tensor loss, mse, vb;  // [N] each
  };
  // `model(x_t, t)` -> [N, 2C] (the head's output: eps, variance values).
  using Model = std::function<at::Tensor(const at::Tensor& x_t, const at::Tensor& t)>;
  Terms training_losses(const Model& model, const at::Tensor& x_start, const at::Tensor& t,
                        const at::Tensor& noise) const;

 private:
  at::Tensor pick(const std::vector<double>& table, const at::Tensor& t) const;  // [N, 1] float32
  std::vector<double> betas_, log_betas_, sqrt_alphas_cumprod_, sqrt_one_minus_alphas_cumprod_;
  std::vector<double> sqrt_recip_alphas_cumprod_, sqrt_recipm1_alphas_cumprod_;
  std::vector<double> posterior_mean_coef1_, posterior_mean_coef2_, posterior_log_variance_clipped_;
};

// diffusion_utils.py: KL(N(mean1, e^logvar1) || N(mean2, e^logvar2)) elementwise, and
// the discretised Gaussian log-likelihood (nats) of x in [-1, 1] with 255 bins.
at::Tensor normal_kl(const at::Tensor& mean1, const at::Tensor& logvar1, const at::Tensor& mean2,
                     const at::Tensor& logvar2);
at::Tensor discretized_gaussian_log_likelihood(const at::Tensor& x, const at::Tensor& means,
                                               const at::Tensor& log_scales);

}  // namespace kvs::training
