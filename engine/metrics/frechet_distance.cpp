#include "engine/metrics/frechet_distance.h"

#include <ATen/Functions.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/core/errors.h"
#include "engine/metrics/symmetric_eigen.h"

namespace kvs {

namespace {

std::vector<double> values_of(const at::Tensor& t) {
  const at::Tensor c = t.detach().to(at::kCPU, at::kDouble).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

at::Tensor tensor_of(std::vector<double> v, std::vector<int64_t> shape) {
  return at::tensor(v, at::TensorOptions().dtype(at::kDouble)).view(shape);
}

// x y for n x n row-major matrices, each element summed in index order.
std::vector<double> matmul(const std::vector<double>& x, const std::vector<double>& y, size_t n) {
  std::vector<double> z(n * n, 0.0);
  for (size_t i = 0; i < n; ++i)
    for (size_t k = 0; k < n; ++k) {
      const double xik = x[i * n + k];
      for (size_t j = 0; j < n; ++j) z[i * n + j] += xik * y[k * n + j];
    }
  return z;
}

}  // namespace

FeatureStats feature_stats(const at::Tensor& features) {
  if (features.dim() != 2 || features.size(0) < 2)
    throw InvalidArgumentError("Fréchet distance: need a [N, F] feature matrix with N >= 2");
  const size_t rows = static_cast<size_t>(features.size(0)), f = static_cast<size_t>(features.size(1));
  const std::vector<double> x = values_of(features);
  std::vector<double> mean(f, 0.0), cov(f * f, 0.0);
  for (size_t r = 0; r < rows; ++r)
    for (size_t i = 0; i < f; ++i) mean[i] += x[r * f + i];
  for (double& m : mean) m /= static_cast<double>(rows);
  std::vector<double> centred(f);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t i = 0; i < f; ++i) centred[i] = x[r * f + i] - mean[i];
    for (size_t i = 0; i < f; ++i)
      for (size_t j = i; j < f; ++j) cov[i * f + j] += centred[i] * centred[j];
  }
  for (size_t i = 0; i < f; ++i)
    for (size_t j = i; j < f; ++j) cov[j * f + i] = cov[i * f + j] /= static_cast<double>(rows - 1);
  FeatureStats s;
  s.count = static_cast<int64_t>(rows);
  s.mean = tensor_of(std::move(mean), {static_cast<int64_t>(f)});
  s.cov = tensor_of(std::move(cov), {static_cast<int64_t>(f), static_cast<int64_t>(f)});
  return s;
}

double frechet_distance(const FeatureStats& a, const FeatureStats& b) {
  if (a.mean.numel() != b.mean.numel())
    throw InvalidArgumentError("Fréchet distance: feature sizes differ (" + std::to_string(a.mean.numel()) + " vs " +
                               std::to_string(b.mean.numel()) + ")");
  const size_t f = static_cast<size_t>(a.mean.numel());
  const std::vector<double> mean_a = values_of(a.mean), mean_b = values_of(b.mean);
  const std::vector<double> cov_a = values_of(a.cov), cov_b = values_of(b.cov);
  if (cov_a.size() != f * f || cov_b.size() != f * f)
    throw InvalidArgumentError("Fréchet distance: a covariance is not " + std::to_string(f) + " x " +
                               std::to_string(f));
  // S_a^(1/2) from the symmetric eigendecomposition (eigenvalues clamped at 0).
  std::vector<double> evecs;
  const std::vector<double> evals = symmetric_eigen(cov_a, static_cast<int64_t>(f), &evecs);
  std::vector<double> scaled(f * f);  // V diag(sqrt(lambda))
  for (size_t i = 0; i < f; ++i)
    for (size_t j = 0; j < f; ++j) scaled[i * f + j] = evecs[i * f + j] * std::sqrt(std::max(evals[j], 0.0));
  std::vector<double> sqrt_a(f * f, 0.0);  // (V diag(sqrt(lambda))) V^T
  for (size_t i = 0; i < f; ++i)
    for (size_t j = 0; j < f; ++j) {
      double s = 0;
      for (size_t k = 0; k < f; ++k) s += scaled[i * f + k] * evecs[j * f + k];
      sqrt_a[i * f + j] = s;
    }
  std::vector<double> m = matmul(matmul(sqrt_a, cov_b, f), sqrt_a, f);
  for (size_t i = 0; i < f; ++i)
    for (size_t j = i + 1; j < f; ++j) m[i * f + j] = m[j * f + i] = 0.5 * (m[i * f + j] + m[j * f + i]);
  double tr_sqrt = 0;
  for (double lambda : symmetric_eigen(m, static_cast<int64_t>(f))) tr_sqrt += std::sqrt(std::max(lambda, 0.0));
  double d = 0;
  for (size_t i = 0; i < f; ++i) {
    const double diff = mean_a[i] - mean_b[i];
    d += diff * diff;
  }
  for (size_t i = 0; i < f; ++i) d += cov_a[i * f + i] + cov_b[i * f + i];
  d -= 2.0 * tr_sqrt;
  return std::max(d, 0.0);
}

double frechet_distance(const at::Tensor& features_a, const at::Tensor& features_b) {
  return frechet_distance(feature_stats(features_a), feature_stats(features_b));
}

}  // namespace kvs
