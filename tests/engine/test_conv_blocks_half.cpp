// The image decoders' convolutions and matmuls in half precision on the CPU
// (conv_blocks::conv2d / bmm): computed in float32 and rounded back to the
// operands' dtype, so the result keeps the run's dtype and equals LibTorch's
// own half-precision product up to the order of the float32 sums.
#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <gtest/gtest.h>

#include "engine/models/blocks/conv_blocks.h"

using namespace kvs;

namespace {

// |a - b| within one rounding step of the dtype plus what summing `terms`
// products in another float32 order may add, relative to the larger magnitude.
void expect_within_a_rounding(const at::Tensor& a, const at::Tensor& b, double step, const char* what) {
  at::Tensor ad = a.to(at::kDouble), bd = b.to(at::kDouble);
  at::Tensor allowed = (ad.abs().maximum(bd.abs()) + 1e-2) * step;
  EXPECT_TRUE(((ad - bd).abs() <= allowed).all().item<bool>()) << what;
}

}  // namespace

TEST(ConvBlocksHalfOnCpu, ConvolutionKeepsTheDtypeAndMatchesLibTorchs) {
  at::manual_seed(4);
  for (auto dtype : {at::kBFloat16, at::kHalf}) {
    const double step = dtype == at::kBFloat16 ? 1.0 / 128 : 1.0 / 1024;
    at::Tensor x = at::randn({2, 8, 9, 7}).to(dtype), w = (at::randn({6, 8, 3, 3}) * 0.2).to(dtype);
    at::Tensor b = at::randn({6}).to(dtype);
    for (int64_t stride : {1, 2}) {
      at::Tensor got = conv_blocks::conv2d(x, w, b, stride, 1);
      EXPECT_EQ(got.scalar_type(), dtype);
      // Exactly the float32 convolution of the same values, rounded once.
      at::Tensor f32 = at::conv2d(x.to(at::kFloat), w.to(at::kFloat), b.to(at::kFloat), {stride, stride}, {1, 1});
      EXPECT_TRUE(at::equal(got, f32.to(dtype)));
      // And LibTorch's own half-precision convolution, a rounding or two apart.
      expect_within_a_rounding(got, at::conv2d(x, w, b, {stride, stride}, {1, 1}), 2 * step, "conv2d");
    }
    // Without a bias, as the 1x1 convolutions of some checkpoints.
    EXPECT_TRUE(at::equal(conv_blocks::conv2d(x, w, at::Tensor(), 1, 0),
                          at::conv2d(x.to(at::kFloat), w.to(at::kFloat), at::Tensor(), at::IntArrayRef{1, 1},
                                     at::IntArrayRef{0, 0})
                              .to(dtype)));
  }
}

TEST(ConvBlocksHalfOnCpu, BatchedMatmulKeepsTheDtype) {
  at::manual_seed(5);
  at::Tensor a = at::randn({2, 5, 16}).to(at::kBFloat16), b = at::randn({2, 16, 3}).to(at::kBFloat16);
  at::Tensor got = conv_blocks::bmm(a, b);
  EXPECT_EQ(got.scalar_type(), at::kBFloat16);
  EXPECT_TRUE(at::equal(got, at::bmm(a.to(at::kFloat), b.to(at::kFloat)).to(at::kBFloat16)));
  expect_within_a_rounding(got, at::bmm(a, b), 2.0 / 128, "bmm");
  // float32 is LibTorch's call unchanged.
  at::Tensor af = a.to(at::kFloat), bf = b.to(at::kFloat);
  EXPECT_TRUE(at::equal(conv_blocks::bmm(af, bf), at::bmm(af, bf)));
  at::Tensor x = at::randn({1, 4, 5, 5}), w = at::randn({3, 4, 3, 3}), bias = at::randn({3});
  EXPECT_TRUE(at::equal(conv_blocks::conv2d(x, w, bias, 1, 1), at::conv2d(x, w, bias, {1, 1}, {1, 1})));
}
