// The CPU fast paths of the transformers' small operations (RMSNorm, LlamaGen's
// 2-D rotary embedding) against the operation-by-operation LibTorch expressions
// they replace: equal bit for bit, in float32 and bf16, for a decode step's one
// or two rows, a batch's sixteen and a prefill's hundreds, and for strided views.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "engine/models/blocks/transformer_blocks.h"
#include "engine/models/llamagen/rope_2d.h"

namespace kvs {
namespace {

void expect_same_bits(const at::Tensor& fast, const at::Tensor& reference) {
  ASSERT_EQ(fast.scalar_type(), reference.scalar_type());
  ASSERT_EQ(fast.sizes(), reference.sizes());
  // Compared as raw bytes: equal values are not enough (the fast path must not
  // differ even in the last bit, or a decode's tokens could change).
  const at::Tensor a = fast.contiguous().view(at::kByte), b = reference.contiguous().view(at::kByte);
  EXPECT_TRUE(at::equal(a, b)) << "largest difference "
                               << (fast.to(at::kDouble) - reference.to(at::kDouble)).abs().max().item<double>();
}

class RmsNormFastPath : public ::testing::TestWithParam<at::ScalarType> {};

TEST_P(RmsNormFastPath, EqualsTheReferenceBitForBit) {
  const at::ScalarType dtype = GetParam();
  at::manual_seed(7);
  for (int64_t rows : {1, 2, 16, 577}) {
    for (double eps : {1e-5, 1e-6}) {
      // Values spanning several orders of magnitude, as a residual stream's do.
      const at::Tensor x = (at::randn({rows, 1, 768}) * at::exp(at::randn({rows, 1, 1}) * 3)).to(dtype);
      const at::Tensor w = (1 + 0.2 * at::randn({768})).to(dtype);
      const at::Tensor fast = transformer_blocks::rms_norm(x, w, eps);
      expect_same_bits(fast, transformer_blocks::rms_norm_reference(x, w, eps));
      EXPECT_EQ(fast.sizes(), x.sizes());
    }
  }
}

TEST_P(RmsNormFastPath, TakesStridedInputs) {
  const at::ScalarType dtype = GetParam();
  at::manual_seed(8);
  const at::Tensor wide = at::randn({3, 2, 1000}).to(dtype);
  const at::Tensor x = wide.narrow(-1, 100, 256);  // rows 1000 elements apart
  const at::Tensor w = at::randn({256}).to(dtype);
  expect_same_bits(transformer_blocks::rms_norm(x, w, 1e-5), transformer_blocks::rms_norm_reference(x, w, 1e-5));
}

TEST(RmsNormFastPath, KeepsAutogradOnTheReferencePath) {
  const at::Tensor x = at::randn({2, 64}).requires_grad_(true);
  const at::Tensor w = at::ones({64});
  const at::Tensor y = transformer_blocks::rms_norm(x, w, 1e-5);
  ASSERT_TRUE(y.requires_grad());
  y.sum().backward();
  EXPECT_TRUE(x.grad().defined());
}

INSTANTIATE_TEST_SUITE_P(Dtypes, RmsNormFastPath, ::testing::Values(at::kFloat, at::kBFloat16));

class RopeFastPath : public ::testing::TestWithParam<at::ScalarType> {};

TEST_P(RopeFastPath, EqualsTheReferenceBitForBitOnQkvSlices) {
  const at::ScalarType dtype = GetParam();
  at::manual_seed(9);
  const int64_t grid = 24, head_dim = 64, heads = 12;
  const at::Tensor table = llamagen::rope_2d_table(grid, head_dim, 10000.0, 1);
  for (int64_t t : {1, 5, 577}) {
    for (int64_t b : {1, 2, 16}) {
      // q and k as the model takes them: slices of the fused qkv projection.
      const at::Tensor qkv = (at::randn({b, t, 3 * heads * head_dim}) * 4).to(dtype);
      const at::Tensor rows = table.narrow(0, 0, t);
      for (int64_t part : {0, 1}) {
        const at::Tensor x = qkv.narrow(-1, part * heads * head_dim, heads * head_dim).reshape({b, t, heads, head_dim});
        if (b * t > 1) {
          ASSERT_FALSE(x.is_contiguous());
        }
        const at::Tensor fast = llamagen::apply_rope(x, rows);
        expect_same_bits(fast, llamagen::apply_rope_reference(x, rows));
      }
    }
  }
  // A decode step's one row, at a later position.
  const at::Tensor x = at::randn({2, 1, heads, head_dim}).to(dtype);
  expect_same_bits(llamagen::apply_rope(x, table.narrow(0, 300, 1)),
                   llamagen::apply_rope_reference(x, table.narrow(0, 300, 1)));
}

INSTANTIATE_TEST_SUITE_P(Dtypes, RopeFastPath, ::testing::Values(at::kFloat, at::kBFloat16));

}  // namespace
}  // namespace kvs
