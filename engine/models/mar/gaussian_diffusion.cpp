#include "engine/models/mar/gaussian_diffusion.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>

#include "engine/core/errors.h"
#include "engine/models/mar/mar_random.h"

namespace kvs::mar {
namespace {

constexpr double kPi = 3.141592653589793;

// Python: math.cos((t + 0.008) / 1.008 * math.pi / 2) ** 2
double cosine_alpha_bar(double t) { return std::pow(std::cos((t + 0.008) / 1.008 * kPi / 2.0), 2.0); }

int64_t parse_count(const std::string& text, const std::string& whole) {
  size_t used = 0;
  int64_t value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size())
    throw InvalidArgumentError("diffusion steps '" + whole + "': '" + text + "' is not a whole number");
  return value;
}

// A coefficient as _extract_into_tensor hands it over: float64 -> float32.
at::Scalar f32(double v) { return at::Scalar(static_cast<double>(static_cast<float>(v))); }

}  // namespace

std::vector<double> cosine_betas(int64_t steps, double max_beta) {
  std::vector<double> betas;
  betas.reserve(static_cast<size_t>(steps));
  for (int64_t i = 0; i < steps; ++i) {
    const double t1 = static_cast<double>(i) / static_cast<double>(steps);
    const double t2 = static_cast<double>(i + 1) / static_cast<double>(steps);
    betas.push_back(std::min(1.0 - cosine_alpha_bar(t2) / cosine_alpha_bar(t1), max_beta));
  }
  return betas;
}

std::vector<int64_t> space_timesteps(int64_t num_timesteps, const std::string& section_counts) {
  if (section_counts.rfind("ddim", 0) == 0) {
    const int64_t desired = parse_count(section_counts.substr(4), section_counts);
    for (int64_t stride = 1; stride < num_timesteps; ++stride) {
      if ((num_timesteps + stride - 1) / stride != desired) continue;
      std::vector<int64_t> out;
      for (int64_t t = 0; t < num_timesteps; t += stride) out.push_back(t);
      return out;
    }
    throw InvalidArgumentError("diffusion steps '" + section_counts + "': cannot create exactly " +
                               std::to_string(num_timesteps) + " steps with an integer stride");
  }
  std::vector<int64_t> counts;
  std::stringstream ss(section_counts);
  std::string item;
  while (std::getline(ss, item, ',')) counts.push_back(parse_count(item, section_counts));
  if (counts.empty()) throw InvalidArgumentError("diffusion steps: empty respacing");
  const int64_t sections = static_cast<int64_t>(counts.size());
  const int64_t size_per = num_timesteps / sections, extra = num_timesteps % sections;
  int64_t start = 0;
  std::set<int64_t> steps;
  for (int64_t i = 0; i < sections; ++i) {
    const int64_t size = size_per + (i < extra ? 1 : 0);
    const int64_t count = counts[static_cast<size_t>(i)];
    if (count < 0 || size < count)
      throw InvalidArgumentError("diffusion steps '" + section_counts + "': cannot divide a section of " +
                                 std::to_string(size) + " steps into " + std::to_string(count));
    const double stride = count <= 1 ? 1.0 : static_cast<double>(size - 1) / static_cast<double>(count - 1);
    double cur = 0.0;
    for (int64_t k = 0; k < count; ++k) {
      steps.insert(start + static_cast<int64_t>(std::nearbyint(cur)));  // Python round(): ties to even
      cur += stride;
    }
    start += size;
  }
  return {steps.begin(), steps.end()};
}

GaussianDiffusion::GaussianDiffusion(const std::string& timestep_respacing, int64_t diffusion_steps) {
  if (diffusion_steps < 2) throw InvalidArgumentError("diffusion needs at least 2 base steps");
  const std::vector<double> base_betas = cosine_betas(diffusion_steps);
  const std::string respacing = timestep_respacing.empty() ? std::to_string(diffusion_steps) : timestep_respacing;
  const std::vector<int64_t> use = space_timesteps(diffusion_steps, respacing);
  if (use.size() < 2)
    throw InvalidArgumentError("diffusion steps '" + respacing +
                               "': at least 2 sampling steps are needed (the learned-range variance of the first "
                               "step borrows the second's)");
  // SpacedDiffusion: new betas from the base cumulative products at the kept steps.
  double cumprod = 1.0, last = 1.0;
  size_t next = 0;
  for (int64_t i = 0; i < diffusion_steps && next < use.size(); ++i) {
    cumprod *= 1.0 - base_betas[static_cast<size_t>(i)];
    if (use[next] != i) continue;
    betas_.push_back(1.0 - cumprod / last);
    last = cumprod;
    timestep_map_.push_back(i);
    ++next;
  }
  // GaussianDiffusion.__init__ on the respaced betas (numpy float64).
  const size_t n = betas_.size();
  std::vector<double> alphas(n), alphas_cumprod_prev(n), posterior_variance(n);
  alphas_cumprod_.resize(n);
  double running = 1.0;
  for (size_t i = 0; i < n; ++i) {
    alphas[i] = 1.0 - betas_[i];
    running *= alphas[i];
    alphas_cumprod_[i] = running;
    alphas_cumprod_prev[i] = i == 0 ? 1.0 : alphas_cumprod_[i - 1];
  }
  for (size_t i = 0; i < n; ++i) {
    const double ac = alphas_cumprod_[i], acp = alphas_cumprod_prev[i];
    log_betas_.push_back(std::log(betas_[i]));
    sqrt_recip_alphas_cumprod_.push_back(std::sqrt(1.0 / ac));
    sqrt_recipm1_alphas_cumprod_.push_back(std::sqrt(1.0 / ac - 1.0));
    posterior_variance[i] = betas_[i] * (1.0 - acp) / (1.0 - ac);
    posterior_mean_coef1_.push_back(betas_[i] * std::sqrt(acp) / (1.0 - ac));
    posterior_mean_coef2_.push_back((1.0 - acp) * std::sqrt(alphas[i]) / (1.0 - ac));
  }
  // log(append(posterior_variance[1], posterior_variance[1:])): the first entry (0) is clipped.
  for (size_t i = 0; i < n; ++i)
    posterior_log_variance_clipped_.push_back(std::log(posterior_variance[i == 0 ? 1 : i]));
}

GaussianDiffusion::Step GaussianDiffusion::p_sample(const ModelFn& model, const at::Tensor& x, int64_t t,
                                                    const at::Tensor& noise, double temperature) const {
  if (t < 0 || t >= num_timesteps())
    throw InvalidArgumentError("diffusion step " + std::to_string(t) + " is outside [0, " +
                               std::to_string(num_timesteps()) + ")");
  const size_t i = static_cast<size_t>(t);
  const int64_t channels = x.size(1);
  at::Tensor original_t = at::full({x.size(0)}, timestep_map_[i],
                                   at::TensorOptions().dtype(at::kLong).device(x.device()));
  at::Tensor out = model(x, t, original_t);
  if (out.dim() != 2 || out.size(0) != x.size(0) || out.size(1) != 2 * channels)
    throw InvalidArgumentError("diffusion model output has shape " + c10::str(out.sizes()) + ", expected [" +
                               std::to_string(x.size(0)) + ", " + std::to_string(2 * channels) + "]");
  at::Tensor eps = out.narrow(1, 0, channels), values = out.narrow(1, channels, channels);
  // LEARNED_RANGE: values in [-1, 1] interpolate between the clipped posterior and beta log-variances.
  at::Tensor frac = (values + 1) / 2;
  at::Tensor log_variance = frac * f32(log_betas_[i]) + (1 - frac) * f32(posterior_log_variance_clipped_[i]);
  at::Tensor pred_xstart = x * f32(sqrt_recip_alphas_cumprod_[i]) - eps * f32(sqrt_recipm1_alphas_cumprod_[i]);
  at::Tensor mean = pred_xstart * f32(posterior_mean_coef1_[i]) + x * f32(posterior_mean_coef2_[i]);
  if (t == 0) return {mean, pred_xstart};  // no noise at the last step (nonzero_mask = 0)
  at::Tensor sample = mean + at::exp(log_variance * 0.5) * noise.to(x.device(), at::kFloat) * temperature;
  return {sample, pred_xstart};
}

at::Tensor GaussianDiffusion::p_sample_loop(const ModelFn& model, const at::Tensor& initial, MarRandom& rng,
                                            double temperature, const std::function<bool()>& cancelled) const {
  at::Tensor x = initial;
  for (int64_t t = num_timesteps() - 1; t >= 0; --t) {
    if (cancelled && cancelled()) throw CancelledError();
    at::Tensor noise = rng.normal(x.sizes()).to(x.device());
    x = p_sample(model, x, t, noise, temperature).sample;
  }
  return x;
}

}  // namespace kvs::mar
