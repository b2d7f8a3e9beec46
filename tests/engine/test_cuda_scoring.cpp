// The CUDA scoring and compaction kernels (kernels/cuda/segment_scoring.h) against
// their CPU twins, in the style of llama.cpp's test-backend-ops: random ragged
// packed layouts (empty and one-entry segments, gaps between segments, NaN in
// every slot past a length, grouped query heads, CFG pairs) in f32, bf16 and f16,
// every kernel mode (key mass with and without causality, candidate-restricted
// mean, max and average pooling, compaction). Skipped, with the reason, where no
// CUDA device is present or the build has no CUDA kernels; the twins themselves
// are checked against the policies in test_segment_scoring.cpp, everywhere.
#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "engine/core/device.h"
#include "kernels/cpu/segment_scoring.h"
#if KVSTUDIO_CUDA_KERNELS
#include "kernels/cuda/segment_scoring.h"
#endif

namespace kvs {
namespace {

#if KVSTUDIO_CUDA_KERNELS

using kernels::KeyScoreReduction;
using kernels::ScoreElementType;

// Why the GPU comparisons cannot run here, or empty when they can.
std::string skip_reason() {
  if (!kernels::cuda_scoring_available()) return "no CUDA device here: the CUDA scoring kernels are not run";
  if (!cuda_available()) return "LibTorch sees no CUDA device: the test cannot place its buffers on one";
  return "";
}

struct Layout {
  std::string name;
  int64_t rows, kv_heads, n_head, head_dim;
  int64_t max_length;  // segment lengths are drawn from 0..max_length
  int64_t queries;     // T
  bool cfg_pairs;      // rows r and r + rows/2 hold the same positions and lengths
};

std::vector<Layout> layouts() {
  return {
      {"decode-gqa", 3, 2, 8, 64, 40, 1, false},    {"block-mha", 2, 4, 4, 32, 25, 6, false},
      {"cfg-pairs", 4, 2, 4, 64, 33, 3, true},      {"one-head-long", 1, 1, 2, 128, 300, 2, false},
      {"line-queries", 2, 2, 4, 16, 70, 24, false},
  };
}

at::ScalarType torch_type(ScoreElementType type) {
  switch (type) {
    case ScoreElementType::bf16: return at::kBFloat16;
    case ScoreElementType::f16: return at::kHalf;
    default: return at::kFloat;
  }
}

// A random packed layer: lengths (with three segments or more per half, segment 0
// empty and the half's last one a single entry),
// gaps between segments, NaN keys past every length, increasing positions with
// gaps, candidate flags, queries.
struct PackedCase {
  at::Tensor keys, values;           // [slots, D] in the element type
  at::Tensor starts, lengths;        // int32 [segments]
  at::Tensor positions, candidates;  // int64 / uint8 [segments, stride]
  at::Tensor queries;                // float [rows, n_head, T, D]
  std::vector<int64_t> query_positions;
  int64_t stride = 0, slots = 0;
};

PackedCase make_case(const Layout& l, ScoreElementType type, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  const int64_t segments = l.rows * l.kv_heads, decide = l.cfg_pairs ? l.rows / 2 : l.rows;
  PackedCase c;
  std::vector<int32_t> starts, lengths(static_cast<size_t>(segments));
  for (int64_t s = 0; s < decide * l.kv_heads; ++s)
    lengths[s] = static_cast<int32_t>(at::randint(0, l.max_length + 1, {1}, gen).item<int64_t>());
  if (decide * l.kv_heads >= 3) {  // an empty and a one-entry segment among random ones
    lengths[0] = 0;
    lengths[decide * l.kv_heads - 1] = 1;
  }
  for (int64_t s = decide * l.kv_heads; s < segments; ++s) lengths[s] = lengths[s - decide * l.kv_heads];
  int32_t next = 0;
  for (int64_t s = 0; s < segments; ++s) {
    starts.push_back(next);
    next += lengths[s] + static_cast<int32_t>(at::randint(0, 4, {1}, gen).item<int64_t>());  // slack
  }
  c.slots = next;
  c.stride = l.max_length + 2;
  c.keys = at::full({c.slots, l.head_dim}, std::numeric_limits<float>::quiet_NaN());
  c.values = at::full({c.slots, l.head_dim}, std::numeric_limits<float>::quiet_NaN());
  c.positions = at::full({segments, c.stride}, -1, at::kLong);
  const int64_t span = 3 * l.max_length + 4;
  for (int64_t s = 0; s < segments; ++s) {
    if (lengths[s] == 0) continue;
    c.keys.narrow(0, starts[s], lengths[s]).copy_(at::randn({lengths[s], l.head_dim}, gen));
    c.values.narrow(0, starts[s], lengths[s]).copy_(at::randn({lengths[s], l.head_dim}, gen));
    const int64_t source = s < decide * l.kv_heads ? s : s - decide * l.kv_heads;
    if (source != s) {
      c.positions[s].copy_(c.positions[source]);
    } else {
      const at::Tensor picked = std::get<0>(at::sort(at::randperm(span, gen).narrow(0, 0, lengths[s])));
      c.positions[s].narrow(0, 0, lengths[s]).copy_(picked);
    }
  }
  c.keys = c.keys.to(torch_type(type));
  c.values = c.values.to(torch_type(type));
  c.starts = at::tensor(starts, at::kInt);
  c.lengths = at::tensor(lengths, at::kInt);
  c.candidates = (at::rand({segments, c.stride}, gen) < 0.6).to(at::kByte);
  c.queries = at::randn({l.rows, l.n_head, l.queries, l.head_dim}, gen).to(torch_type(type)).to(at::kFloat);
  for (int64_t t = 0; t < l.queries; ++t) c.query_positions.push_back(span / 2 + t * 3);
  return c;
}

struct Mode {
  std::string name;
  bool causal, candidates;
  KeyScoreReduction reduction;
};

// Runs attention_key_scores on the CPU twin and on the GPU; returns {gpu, cpu}.
std::pair<at::Tensor, at::Tensor> run_scores(const Layout& l, const PackedCase& c, ScoreElementType type,
                                             const Mode& mode) {
  const at::Device gpu(at::kCUDA, 0);
  const int64_t segments = l.rows * l.kv_heads;
  auto make = [&](const at::Tensor& keys, const at::Tensor& starts, const at::Tensor& lengths,
                  const at::Tensor& positions) {
    kernels::SegmentKeys k;
    k.keys = keys.data_ptr();
    k.element_type = type;
    k.starts = starts.data_ptr<int32_t>();
    k.lengths = lengths.data_ptr<int32_t>();
    k.rows = l.rows;
    k.kv_heads = l.kv_heads;
    k.head_dim = l.head_dim;
    k.stride = c.stride;
    k.total_slots = c.slots;
    k.positions = positions.data_ptr<int64_t>();
    return k;
  };
  auto args_for = [&](const at::Tensor& queries, const at::Tensor& qpos, const at::Tensor& candidates,
                      at::Tensor& scores) {
    kernels::KeyScoreArgs a;
    a.queries = queries.data_ptr<float>();
    a.n_head = l.n_head;
    a.T = l.queries;
    a.causal = mode.causal;
    a.query_positions = qpos.data_ptr<int64_t>();
    a.candidates = mode.candidates ? candidates.data_ptr<uint8_t>() : nullptr;
    a.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(l.head_dim)));
    a.reduction = mode.reduction;
    a.scores = scores.data_ptr<float>();
    return a;
  };
  const at::Tensor qpos = at::tensor(c.query_positions, at::kLong);
  at::Tensor cpu_scores = at::full({segments, c.stride}, 5.0f);
  kernels::attention_key_scores_cpu(make(c.keys, c.starts, c.lengths, c.positions),
                                    args_for(c.queries, qpos, c.candidates, cpu_scores));
  const at::Tensor keys = c.keys.to(gpu), starts = c.starts.to(gpu), lengths = c.lengths.to(gpu);
  const at::Tensor positions = c.positions.to(gpu), queries = c.queries.to(gpu), qpos_gpu = qpos.to(gpu);
  const at::Tensor candidates = c.candidates.to(gpu);
  at::Tensor gpu_scores = at::full({segments, c.stride}, 5.0f, at::TensorOptions().device(gpu));
  kernels::attention_key_scores_cuda(make(keys, starts, lengths, positions),
                                     args_for(queries, qpos_gpu, candidates, gpu_scores), nullptr);
  kernels::cuda_scoring_synchronize(nullptr);
  return {gpu_scores.cpu(), cpu_scores};
}

const ScoreElementType kTypes[] = {ScoreElementType::f32, ScoreElementType::bf16, ScoreElementType::f16};

TEST(CudaScoring, KeyScoresMatchTheCpuTwinOnRaggedLayouts) {
  const std::string reason = skip_reason();
  if (!reason.empty()) GTEST_SKIP() << reason;
  const Mode modes[] = {{"mass-causal", true, false, KeyScoreReduction::Sum},
                        {"mass-whole", false, false, KeyScoreReduction::Sum},
                        {"mid-saliency", false, true, KeyScoreReduction::Mean},
                        {"window-votes-candidates", true, true, KeyScoreReduction::Sum}};
  for (ScoreElementType type : kTypes) {
    for (const Layout& l : layouts()) {
      for (const Mode& mode : modes) {
        SCOPED_TRACE(l.name + " " + mode.name + " " + c10::toString(torch_type(type)));
        const PackedCase c = make_case(l, type, 100 + static_cast<uint64_t>(l.max_length));
        auto [gpu, cpu] = run_scores(l, c, type, mode);
        EXPECT_TRUE(at::isfinite(gpu).all().item<bool>());
        // Both read the same rounded keys in float32; only the summation order differs.
        const double terms = mode.reduction == KeyScoreReduction::Sum ? l.queries * l.n_head / l.kv_heads : 1.0;
        const double err = (gpu - cpu).abs().max().item<double>();
        EXPECT_LE(err, 2e-5 * terms) << "largest difference " << err;
        // Slots past every length are exactly 0 (written, never read).
        for (int64_t s = 0; s < c.lengths.size(0); ++s) {
          const int64_t n = c.lengths[s].item<int64_t>();
          EXPECT_TRUE((gpu[s].narrow(0, n, c.stride - n) == 0).all().item<bool>()) << "segment " << s;
        }
      }
    }
  }
}

TEST(CudaScoring, PoolingMatchesTheCpuTwin) {
  const std::string reason = skip_reason();
  if (!reason.empty()) GTEST_SKIP() << reason;
  at::Generator gen = at::detail::createCPUGenerator(5);
  for (int64_t stride : {1, 7, 130, 300}) {
    for (int64_t kernel : {1, 3, 7, 9}) {
      for (kernels::VotePooling pooling : {kernels::VotePooling::Max, kernels::VotePooling::Average}) {
        SCOPED_TRACE("stride " + std::to_string(stride) + " kernel " + std::to_string(kernel));
        const int64_t segments = 5;
        const at::Tensor votes = at::rand({segments, stride}, gen) * 3;
        const at::Tensor candidates = (at::rand({segments, stride}, gen) < 0.5).to(at::kByte);
        auto run = [&](const at::Tensor& v, const at::Tensor& f, at::Tensor& out, bool on_gpu) {
          kernels::PoolArgs a;
          a.votes = v.data_ptr<float>();
          a.candidates = f.data_ptr<uint8_t>();
          a.segments = segments;
          a.stride = stride;
          a.kernel = kernel;
          a.pooling = pooling;
          a.pooled = out.data_ptr<float>();
          if (on_gpu) kernels::pool_candidate_scores_cuda(a, nullptr);
          else kernels::pool_candidate_scores_cpu(a);
        };
        at::Tensor cpu = at::zeros({segments, stride});
        run(votes, candidates, cpu, false);
        const at::Tensor v = votes.cuda(), f = candidates.cuda();
        at::Tensor gpu = at::zeros({segments, stride}, at::TensorOptions().device(at::kCUDA));
        run(v, f, gpu, true);
        kernels::cuda_scoring_synchronize(nullptr);
        gpu = gpu.cpu();
        EXPECT_TRUE(at::equal(at::isfinite(gpu), at::isfinite(cpu)));
        const at::Tensor finite = at::isfinite(cpu);
        if (finite.any().item<bool>()) {
          EXPECT_LE((gpu.masked_select(finite) - cpu.masked_select(finite)).abs().max().item<double>(), 1e-6);
        }
      }
    }
  }
}

TEST(CudaScoring, CompactionMatchesTheCpuTwinBitForBit) {
  const std::string reason = skip_reason();
  if (!reason.empty()) GTEST_SKIP() << reason;
  for (ScoreElementType type : kTypes) {
    for (const Layout& l : layouts()) {
      SCOPED_TRACE(l.name + " " + c10::toString(torch_type(type)));
      const PackedCase c = make_case(l, type, 200 + static_cast<uint64_t>(l.max_length));
      at::Generator gen = at::detail::createCPUGenerator(9);
      const int64_t segments = l.rows * l.kv_heads;
      const at::Tensor keep = (at::rand({segments, c.stride}, gen) < 0.5).to(at::kByte);
      // The destination: every segment moved to a fresh packed layout of its own length.
      const at::Tensor dst_starts = (at::cumsum(c.lengths, 0) - c.lengths).to(at::kInt);
      const int64_t dst_slots = c.lengths.sum().item<int64_t>() + 1;
      auto run = [&](const at::Device& device, bool on_gpu) {
        const at::Tensor keys = c.keys.to(device), values = c.values.to(device);
        const at::Tensor src_starts = c.starts.to(device), dst = dst_starts.to(device);
        const at::Tensor lengths = c.lengths.to(device), flags = keep.to(device), positions = c.positions.to(device);
        at::Tensor dst_keys = at::zeros({dst_slots, l.head_dim}, keys.options());
        at::Tensor dst_values = at::zeros({dst_slots, l.head_dim}, values.options());
        at::Tensor new_lengths = at::full({segments}, -7, lengths.options());
        at::Tensor new_positions = at::full({segments, c.stride}, -7, positions.options());
        kernels::CompactionArgs a;
        a.src_keys = keys.data_ptr();
        a.src_values = values.data_ptr();
        a.dst_keys = dst_keys.data_ptr();
        a.dst_values = dst_values.data_ptr();
        a.element_type = type;
        a.head_dim = l.head_dim;
        a.segments = segments;
        a.stride = c.stride;
        a.src_starts = src_starts.data_ptr<int32_t>();
        a.dst_starts = dst.data_ptr<int32_t>();
        a.src_slots = c.slots;
        a.dst_slots = dst_slots;
        a.lengths = lengths.data_ptr<int32_t>();
        a.keep = flags.data_ptr<uint8_t>();
        a.new_lengths = new_lengths.data_ptr<int32_t>();
        a.positions = positions.data_ptr<int64_t>();
        a.new_positions = new_positions.data_ptr<int64_t>();
        if (on_gpu) {
          kernels::compact_segments_cuda(a, nullptr);
          kernels::cuda_scoring_synchronize(nullptr);
        } else {
          kernels::compact_segments_cpu(a);
        }
        return std::vector<at::Tensor>{dst_keys.cpu(), dst_values.cpu(), new_lengths.cpu(), new_positions.cpu()};
      };
      const auto cpu = run(at::Device(at::kCPU), false);
      const auto gpu = run(at::Device(at::kCUDA, 0), true);
      EXPECT_TRUE(at::equal(gpu[2], cpu[2])) << "lengths";
      EXPECT_TRUE(at::equal(gpu[3], cpu[3])) << "positions";
      // Compare bit patterns: a kept NaN would fail a value comparison (none is kept: they lie past lengths).
      EXPECT_TRUE(at::equal(gpu[0].view(at::kByte), cpu[0].view(at::kByte))) << "keys";
      EXPECT_TRUE(at::equal(gpu[1].view(at::kByte), cpu[1].view(at::kByte))) << "values";
    }
  }
}

TEST(CudaScoring, EmptyLayersAndNoQueriesWriteZeros) {
  const std::string reason = skip_reason();
  if (!reason.empty()) GTEST_SKIP() << reason;
  const Layout l{"no-queries", 2, 2, 4, 16, 9, 0, false};
  const PackedCase c = make_case(l, ScoreElementType::f32, 3);
  auto [gpu, cpu] = run_scores(l, c, ScoreElementType::f32, {"mass", false, false, KeyScoreReduction::Sum});
  EXPECT_EQ(gpu.abs().max().item<float>(), 0.0f);
  EXPECT_EQ(cpu.abs().max().item<float>(), 0.0f);
}

#else

TEST(CudaScoring, KeyScoresMatchTheCpuTwinOnRaggedLayouts) {
  GTEST_SKIP() << "built without the CUDA kernels (no nvcc at configure time)";
}

#endif

}  // namespace
}  // namespace kvs
