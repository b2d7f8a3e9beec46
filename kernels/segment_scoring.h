#pragma once
// Arguments of the scoring and compaction kernels over the packed KV cache,
// shared by the CPU twins (kernels/cpu/segment_scoring.h) and the CUDA kernels
// (kernels/cuda/segment_scoring.h). Torch-free on purpose: plain pointers, the
// segment descriptors (starts, lengths) and sizes, so that the CUDA library is
// compiled by nvcc without LibTorch's headers or CUDA CMake.
//
// The policies rank cache entries by attention. Building the probability tensor
// [rows, heads, queries, keys] to reduce it to one number per entry is what
// costs on a GPU; these kernels write that one number per entry directly:
//   - attention mass per key (H2O's accumulated mass, the scale policies' masses,
//     KvStore::attend's key_mass): reduction Sum, no candidates, causal as the
//     model attends;
//   - LineAR's mid-region saliency and HeadKV's stratified-eviction saliency
//     (softmax over the candidate keys only, mean over the queries and grouped
//     heads): reduction Mean with candidates;
//   - SnapKV's / R-KV's observation-window votes: reduction Sum, causal by the
//     window queries' positions, then pool_candidate_scores over slot order.
// A fourth kernel compacts the segments given keep flags (eviction).
#include <cstdint>

namespace kvs::kernels {

// Element type of the cached keys and values (bf16 / f16 as raw bit patterns).
enum class ScoreElementType { f32, bf16, f16 };

inline int64_t element_bytes(ScoreElementType type) { return type == ScoreElementType::f32 ? 4 : 2; }

// One layer's packed keys: segment s = row * kv_heads + kv_head holds lengths[s]
// entries in the rows [starts[s], starts[s] + lengths[s]) of `keys`
// ([slots, head_dim], row-major). Slots past a segment's length are never read.
// Per-entry arrays (positions, candidates, scores) use the padded layout
// [segments, stride]: entry j of segment s is element s * stride + j, and stride
// must be >= every segment's length.
struct SegmentKeys {
  const void* keys = nullptr;
  ScoreElementType element_type = ScoreElementType::f32;
  const int32_t* starts = nullptr;   // [segments]
  const int32_t* lengths = nullptr;  // [segments]
  int64_t rows = 0, kv_heads = 0, head_dim = 0;
  int64_t stride = 0;
  int64_t total_slots = 0;             // rows in keys (the CPU twin checks every segment against it)
  const int64_t* positions = nullptr;  // [segments, stride] sequence positions; needed when causal
  int64_t segments() const { return rows * kv_heads; }
};

// How the per-query softmax weights of an entry are combined.
enum class KeyScoreReduction {
  Sum,   // summed over the grouped query heads and the queries (attention mass, votes)
  Mean,  // their mean (a query that sees no entry counts as zeros, as nan_to_num does)
};

struct KeyScoreArgs {
  const float* queries = nullptr;  // [rows, n_head, T, head_dim]; query head h reads kv head h / (n_head / kv_heads)
  int64_t n_head = 0, T = 0;
  // causal: query t sees only the entries whose position is <= query_positions[t] ([T]).
  bool causal = false;
  const int64_t* query_positions = nullptr;
  // Optional [segments, stride] flags (nonzero = candidate): the softmax runs over
  // the flagged entries only and the others score 0. nullptr: every entry.
  const uint8_t* candidates = nullptr;
  float scale = 1.0f;
  KeyScoreReduction reduction = KeyScoreReduction::Sum;
  // [segments, stride] out, every element written: the score of each entry, 0 for
  // entries no query sees and for slots past a segment's length.
  float* scores = nullptr;
};

// SnapKV's smoothing of the votes over slot order (max pooling), or the average
// over the candidates within the kernel that ScaleKV names.
enum class VotePooling { Max, Average };

struct PoolArgs {
  const float* votes = nullptr;         // [segments, stride]
  const uint8_t* candidates = nullptr;  // [segments, stride]
  int64_t segments = 0, stride = 0;
  int64_t kernel = 1;  // odd: the window is slots [j - kernel / 2, j + kernel / 2]
  VotePooling pooling = VotePooling::Max;
  // [segments, stride] out: for a candidate, the max (or mean) of the candidates'
  // votes in its window; -inf for every other slot.
  float* pooled = nullptr;
};

// Eviction: per segment, the entries whose keep flag is set move, in their order,
// to the front of the segment's destination slots; the rest are dropped.
// Destination buffers must not overlap the sources (the GPU compacts segments in
// parallel), and segment s's destination must have room for what it keeps.
struct CompactionArgs {
  const void* src_keys = nullptr;
  const void* src_values = nullptr;
  void* dst_keys = nullptr;  // [dst slots, head_dim], same element type
  void* dst_values = nullptr;
  ScoreElementType element_type = ScoreElementType::f32;
  int64_t head_dim = 0, segments = 0, stride = 0;
  const int32_t* src_starts = nullptr;   // [segments]
  const int32_t* dst_starts = nullptr;   // [segments]
  int64_t src_slots = 0, dst_slots = 0;  // rows in the source / destination buffers
  const int32_t* lengths = nullptr;      // [segments]: entries before
  const uint8_t* keep = nullptr;         // [segments, stride]
  int32_t* new_lengths = nullptr;        // [segments] out
  // Optional [segments, stride]: positions in, compacted positions out (-1 past the new length).
  const int64_t* positions = nullptr;
  int64_t* new_positions = nullptr;
};

}  // namespace kvs::kernels
