// The CPU decode kernel (kernels/cpu/skinny_linear.h) through kernels::linear,
// against a float64 reference, on every instruction-set path this CPU runs
// (AVX-512 and AVX2 on an AVX-512 CPU, AVX2 alone elsewhere; each check names
// its path): every row count it takes (1..16), widths with and without a
// vector tail, f32 and bf16 (rounded as LibTorch rounds), bias, thread splits;
// the run-time dispatch; the cases that must stay at::linear (more rows, f16,
// autograd, switched off, bf16 past a few rows on an AMX CPU); and the core's
// argument errors.
#include <ATen/Functions.h>
#include <ATen/Parallel.h>
#include <ATen/TensorOperators.h>
#include <c10/core/GradMode.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/skinny_linear.h"
#include "kernels/kernel_error.h"
#include "kernels/linear.h"

using namespace kvs;

namespace {

// Restores the process-wide switch whatever a test does.
struct DecodeKernelSwitch {
  bool was = kernels::decode_kernel_enabled();
  ~DecodeKernelSwitch() { kernels::set_decode_kernel_enabled(was); }
};

at::Tensor reference(const at::Tensor& x, const at::Tensor& w, const at::Tensor& bias = {}) {
  at::Tensor y = at::matmul(x.to(at::kDouble), w.to(at::kDouble).t());
  if (bias.defined()) y = y + bias.to(at::kDouble);
  return y;
}

// Restores the process-wide path whatever a test does.
struct DecodePathSwitch {
  kernels::SkinnyLinearIsa was = kernels::skinny_linear_isa();
  ~DecodePathSwitch() { kernels::set_skinny_linear_isa(was); }
};

// The kernel's paths this CPU runs, best first. Empty below AVX2 + FMA, where
// linear() is at::linear and the tests check that fallback instead.
std::vector<kernels::SkinnyLinearIsa> paths_here() {
  std::vector<kernels::SkinnyLinearIsa> paths;
  for (auto isa : {kernels::SkinnyLinearIsa::avx512, kernels::SkinnyLinearIsa::avx2})
    if (kernels::skinny_linear_isa_supported(isa)) paths.push_back(isa);
  return paths;
}

bool kernel_here() { return !paths_here().empty(); }

// Runs `check` once per path this CPU has, with that path chosen; the path's
// name goes into every failure message and the test's output.
template <typename Check>
void on_every_path(const Check& check) {
  DecodePathSwitch restore;
  for (auto isa : paths_here()) {
    ASSERT_TRUE(kernels::set_skinny_linear_isa(isa));
    SCOPED_TRACE(std::string("path ") + kernels::skinny_linear_isa_name(isa));
    std::printf("[ decode kernel path: %s ]\n", kernels::skinny_linear_isa_name(isa));
    check();
  }
}

const uint16_t* bf16_bits(const at::Tensor& t) { return reinterpret_cast<const uint16_t*>(t.data_ptr<at::BFloat16>()); }

// skinny_linear_bf16 over all of x's rows and w's outputs (contiguous tensors).
at::Tensor bf16_kernel(const at::Tensor& x, const at::Tensor& w) {
  const int64_t rows = x.size(0), in = x.size(1), out = w.size(0);
  at::Tensor y = at::empty({rows, out}, x.options());
  kernels::skinny_linear_bf16(bf16_bits(x), rows, in, in, bf16_bits(w), 0, out,
                              reinterpret_cast<uint16_t*>(y.data_ptr<at::BFloat16>()), out);
  return y;
}

}  // namespace

TEST(DecodeLinear, F32MatchesFloat64ForEveryRowCountAndWidth) {
  if (!kernel_here()) GTEST_SKIP() << "this CPU has neither AVX2 + FMA nor AVX-512: linear() is at::linear here";
  on_every_path([&] {
    at::manual_seed(3);
    for (int64_t in : {1, 15, 16, 17, 100, 2048}) {
      for (int64_t out : {1, 7, 9, 33, 301}) {
        at::Tensor w = at::randn({out, in});
        for (int64_t rows = 1; rows <= kernels::kSkinnyLinearMaxRows; ++rows) {
          at::Tensor x = at::randn({rows, in});
          ASSERT_TRUE(kernels::linear_uses_decode_kernel(x, w));
          at::Tensor y = kernels::linear(x, w);
          ASSERT_EQ(y.sizes(), (std::vector<int64_t>{rows, out}));
          ASSERT_EQ(y.scalar_type(), at::kFloat);
          const double err = (y.to(at::kDouble) - reference(x, w)).abs().max().item<double>();
          // f32 sums of `in` products of N(0,1) values: rounding grows like sqrt(in).
          EXPECT_LT(err, 2e-6 * std::sqrt(static_cast<double>(in)) * 4)
              << "in " << in << " out " << out << " rows " << rows;
        }
      }
    }
  });
}

TEST(DecodeLinear, Bf16IsTheRoundedF32SumLikeLibTorch) {
  if (!kernel_here()) GTEST_SKIP() << "this CPU has neither AVX2 + FMA nor AVX-512: linear() is at::linear here";
  on_every_path([&] {
    at::manual_seed(5);
    for (int64_t in : {31, 32, 33, 64, 2048, 5632}) {
      at::Tensor w = at::randn({130, in}).to(at::kBFloat16);
      for (int64_t rows : {1, 2, 3, 8, 16}) {
        at::Tensor x = at::randn({rows, in}).to(at::kBFloat16);
        // The kernel itself at every row count, also where linear() would hand
        // the call to oneDNN's AMX matmul (checked in the next test).
        at::Tensor y = bf16_kernel(x, w);
        // The exact sum rounded once to bf16: the kernel may differ from it by the
        // f32 accumulation's error, which can move the rounding by one bf16 step,
        // and near a zero result (thousands of products cancelling) that error,
        // a few f32 epsilons of the sum of |x_i w_i|, can be more than a bf16
        // step of the tiny value.
        at::Tensor exact = reference(x, w);
        at::Tensor step = exact.abs().clamp_min(1e-3) * (1.0 / 128.0);
        at::Tensor reorder = at::matmul(x.to(at::kDouble).abs(), w.to(at::kDouble).abs().t()) * (4.0 / (1 << 24));
        EXPECT_TRUE(((y.to(at::kDouble) - exact).abs() <= step + reorder).all().item<bool>())
            << "in " << in << " rows " << rows << ": " << kernels::decode_kernel_description(true);
        // And like LibTorch's own bf16 product: within one bf16 step of it, plus
        // what summing in another order in f32 may add (oneDNN's AMX tiles on
        // Intel Xeons sum in another order than its AVX-512 path).
        at::Tensor torch_y = at::linear(x, w);
        EXPECT_TRUE(((y.to(at::kDouble) - torch_y.to(at::kDouble)).abs() <= 2 * step + reorder).all().item<bool>())
            << "in " << in << " rows " << rows;
      }
    }
  });
}

TEST(DecodeLinear, Bf16LeavesManyRowsToOneDnnOnAmxCpus) {
  if (!kernel_here()) GTEST_SKIP() << "this CPU has neither AVX2 + FMA nor AVX-512: linear() is at::linear here";
  on_every_path([&] {
    at::manual_seed(8);
    at::Tensor w = at::randn({64, 96}).to(at::kBFloat16);
    const bool amx = kernels::cpu_has_amx_bf16();
    for (int64_t rows = 1; rows <= kernels::kSkinnyLinearMaxRows; ++rows) {
      at::Tensor x = at::randn({rows, 96}).to(at::kBFloat16);
      const bool kernel = !amx || rows <= kernels::kSkinnyLinearBf16RowsBesideAmx;
      EXPECT_EQ(kernels::linear_uses_decode_kernel(x, w), kernel) << "rows " << rows << ", AMX " << amx;
      // Whichever runs, the numbers are the kernel's or LibTorch's bit for bit.
      EXPECT_TRUE(at::equal(kernels::linear(x, w), kernel ? bf16_kernel(x, w) : at::linear(x, w))) << "rows " << rows;
      // f32 has no AMX path: the kernel takes every row count.
      EXPECT_TRUE(kernels::linear_uses_decode_kernel(x.to(at::kFloat), w.to(at::kFloat))) << "rows " << rows;
    }
    const std::string described = kernels::decode_kernel_description(true);
    EXPECT_EQ(described.find("oneDNN AMX") != std::string::npos, amx) << described;
  });
}

TEST(DecodeLinear, Bf16WithoutTheDotProductInstructionGivesTheSameSums) {
  if (!kernel_here()) GTEST_SKIP() << "this CPU has neither AVX2 + FMA nor AVX-512: linear() is at::linear here";
  on_every_path([&] {
    at::manual_seed(6);
    for (int64_t in : {17, 32, 2048}) {
      at::Tensor w = at::randn({70, in}).to(at::kBFloat16);
      for (int64_t rows : {1, 5, 16}) {
        at::Tensor x = at::randn({rows, in}).to(at::kBFloat16);
        at::Tensor y = at::empty({rows, 70}, x.options());
        kernels::skinny_linear_bf16_widened(bf16_bits(x), rows, in, in, bf16_bits(w), 0, 70,
                                            reinterpret_cast<uint16_t*>(y.data_ptr<at::BFloat16>()), 70);
        at::Tensor exact = reference(x, w);
        at::Tensor step = exact.abs().clamp_min(1e-3) * (1.0 / 128.0);
        EXPECT_TRUE(((y.to(at::kDouble) - exact).abs() <= step).all().item<bool>()) << "in " << in << " rows " << rows;
        // The same products as the native path, summed in another order.
        EXPECT_TRUE(((y.to(at::kDouble) - bf16_kernel(x, w).to(at::kDouble)).abs() <= 2 * step).all().item<bool>());
      }
    }
  });
}

TEST(DecodeLinear, LeadingDimensionsBiasAndNonContiguousInput) {
  if (!kernel_here()) GTEST_SKIP() << "this CPU has neither AVX2 + FMA nor AVX-512: linear() is at::linear here";
  on_every_path([&] {
    at::manual_seed(7);
    at::Tensor w = at::randn({96, 64}), bias = at::randn({96});
    // [2, 1, 64]: a CFG pair, one token each, as the models call it.
    at::Tensor x = at::randn({2, 1, 64});
    at::Tensor y = kernels::linear(x, w, bias);
    ASSERT_EQ(y.sizes(), (std::vector<int64_t>{2, 1, 96}));
    EXPECT_LT((y.to(at::kDouble) - reference(x, w, bias)).abs().max().item<double>(), 1e-4);
    // A transposed view is made contiguous first, not read with the wrong stride.
    at::Tensor xt = at::randn({64, 3}).t();
    ASSERT_FALSE(xt.is_contiguous());
    EXPECT_LT((kernels::linear(xt, w).to(at::kDouble) - reference(xt, w)).abs().max().item<double>(), 1e-4);
  });
}

TEST(DecodeLinear, ThreadSplitsGiveTheSameNumbers) {
  if (!kernel_here()) GTEST_SKIP() << "this CPU has neither AVX2 + FMA nor AVX-512: linear() is at::linear here";
  on_every_path([&] {
    at::manual_seed(11);
    at::Tensor w = at::randn({1000, 256}), x = at::randn({4, 256});
    const int threads = at::get_num_threads();
    at::set_num_threads(1);
    at::Tensor one = kernels::linear(x, w);
    at::set_num_threads(std::max(2, threads));
    at::Tensor many = kernels::linear(x, w);
    at::set_num_threads(threads);
    // Each output is one task's sum in a fixed order: bitwise equal.
    EXPECT_TRUE(at::equal(one, many));
  });
}

TEST(DecodeLinear, OtherCallsStayAtLinear) {
  DecodeKernelSwitch restore;
  at::manual_seed(13);
  at::Tensor w = at::randn({40, 32});
  // More rows than the kernel takes (a prefill), f16, mixed dtypes.
  EXPECT_FALSE(kernels::linear_uses_decode_kernel(at::randn({kernels::kSkinnyLinearMaxRows + 1, 32}), w));
  EXPECT_FALSE(kernels::linear_uses_decode_kernel(at::randn({2, 32}).to(at::kHalf), w.to(at::kHalf)));
  EXPECT_FALSE(kernels::linear_uses_decode_kernel(at::randn({2, 32}).to(at::kBFloat16), w));
  // Autograd: training must get a graph.
  at::Tensor wg = w.clone().set_requires_grad(true);
  {
    c10::AutoGradMode grad(true);
    EXPECT_FALSE(kernels::linear_uses_decode_kernel(at::randn({2, 32}), wg));
    at::Tensor y = kernels::linear(at::randn({2, 32}), wg);
    EXPECT_TRUE(y.requires_grad());
  }
  // Switched off: at::linear, bit for bit.
  kernels::set_decode_kernel_enabled(false);
  EXPECT_FALSE(kernels::linear_uses_decode_kernel(at::randn({2, 32}), w));
  EXPECT_STREQ(kernels::decode_kernel_description(false), "off");
  at::Tensor x = at::randn({2, 32});
  EXPECT_TRUE(at::equal(kernels::linear(x, w), at::linear(x, w)));
  kernels::set_decode_kernel_enabled(true);
  EXPECT_EQ(kernels::linear_uses_decode_kernel(x, w), kernel_here());
}

TEST(DecodeLinear, DispatchTakesTheBestPathThisCpuHas) {
  DecodePathSwitch restore;
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl");
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const kernels::SkinnyLinearIsa expected = avx512 ? kernels::SkinnyLinearIsa::avx512
                                            : avx2 ? kernels::SkinnyLinearIsa::avx2
                                                   : kernels::SkinnyLinearIsa::none;
  std::printf("[ %s: best decode kernel path %s ]\n", kernels::cpu_summary().c_str(),
              kernels::skinny_linear_isa_name(kernels::skinny_linear_best_isa()));
  EXPECT_EQ(kernels::skinny_linear_best_isa(), expected) << kernels::cpu_summary();
  EXPECT_EQ(kernels::skinny_linear_isa_supported(kernels::SkinnyLinearIsa::avx512), avx512);
  EXPECT_EQ(kernels::skinny_linear_isa_supported(kernels::SkinnyLinearIsa::avx2), avx2);
  // With no KVSTUDIO_CPU_DECODE_KERNEL in the environment the best path runs.
  if (std::getenv("KVSTUDIO_CPU_DECODE_KERNEL") == nullptr) {
    EXPECT_EQ(kernels::skinny_linear_isa(), expected);
  }
  // A path this CPU lacks is refused and changes nothing (no illegal instruction later).
  ASSERT_TRUE(kernels::set_skinny_linear_isa(expected));
  if (!avx512) {
    EXPECT_FALSE(kernels::set_skinny_linear_isa(kernels::SkinnyLinearIsa::avx512));
    EXPECT_EQ(kernels::skinny_linear_isa(), expected);
  }
  // `none` is every CPU's: linear() is then at::linear, bit for bit, and the
  // core refuses to run.
  ASSERT_TRUE(kernels::set_skinny_linear_isa(kernels::SkinnyLinearIsa::none));
  at::Tensor w = at::randn({24, 40}), x = at::randn({2, 40});
  EXPECT_FALSE(kernels::linear_uses_decode_kernel(x, w));
  EXPECT_TRUE(at::equal(kernels::linear(x, w), at::linear(x, w)));
  EXPECT_STREQ(kernels::decode_kernel_description(false),
               expected == kernels::SkinnyLinearIsa::none ? "not available on this CPU" : "none (chosen)");
  std::vector<float> buffer(64);
  EXPECT_THROW(kernels::skinny_linear_f32(buffer.data(), 1, 4, 4, buffer.data(), 0, 1, buffer.data(), 1),
               kernels::KernelArgumentError);
  // Each path the CPU has describes itself in the reports.
  for (auto isa : paths_here()) {
    ASSERT_TRUE(kernels::set_skinny_linear_isa(isa));
    EXPECT_TRUE(kernels::linear_uses_decode_kernel(x, w));
    EXPECT_EQ(std::string(kernels::decode_kernel_description(false)),
              isa == kernels::SkinnyLinearIsa::avx2 ? "AVX2" : "AVX-512");
  }
  // The environment switch's spellings.
  kernels::SkinnyLinearIsa parsed = kernels::SkinnyLinearIsa::none;
  EXPECT_TRUE(kernels::parse_skinny_linear_isa("avx2", parsed));
  EXPECT_EQ(parsed, kernels::SkinnyLinearIsa::avx2);
  EXPECT_TRUE(kernels::parse_skinny_linear_isa("avx512", parsed));
  EXPECT_EQ(parsed, kernels::SkinnyLinearIsa::avx512);
  EXPECT_FALSE(kernels::parse_skinny_linear_isa("sse2", parsed));
  EXPECT_FALSE(kernels::parse_skinny_linear_isa(nullptr, parsed));
}

TEST(DecodeLinear, CoreRefusesBadArguments) {
  if (!kernel_here()) GTEST_SKIP() << "this CPU has neither AVX2 + FMA nor AVX-512";
  std::vector<float> x(64), w(64), y(4);
  auto message = [&](auto&& call) {
    try {
      call();
    } catch (const kernels::KernelArgumentError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message([&] { kernels::skinny_linear_f32(x.data(), 17, 4, 4, w.data(), 0, 1, y.data(), 1); }),
            "skinny_linear_f32: rows 17 outside [1, 16]");
  EXPECT_EQ(message([&] { kernels::skinny_linear_f32(x.data(), 1, 4, 8, w.data(), 0, 1, y.data(), 1); }),
            "skinny_linear_f32: in_features must be >= 1 and <= x_stride");
  EXPECT_EQ(message([&] { kernels::skinny_linear_f32(x.data(), 1, 4, 4, w.data(), 0, 2, y.data(), 1); }),
            "skinny_linear_f32: outputs must lie in [0, y_stride)");
  EXPECT_EQ(message([&] { kernels::skinny_linear_f32(x.data(), 1, 4, 4, nullptr, 0, 1, y.data(), 1); }),
            "skinny_linear_f32: missing buffer");
}
