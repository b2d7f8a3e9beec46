// The CPU ragged attention kernel against a dense per-segment reference written
// with at:: ops in float64: uniform and very uneven lengths (0 and full segments),
// grouped-query heads, causal masking over gapped positions, several head sizes,
// probs and key_mass, argument errors, and slots past a segment's length never read.
#include <ATen/Functions.h>
#include <ATen/Parallel.h>
#include <ATen/TensorOperators.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "kernels/cpu/ragged_attention.h"
#include "kernels/cpu/ragged_attention_torch.h"
#include "kernels/cpu/skinny_linear.h"

using namespace kvs;
using kvs::kernels::ragged_attention;
using kvs::kernels::RaggedAttentionResult;

namespace {

// A layer of a ragged cache as KvStore holds it, with queries for one step.
struct RaggedCase {
  at::Tensor keys, values;     // [rows, kv_heads, capacity, D]
  at::Tensor lengths;          // [rows, kv_heads]
  at::Tensor positions;        // [rows, kv_heads, capacity], -1 past the length
  at::Tensor queries;          // [rows, n_head, T, D]
  at::Tensor query_positions;  // [T]
  double scale = 1.0;
};

// Segment s keeps `lengths[s]` entries whose positions are an increasing subset
// of 0..span-1 (gaps as after evictions; position 0, the class-token sink, is
// always kept when the segment is not empty).
RaggedCase make_case(int64_t rows, int64_t n_head, int64_t kv_heads, int64_t capacity, int64_t d,
                     const std::vector<int64_t>& lengths, int64_t span, const std::vector<int64_t>& query_positions,
                     uint64_t seed) {
  at::manual_seed(seed);
  RaggedCase c;
  c.keys = at::randn({rows, kv_heads, capacity, d});
  c.values = at::randn({rows, kv_heads, capacity, d});
  c.lengths = at::tensor(lengths, at::kLong).view({rows, kv_heads});
  c.positions = at::full({rows, kv_heads, capacity}, -1, at::kLong);
  for (int64_t s = 0; s < rows * kv_heads; ++s) {
    const int64_t len = lengths[s];
    if (len == 0) continue;
    at::Tensor picked = (at::randperm(span - 1, at::kLong) + 1).narrow(0, 0, len - 1);
    at::Tensor pos = std::get<0>(at::sort(at::cat({at::zeros({1}, at::kLong), picked})));
    c.positions.view({rows * kv_heads, capacity})[s].narrow(0, 0, len).copy_(pos);
  }
  const int64_t t = static_cast<int64_t>(query_positions.size());
  c.queries = at::randn({rows, n_head, t, d});
  c.query_positions = at::tensor(query_positions, at::kLong);
  c.scale = 1.0 / std::sqrt(static_cast<double>(d));
  return c;
}

// Dense reference, one segment at a time over its valid entries only, in float64.
RaggedAttentionResult reference(const RaggedCase& c, bool causal) {
  const int64_t rows = c.keys.size(0), kv_heads = c.keys.size(1), capacity = c.keys.size(2);
  const int64_t n_head = c.queries.size(1), t = c.queries.size(2), d = c.queries.size(3);
  const int64_t group = n_head / kv_heads;
  const auto f64 = at::TensorOptions().dtype(at::kDouble);
  RaggedAttentionResult r;
  r.out = at::zeros({rows, n_head, t, d}, f64);
  r.probs = at::zeros({rows, n_head, t, capacity}, f64);
  r.key_mass = at::zeros({rows, kv_heads, capacity}, f64);
  for (int64_t row = 0; row < rows; ++row) {
    for (int64_t g = 0; g < kv_heads; ++g) {
      const int64_t len = c.lengths[row][g].item<int64_t>();
      at::Tensor k = c.keys[row][g].narrow(0, 0, len).to(at::kDouble);            // [len, D]
      at::Tensor v = c.values[row][g].narrow(0, 0, len).to(at::kDouble);          // [len, D]
      at::Tensor q = c.queries[row].narrow(0, g * group, group).to(at::kDouble);  // [G, T, D]
      at::Tensor scores = at::matmul(q, k.t()) * c.scale;                         // [G, T, len]
      if (causal) {
        at::Tensor kpos = c.positions[row][g].narrow(0, 0, len);
        at::Tensor hidden = kpos.unsqueeze(0) > c.query_positions.unsqueeze(1);  // [T, len]
        scores = scores.masked_fill(hidden, -std::numeric_limits<double>::infinity());
      }
      // A query that sees nothing gets 0/0 = NaN from softmax; the kernel defines it as zeros.
      at::Tensor p = at::nan_to_num(at::softmax(scores, -1), 0.0);
      r.out[row].narrow(0, g * group, group).copy_(at::matmul(p, v));
      r.probs[row].narrow(0, g * group, group).narrow(2, 0, len).copy_(p);
      r.key_mass[row][g].narrow(0, 0, len).copy_(p.sum(at::IntArrayRef{0, 1}));
    }
  }
  return r;
}

// |actual - expected| <= 1e-5 * (|expected| + max|expected|): 1e-5 relative, with
// elements near zero measured against the tensor's magnitude.
void expect_close(const at::Tensor& actual, const at::Tensor& expected, const std::string& what) {
  ASSERT_TRUE(actual.defined()) << what;
  ASSERT_EQ(actual.sizes(), expected.sizes()) << what;
  EXPECT_EQ(actual.scalar_type(), at::kFloat) << what;
  at::Tensor a = actual.to(at::kDouble), e = expected.to(at::kDouble);
  EXPECT_TRUE(at::isfinite(a).all().item<bool>()) << what << ": non-finite values";
  if (e.numel() == 0) return;
  const double magnitude = e.abs().max().item<double>();
  at::Tensor allowed = 1e-5 * (e.abs() + magnitude);
  at::Tensor excess = (a - e).abs() - allowed;
  EXPECT_LE(excess.max().item<double>(), 0.0)
      << what << ": max abs error " << (a - e).abs().max().item<double>() << " (magnitude " << magnitude << ")";
}

RaggedAttentionResult run_kernel(const RaggedCase& c, bool causal, bool want_probs = true, bool want_mass = true) {
  return ragged_attention(c.queries, c.query_positions, c.keys, c.values, c.lengths, c.positions, causal, c.scale,
                          want_probs, want_mass);
}

// Compares both builds of the kernel this CPU runs (AVX2 and the x86-64
// baseline on an AVX2 CPU) with the reference; each failure names its build.
void expect_matches_reference(const RaggedCase& c, bool causal, const std::string& what) {
  const kernels::SkinnyLinearIsa was = kernels::skinny_linear_isa();
  RaggedAttentionResult want = reference(c, causal);
  for (auto isa : {kernels::skinny_linear_best_isa(), kernels::SkinnyLinearIsa::none}) {
    ASSERT_TRUE(kernels::set_skinny_linear_isa(isa));
    const std::string path = what + " [" + kernels::ragged_attention_cpu_path() + "]";
    RaggedAttentionResult got = run_kernel(c, causal);
    expect_close(got.out, want.out, path + " out");
    expect_close(got.probs, want.probs, path + " probs");
    expect_close(got.key_mass, want.key_mass, path + " key_mass");
    if (isa == kernels::SkinnyLinearIsa::none) break;
  }
  kernels::set_skinny_linear_isa(was);
}

std::vector<int64_t> uneven_lengths(int64_t segments, int64_t capacity) {
  // Empty and full segments, plus a spread in between.
  std::vector<int64_t> lengths(static_cast<size_t>(segments));
  const int64_t pattern[] = {0, capacity, 1, capacity - 1, capacity / 2, 3, capacity / 3, 2};
  for (int64_t s = 0; s < segments; ++s) lengths[s] = pattern[s % 8];
  return lengths;
}

// Runs `f` and returns the KernelArgumentError message ("" if nothing was thrown).
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const kernels::KernelArgumentError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(RaggedAttention, TheBuildFollowsTheCpuPath) {
  const kernels::SkinnyLinearIsa was = kernels::skinny_linear_isa();
  ASSERT_TRUE(kernels::set_skinny_linear_isa(kernels::SkinnyLinearIsa::none));
  EXPECT_STREQ(kernels::ragged_attention_cpu_path(), "x86-64 baseline");
  if (kernels::skinny_linear_isa_supported(kernels::SkinnyLinearIsa::avx2)) {
    ASSERT_TRUE(kernels::set_skinny_linear_isa(kernels::SkinnyLinearIsa::avx2));
    EXPECT_STREQ(kernels::ragged_attention_cpu_path(), "AVX2");
  }
  std::printf("[ ragged attention with the best path: %s ]\n",
              (kernels::set_skinny_linear_isa(kernels::skinny_linear_best_isa()),
               kernels::ragged_attention_cpu_path()));
  kernels::set_skinny_linear_isa(was);
}

TEST(RaggedAttention, HandComputedSegment) {
  // One segment, head_dim 1: scores 0 and ln 3 -> weights 1/4, 3/4 -> 0.25*4 + 0.75*8 = 7.
  const float keys[] = {0.0f, std::log(3.0f), 99.0f};
  const float values[] = {4.0f, 8.0f, 99.0f};
  const int64_t lengths[] = {2};
  const int64_t positions[] = {0, 1, -1};
  const float queries[] = {1.0f};
  const int64_t query_positions[] = {5};
  float out[1] = {-1.0f}, probs[3] = {-1.0f, -1.0f, -1.0f}, mass[3] = {-1.0f, -1.0f, -1.0f};
  kernels::RaggedKvView kv{keys, values, lengths, positions, 1, 1, 3, 1};
  kernels::RaggedAttentionArgs args;
  args.queries = queries;
  args.n_head = 1;
  args.T = 1;
  args.query_positions = query_positions;
  args.causal = true;
  args.scale = 1.0f;
  args.out = out;
  args.probs = probs;
  args.key_mass = mass;
  kernels::ragged_attention_cpu(kv, args);
  EXPECT_NEAR(out[0], 7.0f, 1e-5f);
  EXPECT_NEAR(probs[0], 0.25f, 1e-6f);
  EXPECT_NEAR(probs[1], 0.75f, 1e-6f);
  EXPECT_EQ(probs[2], 0.0f);
  EXPECT_NEAR(mass[0], 0.25f, 1e-6f);
  EXPECT_NEAR(mass[1], 0.75f, 1e-6f);
  EXPECT_EQ(mass[2], 0.0f);
}

TEST(RaggedAttention, UniformLengthsMatchDenseReference) {
  for (int64_t d : {32, 64, 100}) {
    RaggedCase c = make_case(3, 4, 4, 24, d, std::vector<int64_t>(12, 24), 24, {23}, 1);
    expect_matches_reference(c, /*causal=*/true, "uniform D=" + std::to_string(d));
    expect_matches_reference(c, /*causal=*/false, "uniform non-causal D=" + std::to_string(d));
  }
}

TEST(RaggedAttention, UnevenLengthsWithGroupedQueryHeads) {
  // n_head 8 over kv_heads 2: query heads 0-3 read kv head 0, 4-7 kv head 1.
  for (int64_t d : {32, 64, 100}) {
    const int64_t rows = 4, kv_heads = 2, capacity = 37;
    RaggedCase c = make_case(rows, 8, kv_heads, capacity, d, uneven_lengths(rows * kv_heads, capacity), 90, {95}, 2);
    expect_matches_reference(c, /*causal=*/true, "uneven D=" + std::to_string(d));
  }
}

TEST(RaggedAttention, Bf16CachesAreAttendedInFloat32) {
  // A bf16 cache (Janus-Pro and LlamaGen at --dtype bf16): the kernel widens each
  // segment as it reads it, so it must match the float64 reference over the same
  // bf16 values, uneven lengths, grouped heads and causal masking included.
  for (int64_t d : {64, 100}) {
    const int64_t rows = 4, kv_heads = 2, capacity = 37;
    RaggedCase c = make_case(rows, 8, kv_heads, capacity, d, uneven_lengths(rows * kv_heads, capacity), 90, {95}, 9);
    c.keys = c.keys.to(at::kBFloat16);
    c.values = c.values.to(at::kBFloat16);
    expect_matches_reference(c, /*causal=*/true, "bf16 D=" + std::to_string(d));
    expect_matches_reference(c, /*causal=*/false, "bf16 non-causal D=" + std::to_string(d));
  }
}

TEST(RaggedAttention, CausalMaskOverGappedPositionsWithSeveralQueries) {
  // Keys sit on an increasing subset of 0..59 (gaps from evictions). The queries
  // are not contiguous either; the first sees only the entries at positions <= 2,
  // and a segment whose first kept position is past 2 leaves it with nothing.
  for (int64_t d : {32, 64, 100}) {
    const int64_t rows = 2, kv_heads = 2, capacity = 40;
    RaggedCase c = make_case(rows, 8, kv_heads, capacity, d, {40, 17, 0, 29}, 60, {2, 20, 21, 44, 58}, 3);
    // Make one segment start after position 2 so that query 0 sees nothing there.
    at::Tensor seg = c.positions[0][1].narrow(0, 0, 17);
    seg.copy_(at::arange(0, 17, at::kLong) * 3 + 5);
    expect_matches_reference(c, /*causal=*/true, "causal T=5 D=" + std::to_string(d));
    expect_matches_reference(c, /*causal=*/false, "bidirectional T=5 D=" + std::to_string(d));

    RaggedAttentionResult got = run_kernel(c, /*causal=*/true);
    // Query 0 (position 2) of the heads reading segment (row 0, kv head 1): no visible entry.
    EXPECT_TRUE(at::equal(got.out[0].narrow(0, 4, 4).select(1, 0), at::zeros({4, d})));
    EXPECT_TRUE(at::equal(got.probs[0].narrow(0, 4, 4).select(1, 0), at::zeros({4, capacity})));
  }
}

TEST(RaggedAttention, ProbsSumToOneAndKeyMassSumsGroupAndQueries) {
  const int64_t rows = 2, n_head = 8, kv_heads = 2, capacity = 16, t = 3;
  RaggedCase c = make_case(rows, n_head, kv_heads, capacity, 32, {16, 5, 9, 1}, 40, {30, 35, 39}, 4);
  RaggedAttentionResult got = run_kernel(c, /*causal=*/false);
  // Every query sees at least one entry, so every probs row sums to 1.
  expect_close(got.probs.sum(-1), at::ones({rows, n_head, t}), "probs row sums");
  at::Tensor summed = got.probs.view({rows, kv_heads, n_head / kv_heads * t, capacity}).sum(2);
  expect_close(got.key_mass, summed, "key_mass vs summed probs");
  EXPECT_NEAR(got.key_mass.sum().item<double>(), static_cast<double>(rows * n_head * t), 1e-3);

  // The optional outputs change nothing else.
  RaggedAttentionResult bare = run_kernel(c, /*causal=*/false, /*want_probs=*/false, /*want_mass=*/false);
  EXPECT_FALSE(bare.probs.defined());
  EXPECT_FALSE(bare.key_mass.defined());
  EXPECT_TRUE(at::equal(bare.out, got.out));
}

TEST(RaggedAttention, EntriesPastEachLengthAreNeverRead) {
  const int64_t rows = 3, kv_heads = 2, capacity = 20, d = 64;
  RaggedCase c = make_case(rows, 4, kv_heads, capacity, d, uneven_lengths(rows * kv_heads, capacity), 50, {49, 50}, 5);
  RaggedAttentionResult clean = run_kernel(c, /*causal=*/true);
  // Poison every slot past the length: keys and values NaN, positions that would
  // be visible to every query.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t g = 0; g < kv_heads; ++g) {
      const int64_t len = c.lengths[row][g].item<int64_t>();
      c.keys[row][g].narrow(0, len, capacity - len).fill_(nan);
      c.values[row][g].narrow(0, len, capacity - len).fill_(nan);
      c.positions[row][g].narrow(0, len, capacity - len).fill_(0);
    }
  RaggedAttentionResult got = run_kernel(c, /*causal=*/true);
  EXPECT_TRUE(at::isfinite(got.out).all().item<bool>());
  EXPECT_TRUE(at::isfinite(got.probs).all().item<bool>());
  EXPECT_TRUE(at::isfinite(got.key_mass).all().item<bool>());
  EXPECT_TRUE(at::equal(got.out, clean.out));
  EXPECT_TRUE(at::equal(got.probs, clean.probs));
  EXPECT_TRUE(at::equal(got.key_mass, clean.key_mass));
  expect_close(got.out, reference(c, true).out, "poisoned out");
}

TEST(RaggedAttention, ResultDoesNotDependOnThreadCount) {
  const int64_t rows = 8, kv_heads = 4, capacity = 64;
  RaggedCase c = make_case(rows, 8, kv_heads, capacity, 64, uneven_lengths(rows * kv_heads, capacity), 100, {99}, 6);
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  RaggedAttentionResult one = run_kernel(c, true);
  at::set_num_threads(std::max(2, threads));
  RaggedAttentionResult many = run_kernel(c, true);
  at::set_num_threads(threads);
  EXPECT_TRUE(at::equal(one.out, many.out));
  EXPECT_TRUE(at::equal(one.key_mass, many.key_mass));
}

TEST(RaggedAttention, NonContiguousInputsAreAccepted) {
  RaggedCase c = make_case(2, 4, 2, 12, 32, {12, 3, 0, 7}, 30, {29}, 7);
  RaggedCase t = c;
  // Same values, transposed storage.
  t.queries = c.queries.transpose(0, 1).contiguous().transpose(0, 1);
  t.keys = c.keys.transpose(2, 3).contiguous().transpose(2, 3);
  ASSERT_FALSE(t.queries.is_contiguous());
  ASSERT_FALSE(t.keys.is_contiguous());
  EXPECT_TRUE(at::equal(run_kernel(t, true).out, run_kernel(c, true).out));
}

TEST(RaggedAttention, RejectsInvalidArguments) {
  RaggedCase c = make_case(2, 8, 2, 10, 32, {10, 4, 0, 7}, 30, {29}, 8);
  auto call = [](const RaggedCase& x) { run_kernel(x, true); };

  RaggedCase bad = c;
  bad.queries = at::randn({2, 6, 1, 32});  // 6 query heads over 4 kv heads
  bad.keys = at::randn({2, 4, 10, 32});
  bad.values = at::randn({2, 4, 10, 32});
  bad.lengths = at::zeros({2, 4}, at::kLong);
  bad.positions = at::zeros({2, 4, 10}, at::kLong);
  EXPECT_NE(error_of([&] { call(bad); }).find("n_head 6 is not a positive multiple of kv_heads 4"), std::string::npos);

  bad = c;
  bad.lengths = c.lengths.clone();
  bad.lengths[1][0] = 11;
  EXPECT_NE(error_of([&] { call(bad); }).find("segment (row 1, kv head 0) has length 11, expected 0..10"),
            std::string::npos);
  bad.lengths[1][0] = -1;
  EXPECT_NE(error_of([&] { call(bad); }).find("has length -1"), std::string::npos);

  bad = c;
  bad.values = at::randn({2, 2, 10, 16});
  EXPECT_NE(error_of([&] { call(bad); }).find("values has shape [2, 2, 10, 16], expected [2, 2, 10, 32]"),
            std::string::npos);
  bad = c;
  bad.keys = c.keys.to(at::kDouble);
  EXPECT_NE(error_of([&] { call(bad); }).find("keys has dtype Double, expected Float or BFloat16"), std::string::npos);
  bad = c;
  bad.keys = c.keys.to(at::kBFloat16);
  EXPECT_NE(error_of([&] { call(bad); }).find("values has dtype Float, expected BFloat16"), std::string::npos);
  bad = c;
  bad.lengths = c.lengths.to(at::kInt);
  EXPECT_NE(error_of([&] { call(bad); }).find("lengths has dtype Int, expected Long"), std::string::npos);
  bad = c;
  bad.query_positions = at::tensor({1, 2}, at::kLong);
  EXPECT_NE(error_of([&] { call(bad); }).find("query_positions has shape [2], expected [1]"), std::string::npos);
  bad = c;
  bad.queries = at::randn({2, 8, 32});
  EXPECT_NE(error_of([&] { call(bad); }).find("queries has shape [2, 8, 32], expected [rows, n_head, T, head_dim]"),
            std::string::npos);
  bad = c;
  bad.positions = at::zeros({2, 2, 9}, at::kLong);
  EXPECT_NE(error_of([&] { call(bad); }).find("positions has shape [2, 2, 9], expected [2, 2, 10]"), std::string::npos);

  // The raw kernel checks sizes and buffers itself (the CUDA twin's callers share it).
  float out[4] = {};
  const float data[8] = {};  // two slots of head_dim 4 (the packed case below reads slot 1)
  const int64_t lengths[1] = {1}, positions[1] = {0}, query_positions[1] = {0};
  kernels::RaggedKvView kv{data, data, lengths, positions, 1, 1, 1, 4};
  kernels::RaggedAttentionArgs args;
  args.queries = data;
  args.n_head = 1;
  args.T = 1;
  args.query_positions = query_positions;
  args.scale = 0.5f;
  args.out = out;
  EXPECT_EQ(error_of([&] { kernels::ragged_attention_cpu(kv, args); }), "");
  kernels::RaggedKvView negative = kv;
  negative.capacity = -1;
  EXPECT_NE(error_of([&] { kernels::ragged_attention_cpu(negative, args); }).find("capacity is -1"), std::string::npos);
  kernels::RaggedAttentionArgs negative_t = args;
  negative_t.T = -2;
  EXPECT_NE(error_of([&] { kernels::ragged_attention_cpu(kv, negative_t); }).find("T is -2"), std::string::npos);
  kernels::RaggedAttentionArgs no_out = args;
  no_out.out = nullptr;
  EXPECT_NE(error_of([&] { kernels::ragged_attention_cpu(kv, no_out); }).find("out is null"), std::string::npos);
  kernels::RaggedKvView no_heads = kv;
  no_heads.kv_heads = 0;
  EXPECT_NE(error_of([&] { kernels::ragged_attention_cpu(no_heads, args); }).find("not a positive multiple"),
            std::string::npos);
  // Packed layout: a segment may not reach past the packed buffers.
  const int64_t offsets[1] = {1};
  kernels::RaggedKvView packed = kv;
  packed.offsets = offsets;
  packed.total_slots = 1;
  EXPECT_NE(error_of([&] {
              kernels::ragged_attention_cpu(packed, args);
            }).find("segment (row 0, kv head 0) spans slots 1..2, outside the 1 slots of the packed buffers"),
            std::string::npos);
  packed.total_slots = 2;
  EXPECT_EQ(error_of([&] { kernels::ragged_attention_cpu(packed, args); }), "");
}
