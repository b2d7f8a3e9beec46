#include "engine/metrics/frechet_distance.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <algorithm>

#include "engine/core/errors.h"

namespace kvs {

FeatureStats feature_stats(const at::Tensor& features) {
  if (features.dim() != 2 || features.size(0) < 2)
    throw InvalidArgumentError("Fréchet distance: need a [N, F] feature matrix with N >= 2");
  at::Tensor x = features.detach().to(at::kCPU, at::kDouble);
  FeatureStats s;
  s.count = x.size(0);
  s.mean = x.mean(0);
  at::Tensor centred = x - s.mean;
  s.cov = at::matmul(centred.t(), centred) / static_cast<double>(s.count - 1);
  return s;
}

double frechet_distance(const FeatureStats& a, const FeatureStats& b) {
  if (a.mean.numel() != b.mean.numel())
    throw InvalidArgumentError("Fréchet distance: feature sizes differ (" + std::to_string(a.mean.numel()) + " vs " +
                               std::to_string(b.mean.numel()) + ")");
  const at::Tensor diff = a.mean - b.mean;
  // S_a^(1/2) from the symmetric eigendecomposition (eigenvalues clamped at 0).
  auto [evals_a, evecs_a] = at::linalg_eigh(a.cov);
  at::Tensor sqrt_a = at::matmul(evecs_a * evals_a.clamp_min(0).sqrt(), evecs_a.t());
  at::Tensor m = at::matmul(at::matmul(sqrt_a, b.cov), sqrt_a);
  m = (m + m.t()) * 0.5;
  const double tr_sqrt = at::linalg_eigvalsh(m).clamp_min(0).sqrt().sum().item<double>();
  const double d = diff.dot(diff).item<double>() + a.cov.trace().item<double>() + b.cov.trace().item<double>() -
                   2.0 * tr_sqrt;
  return std::max(d, 0.0);
}

double frechet_distance(const at::Tensor& features_a, const at::Tensor& features_b) {
  return frechet_distance(feature_stats(features_a), feature_stats(features_b));
}

}  // namespace kvs
