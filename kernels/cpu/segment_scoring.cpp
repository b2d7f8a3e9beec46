#include "kernels/cpu/segment_scoring.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

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
    case ScoreElementType::bf16:
      return bits_to_float(static_cast<uint32_t>(static_cast<const uint16_t*>(data)[index]) << 16);
    case ScoreElementType::f16: return widen_half(static_cast<const uint16_t*>(data)[index]);
  }
  return 0.0f;
}

void attention_key_scores_cpu(const SegmentKeys& keys, const KeyScoreArgs& args) {
  detail::check_key_score_sizes(keys, args);
  const int64_t segments = keys.segments(), stride = keys.stride, d = keys.head_dim;
  check_segments("attention key scores", keys.starts, keys.lengths, segments, stride, keys.total_slots);
  if (segments == 0 || stride == 0) return;
  std::fill(args.scores, args.scores + segments * stride, 0.0f);
  const int64_t group = args.n_head / keys.kv_heads, queries = group * args.T;
  const float weight = args.reduction == KeyScoreReduction::Mean && queries > 0 ? 1.0f / static_cast<float>(queries)
                                                                                : 1.0f;
  std::vector<float> k, logits;
  std::vector<double> mass;
  std::vector<uint8_t> visible;
  for (int64_t s = 0; s < segments; ++s) {
    const int64_t row = s / keys.kv_heads, head = s % keys.kv_heads, length = keys.lengths[s];
    if (length == 0) continue;
    k.resize(static_cast<size_t>(length * d));
    for (int64_t i = 0; i < length * d; ++i) k[i] = widen_element(keys.keys, keys.starts[s] * d + i, keys.element_type);
    logits.assign(static_cast<size_t>(length), 0.0f);
    visible.assign(static_cast<size_t>(length), 0);
    mass.assign(static_cast<size_t>(length), 0.0);
    const int64_t* positions = keys.positions ? keys.positions + s * stride : nullptr;
    const uint8_t* candidates = args.candidates ? args.candidates + s * stride : nullptr;
    for (int64_t g = 0; g < group; ++g) {
      for (int64_t t = 0; t < args.T; ++t) {
        const float* q = args.queries + ((row * args.n_head + head * group + g) * args.T + t) * d;
        float top = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < length; ++j) {
          visible[j] = (candidates == nullptr || candidates[j] != 0) &&
                       (!args.causal || positions[j] <= args.query_positions[t]);
          if (!visible[j]) continue;
          float dot = 0.0f;
          for (int64_t i = 0; i < d; ++i) dot += q[i] * k[j * d + i];
          logits[j] = dot * args.scale;
          top = std::max(top, logits[j]);
        }
        if (top == -std::numeric_limits<float>::infinity()) continue;  // sees nothing: zeros (nan_to_num)
        float sum = 0.0f;
        for (int64_t j = 0; j < length; ++j)
          if (visible[j]) sum += (logits[j] = std::exp(logits[j] - top));
        for (int64_t j = 0; j < length; ++j)
          if (visible[j]) mass[j] += logits[j] / sum;
      }
    }
    for (int64_t j = 0; j < length; ++j) args.scores[s * stride + j] = static_cast<float>(mass[j]) * weight;
  }
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
