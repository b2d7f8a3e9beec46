#include "kernels/cpu/ragged_attention.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels/cpu/avx2_loads.h"
#include "kernels/cpu/float_dot.h"
#include "kernels/cpu/skinny_linear.h"
#include "kernels/kernel_error.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define KVS_RAGGED_X86 1
#else
#define KVS_RAGGED_X86 0
#endif

namespace kvs::kernels {
namespace {

std::string segment_name(const RaggedKvView& kv, int64_t segment) {
  return "segment (row " + std::to_string(segment / kv.kv_heads) + ", kv head " +
         std::to_string(segment % kv.kv_heads) + ")";
}

void require_buffer(const void* pointer, int64_t elements, const char* name) {
  if (pointer == nullptr && elements > 0)
    throw KernelArgumentError(std::string("ragged attention: ") + name + " is null but must hold " +
                              std::to_string(elements) + " elements");
}

void validate(const RaggedKvView& kv, const RaggedAttentionArgs& args) {
  const std::pair<const char*, int64_t> sizes[] = {{"rows", kv.rows},         {"kv_heads", kv.kv_heads},
                                                   {"capacity", kv.capacity}, {"head_dim", kv.head_dim},
                                                   {"n_head", args.n_head},   {"T", args.T}};
  for (const auto& [name, value] : sizes)
    if (value < 0)
      throw KernelArgumentError(std::string("ragged attention: ") + name + " is " + std::to_string(value) +
                                ", expected a non-negative size");
  // The grouping h -> h / (n_head / kv_heads) needs a whole number of query heads per kv head.
  if (kv.kv_heads == 0 || args.n_head == 0 || args.n_head % kv.kv_heads != 0)
    throw KernelArgumentError("ragged attention: n_head " + std::to_string(args.n_head) +
                              " is not a positive multiple of kv_heads " + std::to_string(kv.kv_heads));
  if (!std::isfinite(args.scale))
    throw KernelArgumentError("ragged attention: scale " + std::to_string(args.scale) + " is not finite");

  const int64_t segments = kv.rows * kv.kv_heads;
  const bool packed = kv.offsets != nullptr;
  if (packed && kv.total_slots < 0)
    throw KernelArgumentError("ragged attention: total_slots is " + std::to_string(kv.total_slots) +
                              ", expected a non-negative size");
  const int64_t cache_elements = (packed ? kv.total_slots : segments * kv.capacity) * kv.head_dim;
  const int64_t query_elements = kv.rows * args.n_head * args.T * kv.head_dim;
  require_buffer(kv.keys, cache_elements, "keys");
  require_buffer(kv.values, cache_elements, "values");
  require_buffer(kv.lengths, segments, "lengths");
  require_buffer(kv.positions, segments * kv.capacity, "positions");
  require_buffer(args.queries, query_elements, "queries");
  require_buffer(args.query_positions, args.T, "query_positions");
  require_buffer(args.out, query_elements, "out");

  for (int64_t s = 0; s < segments; ++s) {
    const int64_t length = kv.lengths[s];
    if (length < 0 || length > kv.capacity)
      throw KernelArgumentError("ragged attention: " + segment_name(kv, s) + " has length " + std::to_string(length) +
                                ", expected 0.." + std::to_string(kv.capacity) + " (the capacity)");
    if (packed && (kv.offsets[s] < 0 || kv.offsets[s] + length > kv.total_slots))
      throw KernelArgumentError("ragged attention: " + segment_name(kv, s) + " spans slots " +
                                std::to_string(kv.offsets[s]) + ".." + std::to_string(kv.offsets[s] + length) +
                                ", outside the " + std::to_string(kv.total_slots) + " slots of the packed buffers");
  }
}

#if KVS_RAGGED_X86
#define KVS_TARGET_AVX2 __attribute__((target("avx2,fma")))

// The AVX2 build's two inner products, written with intrinsics because the
// auto-vectorised loops leave one dependent chain of FMAs per key (measured on
// a 2-core AMD EPYC, AVX2: 11.5 ns per 64-dim bf16 key scored alone, 4.7 four
// at a time). Each sum keeps float_dot's lanes and final order, and the value
// sum its order over the keys, so the results are the loops' bit for bit.
// float_dot's ((c0 + c4) + (c1 + c5)) + ((c2 + c6) + (c3 + c7)), plus its empty tail.
KVS_TARGET_AVX2 inline float reduce8(__m256 c) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(c), _mm256_extractf128_ps(c, 1));
  s = _mm_hadd_ps(s, s);
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s))) + 0.0f;
}

// w[i * length + j] = (query i . key j) * scale, four keys at a time; d % 8 == 0.
template <typename Element>
KVS_TARGET_AVX2 void scores_avx2(const float* queries, int64_t n_query, const Element* keys, int64_t length, int64_t d,
                                 float scale, float* w) {
  for (int64_t i = 0; i < n_query; ++i) {
    const float* q = queries + i * d;
    float* wi = w + i * length;
    int64_t j = 0;
    for (; j + 4 <= length; j += 4) {
      const Element* k = keys + j * d;
      __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
      for (int64_t c = 0; c < d; c += 8) {
        const __m256 qv = _mm256_loadu_ps(q + c);
        a0 = _mm256_fmadd_ps(qv, load8_as_f32(k + c), a0);
        a1 = _mm256_fmadd_ps(qv, load8_as_f32(k + d + c), a1);
        a2 = _mm256_fmadd_ps(qv, load8_as_f32(k + 2 * d + c), a2);
        a3 = _mm256_fmadd_ps(qv, load8_as_f32(k + 3 * d + c), a3);
      }
      wi[j] = reduce8(a0) * scale;
      wi[j + 1] = reduce8(a1) * scale;
      wi[j + 2] = reduce8(a2) * scale;
      wi[j + 3] = reduce8(a3) * scale;
    }
    for (; j < length; ++j) {
      const Element* k = keys + j * d;
      __m256 a = _mm256_setzero_ps();
      for (int64_t c = 0; c < d; c += 8) a = _mm256_fmadd_ps(_mm256_loadu_ps(q + c), load8_as_f32(k + c), a);
      wi[j] = reduce8(a) * scale;
    }
  }
}

// out[i] = sum over j of w[i * length + j] * value j, the sums in key order, up
// to 64 columns held in registers across all keys; d % 8 == 0.
template <typename Element>
KVS_TARGET_AVX2 void values_avx2(const float* w, int64_t n_query, const Element* values, int64_t length, int64_t d,
                                 float* out) {
  constexpr int kBlocks = 8;
  for (int64_t i = 0; i < n_query; ++i) {
    const float* wi = w + i * length;
    for (int64_t c0 = 0; c0 < d; c0 += 8 * kBlocks) {
      const int blocks = static_cast<int>(std::min<int64_t>(kBlocks, (d - c0) / 8));
      __m256 acc[kBlocks];
      for (int b = 0; b < kBlocks; ++b) acc[b] = _mm256_setzero_ps();
      if (blocks == kBlocks) {
        for (int64_t j = 0; j < length; ++j) {
          const __m256 p = _mm256_set1_ps(wi[j]);
          const Element* v = values + j * d + c0;
#pragma GCC unroll 8
          for (int b = 0; b < kBlocks; ++b) acc[b] = _mm256_fmadd_ps(p, load8_as_f32(v + 8 * b), acc[b]);
        }
      } else {
        for (int64_t j = 0; j < length; ++j) {
          const __m256 p = _mm256_set1_ps(wi[j]);
          const Element* v = values + j * d + c0;
          for (int b = 0; b < blocks; ++b) acc[b] = _mm256_fmadd_ps(p, load8_as_f32(v + 8 * b), acc[b]);
        }
      }
      for (int b = 0; b < blocks; ++b) _mm256_storeu_ps(out + i * d + c0 + 8 * b, acc[b]);
    }
  }
}
#endif

// Attention of one segment's query group: the n_head / kv_heads query heads that
// share the segment's kv head, T queries each. Their queries, outputs and probs
// rows are contiguous blocks of `queries` / `out` / `probs`, so the group is
// treated as one [G*T, head_dim] query matrix and every key and value row is
// loaded once for all of them. `weights` is the calling thread's scratch. A bf16
// segment's keys and values are widened to float32 in registers as they are
// read (float_dot, the value sum), never copied: the attention reads each
// cache byte once.
//
// The body is compiled twice: for the x86-64 baseline and, where the compiler
// targets x86, for AVX2 + FMA (the same C++ auto-vectorised eight floats wide
// with fused multiply-adds); attend_segment picks one at run time by the CPU
// kernels' path (skinny_linear_isa(): AVX2 on an AVX2 or AVX-512 CPU unless
// KVSTUDIO_CPU_DECODE_KERNEL=none). Nothing runs an instruction the CPU lacks.
template <typename Element, bool kAvx2>
__attribute__((always_inline)) inline void attend_segment_body(const RaggedKvView& kv, const RaggedAttentionArgs& args,
                                                               int64_t segment, std::vector<float>& weights) {
  const int64_t d = kv.head_dim, capacity = kv.capacity, t = args.T;
  const int64_t group = args.n_head / kv.kv_heads;
  const int64_t n_query = group * t;
  const int64_t row = segment / kv.kv_heads, kv_head = segment % kv.kv_heads;
  const int64_t length = kv.lengths[segment];
  const int64_t first_query = (row * args.n_head + kv_head * group) * t;  // index of the group's first query row

  const int64_t first_slot = kv.offsets != nullptr ? kv.offsets[segment] : segment * capacity;
  const Element* keys = static_cast<const Element*>(kv.keys) + first_slot * d;
  const Element* values = static_cast<const Element*>(kv.values) + first_slot * d;
  const int64_t* key_positions = kv.positions + segment * capacity;
  const float* queries = args.queries + first_query * d;
  float* out = args.out + first_query * d;

  weights.resize(static_cast<size_t>(n_query * length));
  float* w = weights.data();  // [n_query, length]: scores, then softmax weights

  bool scored = false;
#if KVS_RAGGED_X86
  if constexpr (kAvx2)
    if (d % 8 == 0) {
      scores_avx2(queries, n_query, keys, length, d, args.scale, w);
      scored = true;
    }
#endif
  if (!scored)
    for (int64_t j = 0; j < length; ++j) {
      const Element* k = keys + j * d;
      for (int64_t i = 0; i < n_query; ++i) w[i * length + j] = float_dot(queries + i * d, k, d) * args.scale;
    }

  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n_query; ++i) {
    float* wi = w + i * length;
    if (args.causal) {
      const int64_t query_position = args.query_positions[i % t];
      for (int64_t j = 0; j < length; ++j) wi[j] = key_positions[j] > query_position ? kNegInf : wi[j];
    }
    float max_score = kNegInf;
    for (int64_t j = 0; j < length; ++j) max_score = std::max(max_score, wi[j]);
    if (max_score == kNegInf) {
      // Nothing visible: zero weights (and so a zero output) rather than 0/0.
      std::fill(wi, wi + length, 0.0f);
      continue;
    }
    float sum = 0.0f;
    for (int64_t j = 0; j < length; ++j) {
      wi[j] = std::exp(wi[j] - max_score);
      sum += wi[j];
    }
    const float inv_sum = 1.0f / sum;
    for (int64_t j = 0; j < length; ++j) wi[j] *= inv_sum;
  }

  bool summed = false;
#if KVS_RAGGED_X86
  if constexpr (kAvx2)
    if (d % 8 == 0) {
      values_avx2(w, n_query, values, length, d, out);
      summed = true;
    }
#endif
  if (!summed) {
    std::fill(out, out + n_query * d, 0.0f);
    for (int64_t j = 0; j < length; ++j) {
      const Element* v = values + j * d;
      for (int64_t i = 0; i < n_query; ++i) {
        const float p = w[i * length + j];
        float* o = out + i * d;
        for (int64_t c = 0; c < d; ++c) o[c] += p * as_float32(v[c]);
      }
    }
  }

  if (args.probs != nullptr) {
    float* probs = args.probs + first_query * capacity;
    for (int64_t i = 0; i < n_query; ++i) {
      std::copy(w + i * length, w + (i + 1) * length, probs + i * capacity);
      std::fill(probs + i * capacity + length, probs + (i + 1) * capacity, 0.0f);
    }
  }
  if (args.key_mass != nullptr) {
    float* mass = args.key_mass + segment * capacity;
    std::fill(mass, mass + capacity, 0.0f);
    for (int64_t i = 0; i < n_query; ++i) {
      const float* wi = w + i * length;
      for (int64_t j = 0; j < length; ++j) mass[j] += wi[j];
    }
  }
}

void attend_segment_baseline(const RaggedKvView& kv, const RaggedAttentionArgs& args, int64_t segment,
                             std::vector<float>& weights) {
  if (kv.element_type == KvElementType::bf16) attend_segment_body<uint16_t, false>(kv, args, segment, weights);
  else attend_segment_body<float, false>(kv, args, segment, weights);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("avx2,fma"))) void attend_segment_avx2(const RaggedKvView& kv, const RaggedAttentionArgs& args,
                                                             int64_t segment, std::vector<float>& weights) {
  if (kv.element_type == KvElementType::bf16) attend_segment_body<uint16_t, true>(kv, args, segment, weights);
  else attend_segment_body<float, true>(kv, args, segment, weights);
}
#endif

using AttendSegment = void (*)(const RaggedKvView&, const RaggedAttentionArgs&, int64_t, std::vector<float>&);

AttendSegment attend_segment_for_this_cpu() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (skinny_linear_isa() != SkinnyLinearIsa::none) return attend_segment_avx2;
#endif
  return attend_segment_baseline;
}

}  // namespace

const char* ragged_attention_cpu_path() {
  return attend_segment_for_this_cpu() == attend_segment_baseline ? "x86-64 baseline" : "AVX2";
}

void ragged_attention_cpu(const RaggedKvView& kv, const RaggedAttentionArgs& args) {
  validate(kv, args);
  const int64_t segments = kv.rows * kv.kv_heads;
  // Segments write disjoint blocks of out / probs / key_mass, so they run in
  // parallel without synchronisation. The grain (ATen's usual 32768 multiply-adds
  // per task) keeps small problems, such as a decode step of a tiny model, on the
  // calling thread.
  constexpr int64_t kGrainWork = 32768;
  const int64_t work_per_segment = std::max<int64_t>(1, args.n_head / kv.kv_heads * args.T * kv.capacity *
                                                            std::max<int64_t>(kv.head_dim, 1));
  const int64_t grain = std::max<int64_t>(1, kGrainWork / work_per_segment);
  const AttendSegment attend_segment = attend_segment_for_this_cpu();
  at::parallel_for(0, segments, grain, [&](int64_t begin, int64_t end) {
    std::vector<float> weights;
    for (int64_t s = begin; s < end; ++s) attend_segment(kv, args, s, weights);
  });
}

}  // namespace kvs::kernels
