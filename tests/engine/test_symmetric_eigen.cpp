// The Jacobi eigensolver behind demo-FID against LibTorch's LAPACK, and the
// property it is there for: the Fréchet distance does not change with the
// number of threads (a merged sharded bench equals the one-process bench).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "engine/core/errors.h"
#include "engine/metrics/frechet_distance.h"
#include "engine/metrics/symmetric_eigen.h"

namespace kvs {
namespace {

std::vector<double> values_of(const at::Tensor& t) {
  const at::Tensor c = t.contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

at::Tensor random_symmetric(int64_t n, uint64_t seed, int64_t rank = -1) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  const at::Tensor x = at::normal(0.0, 1.0, {n, rank < 0 ? n : rank}, gen, at::TensorOptions().dtype(at::kDouble));
  return rank < 0 ? (x + x.t()) * 0.5 : at::matmul(x, x.t());  // indefinite, or PSD of the given rank
}

TEST(SymmetricEigen, MatchesLapackAndReconstructsTheMatrix) {
  for (const int64_t n : {1, 2, 7, 64}) {
    const at::Tensor a = random_symmetric(n, 10 + static_cast<uint64_t>(n));
    std::vector<double> vectors;
    const std::vector<double> ours = symmetric_eigen(values_of(a), n, &vectors);
    const std::vector<double> lapack = values_of(at::linalg_eigvalsh(a));
    ASSERT_EQ(ours.size(), static_cast<size_t>(n));
    const double norm = a.norm().item<double>();
    for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(ours[i], lapack[i], 1e-12 * norm) << "n " << n << " eigenvalue " << i;
    // A = V diag(lambda) V^T and V is orthonormal.
    const at::Tensor v = at::tensor(vectors, at::TensorOptions().dtype(at::kDouble)).view({n, n});
    const at::Tensor lambda = at::tensor(ours, at::TensorOptions().dtype(at::kDouble));
    EXPECT_LT((at::matmul(v * lambda, v.t()) - a).abs().max().item<double>(), 1e-12 * norm) << n;
    EXPECT_LT((at::matmul(v.t(), v) - at::eye(n, at::kDouble)).abs().max().item<double>(), 1e-12) << n;
  }
}

TEST(SymmetricEigen, RankDeficientMatricesHaveZerosAndSizesAreChecked) {
  // A covariance of 5 samples in 32 dimensions: 27 eigenvalues are 0 up to round-off.
  const at::Tensor a = random_symmetric(32, 3, 5);
  const std::vector<double> ours = symmetric_eigen(values_of(a), 32);
  const double largest = ours.back();
  for (int i = 0; i < 27; ++i) EXPECT_LT(std::fabs(ours[static_cast<size_t>(i)]), 1e-13 * largest) << i;
  EXPECT_GT(ours[27], 1e-3 * largest);
  EXPECT_TRUE(symmetric_eigen({}, 0).empty());
  EXPECT_THROW(symmetric_eigen({1.0, 2.0, 3.0}, 2), InvalidArgumentError);
  EXPECT_THROW(symmetric_eigen({1.0, NAN, NAN, 1.0}, 2), InvalidArgumentError);
}

TEST(SymmetricEigen, FrechetDistanceIsTheSameBitsAtAnyThreadCount) {
  // Few images, many features: singular covariances, where LAPACK's thread-
  // dependent rounding moved the distance by 1e-7.
  at::Generator gen = at::detail::createCPUGenerator(5);
  const at::Tensor images = at::normal(0.0, 1.0, {4, 128}, gen, at::TensorOptions().dtype(at::kDouble));
  const at::Tensor reference = at::normal(0.2, 1.5, {40, 128}, gen, at::TensorOptions().dtype(at::kDouble));
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  const double one = frechet_distance(images, reference);
  at::set_num_threads(4);
  const double four = frechet_distance(images, reference);
  at::set_num_threads(threads);
  EXPECT_EQ(one, four);
  EXPECT_GT(one, 0.0);
}

}  // namespace
}  // namespace kvs
