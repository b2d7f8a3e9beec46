#include "kernels/cpu/segment_scoring.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels/cpu/float_dot.h"
#include "kernels/segment_scoring_checks.h"

namespace kvs::kernels {
namespace {

float bits_to_float(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// IEEE half -> float32 (every half is exactly representable).
float widen_half(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h >> 15) << 31;
  const uint32_t exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ffu;
  if (exponent == 0) {  // zero or subnormal: mantissa x 2^-24
    const float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 31) return bits_to_float(sign | 0x7f800000u | (mantissa << 13));  // inf / NaN
  return bits_to_float(sign | ((exponent - 15 + 127) << 23) | (mantissa << 13));
}

// Every segment must lie inside its buffer and hold at most `stride` entries.
void check_segments(const char* kernel, const int32_t* starts, const int32_t* lengths, int64_t segments, int64_t stride,
                    int64_t slots) {
  for (int64_t s = 0; s < segments; ++s) {
    if (lengths[s] < 0 || lengths[s] > stride)
      throw KernelArgumentError(std::string(kernel) + ": segment " + std::to_string(s) + " has length " +
                                std::to_string(lengths[s]) + ", expected 0.." + std::to_string(stride));
    if (starts[s] < 0 || static_cast<int64_t>(starts[s]) + lengths[s] > slots)
      throw KernelArgumentError(std::string(kernel) + ": segment " + std::to_string(s) + " (slots " +
                                std::to_string(starts[s]) + " + " + std::to_string(lengths[s]) +
                                ") reaches past the buffer's " + std::to_string(slots) + " slots");
  }
}

}  // namespace

float widen_element(const void* data, int64_t index, ScoreElementType type) {
  switch (type) {
    case ScoreElementType::f32: return static_cast<const float*>(data)[index];
    case ScoreElementType::bf16: return as_float32(static_cast<const uint16_t*>(data)[index]);
    case ScoreElementType::f16: return widen_half(static_cast<const uint16_t*>(data)[index]);
  }
  return 0.0f;
}

namespace {

// One segment's scores: its group of n_head / kv_heads query heads, T queries
// each, is one [G*T, head_dim] block of `queries` (the heads sharing a kv head
// are adjacent), so every key is widened and read once for all of them.
// `k`, `logits` and `mass` are the calling thread's scratch.
void score_segment(const SegmentKeys& keys, const KeyScoreArgs& args, int64_t s, float weight, std::vector<float>& k,
                   std::vector<float>& logits, std::vector<double>& mass) {
  const int64_t stride = keys.stride, d = keys.head_dim;
  const int64_t row = s / keys.kv_heads, head = s % keys.kv_heads, length = keys.lengths[s];
  float* scores = args.scores + s * stride;
  std::fill(scores, scores + stride, 0.0f);
  if (length == 0) return;
  const int64_t group = args.n_head / keys.kv_heads, n_query = group * args.T;
  const int64_t* positions = keys.positions ? keys.positions + s * stride : nullptr;
  const uint8_t* candidates = args.candidates ? args.candidates + s * stride : nullptr;
  const float* queries = args.queries + (row * args.n_head + head * group) * args.T * d;
  k.resize(static_cast<size_t>(length * d));
  if (keys.element_type == ScoreElementType::f32) {
    const float* from = static_cast<const float*>(keys.keys) + keys.starts[s] * d;
    std::copy(from, from + length * d, k.begin());
  } else {
    for (int64_t i = 0; i < length * d; ++i) k[i] = widen_element(keys.keys, keys.starts[s] * d + i, keys.element_type);
  }
  // logits [n_query, length]; -inf where the query does not see the entry.
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  logits.assign(static_cast<size_t>(n_query * length), kNegInf);
  for (int64_t j = 0; j < length; ++j) {
    if (candidates != nullptr && candidates[j] == 0) continue;
    for (int64_t i = 0; i < n_query; ++i) {
      if (args.causal && positions[j] > args.query_positions[i % args.T]) continue;
      logits[i * length + j] = float_dot(queries + i * d, k.data() + j * d, d) * args.scale;
    }
  }
  mass.assign(static_cast<size_t>(length), 0.0);
  for (int64_t i = 0; i < n_query; ++i) {
    float* w = logits.data() + i * length;
    float top = kNegInf;
    for (int64_t j = 0; j < length; ++j) top = std::max(top, w[j]);
    if (top == kNegInf) continue;  // sees nothing: zeros (nan_to_num)
    float sum = 0.0f;
    for (int64_t j = 0; j < length; ++j) sum += (w[j] = w[j] == kNegInf ? 0.0f : std::exp(w[j] - top));
    for (int64_t j = 0; j < length; ++j) mass[j] += w[j] / sum;
  }
  for (int64_t j = 0; j < length; ++j) scores[j] = static_cast<float>(mass[j]) * weight;
}

}  // namespace

void attention_key_scores_cpu(const SegmentKeys& keys, const KeyScoreArgs& args) {
  detail::check_key_score_sizes(keys, args);
  const int64_t segments = keys.segments(), stride = keys.stride;
  check_segments("attention key scores", keys.starts, keys.lengths, segments, stride, keys.total_slots);
  if (segments == 0 || stride == 0) return;
  const int64_t group = args.n_head / keys.kv_heads, queries = group * args.T;
  const float weight = args.reduction == KeyScoreReduction::Mean && queries > 0 ? 1.0f / static_cast<float>(queries)
                                                                                : 1.0f;
  // Segments write disjoint rows of scores, so they run in parallel without
  // synchronisation; each segment's arithmetic is the same on any thread. The
  // grain (ATen's usual 32768 multiply-adds per task) keeps small problems on the
  // calling thread.
  constexpr int64_t kGrainWork = 32768;
  const int64_t work_per_segment = std::max<int64_t>(1, queries * stride * keys.head_dim);
  const int64_t grain = std::max<int64_t>(1, kGrainWork / work_per_segment);
  at::parallel_for(0, segments, grain, [&](int64_t begin, int64_t end) {
    std::vector<float> k, logits;
    std::vector<double> mass;
    for (int64_t s = begin; s < end; ++s) score_segment(keys, args, s, weight, k, logits, mass);
  });
}

void pool_candidate_scores_cpu(const PoolArgs& args) {
  detail::check_pool_sizes(args);
  const int64_t half = args.kernel / 2;
  for (int64_t s = 0; s < args.segments; ++s) {
    const float* votes = args.votes + s * args.stride;
    const uint8_t* candidates = args.candidates + s * args.stride;
    for (int64_t j = 0; j < args.stride; ++j) {
      float out = -std::numeric_limits<float>::infinity();
      if (candidates[j]) {
        float best = -std::numeric_limits<float>::infinity(), sum = 0.0f;
        int64_t count = 0;
        for (int64_t i = std::max<int64_t>(0, j - half); i <= std::min(args.stride - 1, j + half); ++i) {
          if (!candidates[i]) continue;
          best = std::max(best, votes[i]);
          sum += votes[i];
          ++count;
        }
        out = args.pooling == VotePooling::Max ? best : sum / static_cast<float>(count);
      }
      args.pooled[s * args.stride + j] = out;
    }
  }
}

void compact_segments_cpu(const CompactionArgs& args) {
  detail::check_compaction_sizes(args);
  const char* kernel = "segment compaction";
  check_segments(kernel, args.src_starts, args.lengths, args.segments, args.stride, args.src_slots);
  // Every destination must hold what its segment keeps.
  std::vector<int32_t> kept(static_cast<size_t>(args.segments), 0);
  for (int64_t s = 0; s < args.segments; ++s)
    for (int64_t j = 0; j < args.lengths[s]; ++j) kept[s] += args.keep[s * args.stride + j] != 0;
  check_segments(kernel, args.dst_starts, kept.data(), args.segments, args.stride, args.dst_slots);
  const int64_t row_bytes = args.head_dim * element_bytes(args.element_type);
  auto move_row = [&](const void* src, void* dst, int64_t from, int64_t to) {
    if (src == nullptr) return;
    std::memcpy(static_cast<char*>(dst) + to * row_bytes, static_cast<const char*>(src) + from * row_bytes,
                static_cast<size_t>(row_bytes));
  };
  for (int64_t s = 0; s < args.segments; ++s) {
    int32_t count = 0;
    for (int64_t j = 0; j < args.lengths[s]; ++j) {
      if (!args.keep[s * args.stride + j]) continue;
      move_row(args.src_keys, args.dst_keys, args.src_starts[s] + j, args.dst_starts[s] + count);
      move_row(args.src_values, args.dst_values, args.src_starts[s] + j, args.dst_starts[s] + count);
      if (args.positions) args.new_positions[s * args.stride + count] = args.positions[s * args.stride + j];
      ++count;
    }
    if (args.positions)
      std::fill(args.new_positions + s * args.stride + count, args.new_positions + (s + 1) * args.stride, -1);
    args.new_lengths[s] = count;
  }
}

}  // namespace kvs::kernels
