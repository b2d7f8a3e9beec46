#pragma once
// Attention over one layer of a ragged KV cache (KvStore's layout), CPU twin.
//
// Every (batch row, kv head) segment holds its own number of retained entries, so
// a dense kernel would have to pad every segment to the longest one and mask the
// padding. This kernel reads only the valid entries [0, length) of each segment:
// slots past a segment's length are never touched (they may hold stale data or
// NaN). It is the reference the CUDA kernel will be tested against, so the header
// is torch-free on purpose: plain pointers and sizes that the CUDA twin can share.
#include <cstdint>

#include "kernels/kernel_error.h"

namespace kvs::kernels {

// The element type of keys and values. bf16 (raw bit patterns) is widened to
// float32 per segment as it is read: a bf16 cache is read at half the bytes, and
// everything after the load is the float32 arithmetic of the f32 cache.
enum class KvElementType { f32, bf16 };

// One layer of a ragged KV cache. Segment s = row * kv_heads + kv_head holds
// lengths[s] entries. Two layouts of keys/values (row-major, element_type):
//   - regular (offsets == nullptr): [rows, kv_heads, capacity, head_dim], segment s
//     starts at slot s * capacity;
//   - packed (offsets != nullptr): [total_slots, head_dim], segment s starts at slot
//     offsets[s] and may have its own capacity (KvStore sizes every segment to what
//     its policy keeps, so a local head does not pay for a global head's room).
// positions (and the optional probs / key_mass outputs) always use the padded
// stride `capacity`, which must be >= every segment's length.
struct RaggedKvView {
  const void* keys = nullptr;  // float or (bf16) uint16_t, per element_type
  const void* values = nullptr;
  const int64_t* lengths = nullptr;    // [rows * kv_heads]
  const int64_t* positions = nullptr;  // [rows * kv_heads * capacity]: original sequence position of each
                                       // entry (only [0, length) of a segment is read)
  int64_t rows = 0, kv_heads = 0, capacity = 0, head_dim = 0;
  const int64_t* offsets = nullptr;  // packed layout: [rows * kv_heads] first slot of each segment
  int64_t total_slots = 0;           // packed layout: slots in keys / values
  KvElementType element_type = KvElementType::f32;
};

struct RaggedAttentionArgs {
  const float* queries = nullptr;  // [rows, n_head, T, head_dim] contiguous
  int64_t n_head = 0, T = 0;
  const int64_t* query_positions = nullptr;  // [T] sequence positions of the T queries (same for all rows/heads)
  bool causal = false;                       // if true, a query at position p ignores entries with position > p
  float scale = 1.0f;                        // usually 1/sqrt(head_dim)
  float* out = nullptr;                      // [rows, n_head, T, head_dim]
  float* probs = nullptr;     // optional (nullptr = off): [rows, n_head, T, capacity]; the softmax weight of
                              // each valid entry, 0 elsewhere
  float* key_mass = nullptr;  // optional (nullptr = off): [rows, kv_heads, capacity]; probs summed over the
                              // group's query heads and the T queries (the per-key attention mass that
                              // policies such as H2O/SnapKV accumulate), 0 for invalid entries
};

// Query head h uses kv head h / (n_head / kv_heads) (LlamaGen's repeat_interleave
// grouping). A query with no visible entry (empty segment, or every entry masked
// by causality) produces zeros in out and probs. Softmax subtracts the row maximum;
// everything accumulates in float32. Every element of out, probs and key_mass is
// written, so the caller may pass uninitialised buffers.
//
// Throws kvs::kernels::KernelArgumentError for negative sizes, n_head not a positive
// multiple of kv_heads, a segment length outside [0, capacity], a packed segment
// reaching past total_slots, or a missing buffer; nothing is written in that case.
void ragged_attention_cpu(const RaggedKvView& kv, const RaggedAttentionArgs& args);

// Which build of the kernel runs ("AVX2" or "x86-64 baseline"): the one for the
// CPU kernels' instruction-set path (skinny_linear.h), chosen at run time.
const char* ragged_attention_cpu_path();

}  // namespace kvs::kernels
