// The scoring and compaction kernels of kernels/cuda/segment_scoring.h. What they
// compute is defined by their CPU twins (kernels/cpu/segment_scoring.cpp); the
// layout here is chosen for the GPU:
//   - attention key scores run in two passes, so that no probability is stored
//     and no score needs an atomic add (the sums stay in a fixed order): one block
//     per (segment, query) finds the softmax maximum and denominator of that query
//     over the entries it sees; then one thread per (segment, entry) walks the
//     queries, recomputes its logit and adds its weight;
//   - pooling: one thread per (segment, slot);
//   - compaction: one block per segment, a warp-ballot scan of the keep flags per
//     chunk of entries, each kept entry copied to its place (stable order).
#include "kernels/cuda/segment_scoring.h"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "kernels/segment_scoring_checks.h"

namespace kvs::kernels {
namespace {

constexpr int kThreads = 128;  // four warps: the compaction scan assumes a multiple of 32
constexpr int64_t kMaxGridY = 65535;

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw CudaKernelError(std::string(what) + ": " + cudaGetErrorString(status));
}

template <ScoreElementType E>
__device__ __forceinline__ float load_element(const void* data, int64_t index);
template <>
__device__ __forceinline__ float load_element<ScoreElementType::f32>(const void* data, int64_t index) {
  return static_cast<const float*>(data)[index];
}
template <>
__device__ __forceinline__ float load_element<ScoreElementType::bf16>(const void* data, int64_t index) {
  return __uint_as_float(static_cast<uint32_t>(static_cast<const uint16_t*>(data)[index]) << 16);
}
template <>
__device__ __forceinline__ float load_element<ScoreElementType::f16>(const void* data, int64_t index) {
  return __half2float(__ushort_as_half(static_cast<const uint16_t*>(data)[index]));
}

__device__ __forceinline__ int64_t segment_length(const int32_t* lengths, int64_t s, int64_t stride) {
  const int64_t length = lengths[s];
  return length < 0 ? 0 : (length > stride ? stride : length);
}

__device__ __forceinline__ bool query_sees(const SegmentKeys& keys, const KeyScoreArgs& args, int64_t s, int64_t j,
                                           int64_t t) {
  const int64_t slot = s * keys.stride + j;
  if (args.candidates != nullptr && args.candidates[slot] == 0) return false;
  return !args.causal || keys.positions[slot] <= args.query_positions[t];
}

template <ScoreElementType E>
__device__ __forceinline__ float scaled_logit(const SegmentKeys& keys, const float* q, int64_t slot, float scale) {
  float dot = 0.0f;
  for (int64_t i = 0; i < keys.head_dim; ++i) dot += q[i] * load_element<E>(keys.keys, slot * keys.head_dim + i);
  return dot * scale;
}

// (max, sum of exp(x - max)) of two parts of one softmax row.
__device__ __forceinline__ void combine(float& m, float& l, float m2, float l2) {
  const float top = fmaxf(m, m2);
  if (top == -INFINITY) return;  // both parts empty
  l = (m == -INFINITY ? 0.0f : l * expf(m - top)) + (m2 == -INFINITY ? 0.0f : l2 * expf(m2 - top));
  m = top;
}

// Pass 1: stats[(s * queries + qi) * 2 + {0, 1}] = the max logit and the softmax
// denominator of query qi = g * T + t over the entries it sees (-inf, 0: none).
template <ScoreElementType E>
__global__ void softmax_stats_kernel(SegmentKeys keys, KeyScoreArgs args, int64_t group, float* stats) {
  extern __shared__ float q[];  // [head_dim]
  __shared__ float part_m[kThreads], part_l[kThreads];
  const int64_t s = blockIdx.x, row = s / keys.kv_heads, head = s % keys.kv_heads;
  const int64_t length = segment_length(keys.lengths, s, keys.stride), start = keys.starts[s];
  const int64_t queries = group * args.T, d = keys.head_dim;
  for (int64_t qi = blockIdx.y; qi < queries; qi += gridDim.y) {
    const int64_t g = qi / args.T, t = qi % args.T;
    const float* query = args.queries + ((row * args.n_head + head * group + g) * args.T + t) * d;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) q[i] = query[i];
    __syncthreads();
    float m = -INFINITY, l = 0.0f;
    for (int64_t j = threadIdx.x; j < length; j += blockDim.x) {
      if (!query_sees(keys, args, s, j, t)) continue;
      combine(m, l, scaled_logit<E>(keys, q, start + j, args.scale), 1.0f);
    }
    part_m[threadIdx.x] = m;
    part_l[threadIdx.x] = l;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
      if (threadIdx.x < half)
        combine(part_m[threadIdx.x], part_l[threadIdx.x], part_m[threadIdx.x + half], part_l[threadIdx.x + half]);
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      stats[(s * queries + qi) * 2] = part_m[0];
      stats[(s * queries + qi) * 2 + 1] = part_l[0];
    }
    __syncthreads();  // q and the partials are reused by the next query
  }
}

// Pass 2: one thread per entry j of segment s adds every query's softmax weight.
template <ScoreElementType E>
__global__ void key_scores_kernel(SegmentKeys keys, KeyScoreArgs args, int64_t group, const float* stats,
                                  float weight) {
  extern __shared__ float q[];  // [head_dim]
  const int64_t s = blockIdx.x, j = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x;
  const int64_t row = s / keys.kv_heads, head = s % keys.kv_heads, d = keys.head_dim;
  const int64_t length = segment_length(keys.lengths, s, keys.stride), start = keys.starts[s];
  const int64_t first = static_cast<int64_t>(blockIdx.y) * blockDim.x;
  if (first >= length) {  // the whole block lies past the segment's length
    if (j < keys.stride) args.scores[s * keys.stride + j] = 0.0f;
    return;
  }
  const int64_t queries = group * args.T;
  float mass = 0.0f;
  for (int64_t qi = 0; qi < queries; ++qi) {
    const int64_t g = qi / args.T, t = qi % args.T;
    const float* query = args.queries + ((row * args.n_head + head * group + g) * args.T + t) * d;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) q[i] = query[i];
    __syncthreads();
    const float denominator = stats[(s * queries + qi) * 2 + 1];
    if (j < length && denominator > 0.0f && query_sees(keys, args, s, j, t))
      mass += expf(scaled_logit<E>(keys, q, start + j, args.scale) - stats[(s * queries + qi) * 2]) / denominator;
    __syncthreads();
  }
  if (j < keys.stride) args.scores[s * keys.stride + j] = j < length ? mass * weight : 0.0f;
}

__global__ void pool_kernel(PoolArgs args) {
  const int64_t s = blockIdx.x, j = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x;
  if (j >= args.stride) return;
  const float* votes = args.votes + s * args.stride;
  const uint8_t* candidates = args.candidates + s * args.stride;
  float out = -INFINITY;
  if (candidates[j]) {
    const int64_t half = args.kernel / 2;
    const int64_t lo = j - half < 0 ? 0 : j - half, hi = j + half >= args.stride ? args.stride - 1 : j + half;
    float best = -INFINITY, sum = 0.0f;
    int count = 0;
    for (int64_t i = lo; i <= hi; ++i) {
      if (!candidates[i]) continue;
      best = fmaxf(best, votes[i]);
      sum += votes[i];
      ++count;
    }
    out = args.pooling == VotePooling::Max ? best : sum / static_cast<float>(count);
  }
  args.pooled[s * args.stride + j] = out;
}

__device__ __forceinline__ void copy_row(const void* src, void* dst, int64_t from, int64_t to, int64_t units) {
  const uint16_t* in = static_cast<const uint16_t*>(src) + from * units;
  uint16_t* out = static_cast<uint16_t*>(dst) + to * units;
  for (int64_t i = 0; i < units; ++i) out[i] = in[i];
}

__global__ void compact_kernel(CompactionArgs args, int64_t row_units) {
  __shared__ int warp_counts[kThreads / 32];
  const int64_t s = blockIdx.x, stride = args.stride;
  const int64_t length = segment_length(args.lengths, s, stride);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  int64_t kept = 0;
  for (int64_t chunk = 0; chunk < length; chunk += blockDim.x) {
    const int64_t j = chunk + threadIdx.x;
    const bool keep = j < length && args.keep[s * stride + j] != 0;
    const unsigned ballot = __ballot_sync(0xffffffffu, keep);
    if (lane == 0) warp_counts[warp] = __popc(ballot);
    __syncthreads();
    int64_t before = kept, total = kept;
    for (int w = 0; w < static_cast<int>(blockDim.x / 32); ++w) {
      if (w < warp) before += warp_counts[w];
      total += warp_counts[w];
    }
    if (keep) {
      const int64_t to = before + __popc(ballot & ((1u << lane) - 1u));
      const int64_t from_slot = args.src_starts[s] + j, to_slot = args.dst_starts[s] + to;
      if (args.src_keys != nullptr) copy_row(args.src_keys, args.dst_keys, from_slot, to_slot, row_units);
      if (args.src_values != nullptr) copy_row(args.src_values, args.dst_values, from_slot, to_slot, row_units);
      if (args.positions != nullptr) args.new_positions[s * stride + to] = args.positions[s * stride + j];
    }
    kept = total;
    __syncthreads();  // warp_counts is rewritten by the next chunk
  }
  if (args.positions != nullptr)
    for (int64_t j = kept + threadIdx.x; j < stride; j += blockDim.x) args.new_positions[s * stride + j] = -1;
  if (threadIdx.x == 0) args.new_lengths[s] = static_cast<int32_t>(kept);
}

template <ScoreElementType E>
void launch_key_scores(const SegmentKeys& keys, const KeyScoreArgs& args, int64_t group, float* stats, float weight,
                       cudaStream_t stream) {
  const int64_t queries = group * args.T;
  const size_t shared = static_cast<size_t>(keys.head_dim) * sizeof(float);
  const dim3 stats_grid(static_cast<unsigned>(keys.segments()),
                        static_cast<unsigned>(queries < kMaxGridY ? queries : kMaxGridY));
  softmax_stats_kernel<E><<<stats_grid, kThreads, shared, stream>>>(keys, args, group, stats);
  check(cudaGetLastError(), "attention key scores (softmax statistics)");
  const dim3 score_grid(static_cast<unsigned>(keys.segments()),
                        static_cast<unsigned>((keys.stride + kThreads - 1) / kThreads));
  key_scores_kernel<E><<<score_grid, kThreads, shared, stream>>>(keys, args, group, stats, weight);
  check(cudaGetLastError(), "attention key scores");
}

void check_grid(const char* kernel, int64_t segments, int64_t stride) {
  if (segments > 0x7fffffff || (stride + kThreads - 1) / kThreads > kMaxGridY)
    throw KernelArgumentError(std::string(kernel) + ": " + std::to_string(segments) + " segments of stride " +
                              std::to_string(stride) + " exceed the launch grid");
}

}  // namespace

bool cuda_scoring_available() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the (non-sticky) error for later calls
    return false;
  }
  return devices > 0;
}

void attention_key_scores_cuda(const SegmentKeys& keys, const KeyScoreArgs& args, CudaStream stream) {
  detail::check_key_score_sizes(keys, args);
  const int64_t segments = keys.segments();
  if (segments == 0 || keys.stride == 0) return;
  check_grid("attention key scores", segments, keys.stride);
  const int64_t group = args.n_head / keys.kv_heads, queries = group * args.T;
  if (queries == 0) {
    check(cudaMemsetAsync(args.scores, 0, static_cast<size_t>(segments * keys.stride) * sizeof(float), stream),
          "attention key scores (no queries)");
    return;
  }
  const float weight = args.reduction == KeyScoreReduction::Mean ? 1.0f / static_cast<float>(queries) : 1.0f;
  float* stats = nullptr;
  check(cudaMallocAsync(reinterpret_cast<void**>(&stats), static_cast<size_t>(segments * queries) * 2 * sizeof(float),
                        stream),
        "attention key scores (workspace)");
  try {
    switch (keys.element_type) {
      case ScoreElementType::f32:
        launch_key_scores<ScoreElementType::f32>(keys, args, group, stats, weight, stream);
        break;
      case ScoreElementType::bf16:
        launch_key_scores<ScoreElementType::bf16>(keys, args, group, stats, weight, stream);
        break;
      case ScoreElementType::f16:
        launch_key_scores<ScoreElementType::f16>(keys, args, group, stats, weight, stream);
        break;
    }
  } catch (...) {
    (void)cudaFreeAsync(stats, stream);
    throw;
  }
  check(cudaFreeAsync(stats, stream), "attention key scores (workspace)");
}

void pool_candidate_scores_cuda(const PoolArgs& args, CudaStream stream) {
  detail::check_pool_sizes(args);
  if (args.segments == 0 || args.stride == 0) return;
  check_grid("candidate pooling", args.segments, args.stride);
  const dim3 grid(static_cast<unsigned>(args.segments), static_cast<unsigned>((args.stride + kThreads - 1) / kThreads));
  pool_kernel<<<grid, kThreads, 0, stream>>>(args);
  check(cudaGetLastError(), "candidate pooling");
}

void compact_segments_cuda(const CompactionArgs& args, CudaStream stream) {
  detail::check_compaction_sizes(args);
  if (args.segments == 0) return;
  check_grid("segment compaction", args.segments, 0);
  const int64_t row_units = args.head_dim * element_bytes(args.element_type) / 2;
  compact_kernel<<<static_cast<unsigned>(args.segments), kThreads, 0, stream>>>(args, row_units);
  check(cudaGetLastError(), "segment compaction");
}

void cuda_scoring_synchronize(CudaStream stream) { check(cudaStreamSynchronize(stream), "scoring kernels"); }

}  // namespace kvs::kernels
