#pragma once
// The Fréchet distance between two Gaussians fitted to feature sets — FID's
// formula (Heusel et al. 2017), here on the evaluation classifier's penultimate
// features ("demo-FID"):
//   d^2 = |mu_a - mu_b|^2 + tr(S_a) + tr(S_b) - 2 tr((S_a S_b)^(1/2))
// Covariances are unbiased (N - 1), as numpy.cov in pytorch-fid. The trace of the
// matrix square root is computed in float64 as the sum of sqrt(eigenvalues) of the
// symmetric PSD matrix S_a^(1/2) S_b S_a^(1/2) (same spectrum as S_a S_b), which
// avoids scipy's non-symmetric sqrtm and its complex round-off. Every step is
// plain double arithmetic in a fixed order (symmetric_eigen.h, not LAPACK), so
// the distance is the same bits whatever the thread count or CPU: a merged
// sharded bench reports the one-process figure exactly.
#include <ATen/core/Tensor.h>

#include <cstdint>

namespace kvs {

struct FeatureStats {
  at::Tensor mean;  // [F] float64
  at::Tensor cov;   // [F, F] float64
  int64_t count = 0;
};

// features [N, F] (N >= 2).
FeatureStats feature_stats(const at::Tensor& features);
double frechet_distance(const FeatureStats& a, const FeatureStats& b);
double frechet_distance(const at::Tensor& features_a, const at::Tensor& features_b);

}  // namespace kvs
