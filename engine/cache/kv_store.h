#pragma once
// KvStore: the one key/value cache of the engine.
//
// Layout. Per layer: packed keys/values buffers [slots, head_dim] in which every
// (row, kv head) "segment" s = row * kv_heads + head owns slots [offset(s),
// offset(s) + capacity(s)), plus, per segment, a length and the original sequence
// position of every retained entry. Segment s holds its entries in its slots
// [0, length(s)), in the order they were appended (evictions keep that order).
// Different segments may hold different numbers of entries AND have different
// capacities: that is what lets a policy keep a different token set for every
// layer and head without paying, in allocated bytes, for the largest one (HeadKV's
// local heads keep a short window while its global heads keep long histories).
// When all capacities are equal the buffers are also a regular
// [rows, kv_heads, capacity, head_dim] array (keys() / values() are then views).
//
// Capacity. The store starts with one capacity for every segment. A segment that
// needs more room grows; once a unit headroom h >= 0 is set (set_unit_headroom:
// the entries appended between two policy boundaries, e.g. one image line), a
// segment grows to (length + h) and, after retain(), a segment holding more than
// (length + h) slots shrinks to that — with h = 0 (VAR, which appends a whole
// scale per layer and step) to exactly what it needs and keeps. Without a
// headroom segments grow by doubling and never shrink. Growing or shrinking repacks the layer: one new pair
// of buffers and one copy of the retained entries (counted in the peak).
//
// Mapping of the model families onto the store:
//   - raster (LlamaGen): prefill appends the condition token(s); then one entry per
//     generated token; position = sequence index (cls_token_num + raster index).
//   - next-scale (VAR): append() takes a whole scale (1, 4, 9, ... tokens) at once;
//     positions are the flattened multi-scale sequence indices.
//   - masked (MAR): not stored here. MAR attends bidirectionally over all known
//     tokens and recomputes them every step; LazyMAR's caches are per-layer
//     feature caches of the masked family (engine/models/mar/).
// CFG runs as one doubled batch [cond rows; uncond rows]. retain_pairs() applies one
// keep decision to row r and its partner r + rows/2, so both halves of a CFG pair
// always hold the same positions.
//
// Memory accounting: logical bytes = retained entries x head_dim x 2 (K and V) x
// dtype size; allocated bytes = what the buffers hold; full-equivalent = what an
// uncompressed cache would hold for the tokens appended so far; peak = maximum of
// allocated over the store's life. Per layer and per head breakdowns are available.
// Allocated tracks logical when the store is created with the policy's declared
// worst-case capacity (GenerationSession does that).
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/segment_scoring.h"

namespace kvs {

struct KvMemoryStats {
  int64_t bytes_logical = 0;
  int64_t bytes_allocated = 0;
  int64_t bytes_full_equivalent = 0;
  int64_t bytes_peak = 0;
};

// Attention of a step's queries over one layer of the store.
struct KvAttention {
  at::Tensor out;       // [rows, n_head, T, head_dim]
  at::Tensor probs;     // [rows, n_head, T, capacity] when requested (0 for absent entries)
  at::Tensor key_mass;  // [rows, kv_heads, capacity] when requested: probs summed over queries and grouped heads
};

class KvStore {
 public:
  KvStore(int64_t n_layer, int64_t rows, int64_t kv_heads, int64_t head_dim, int64_t capacity,
          at::TensorOptions options);

  // k, v: [rows, kv_heads, T, head_dim]; `positions`: the T sequence positions.
  // Every segment of the layer gets the T entries after its current ones.
  void append(int64_t layer, const at::Tensor& k, const at::Tensor& v, const std::vector<int64_t>& positions);

  // Keeps, per segment, the entries whose flag is set; keep: bool [rows, kv_heads,
  // >= max length] (CPU, or the buffers' device). Survivors move to the front in
  // their original order.
  void retain(int64_t layer, const at::Tensor& keep);
  // Same, with keep given for the first rows/2 rows and mirrored onto their CFG
  // partners (row r + rows/2). keep: bool [rows/2, kv_heads, >= max length].
  void retain_pairs(int64_t layer, const at::Tensor& keep);
  // retain() for every layer at once: keeps[l] as retain() takes it (undefined:
  // layer l stays as it is). Masks on a GPU (a policy that decided there) come
  // to the host, where the positions are kept, together: one wait for all the
  // layers instead of one per layer (kv_store_compaction.cpp).
  void retain_layers(const std::vector<at::Tensor>& keeps);

  // Attention of queries [rows, n_head, T, head_dim] at `query_positions` (T) over
  // the retained entries; `causal` hides entries whose position is later than the
  // query's. With float32 or bf16 buffers on the CPU it always runs the ragged
  // kernel (kernels/cpu), which reads only each segment's valid entries, also
  // when all segments have equal length (decode attention is memory-bound, so it
  // beats a dense matmul there). On a GPU, when no probs are asked for,
  // LibTorch's variable-length attention kernels read the packed segments in
  // place (kernels/cuda/packed_attention.h; segment starts and lengths are kept
  // on the device, so a decode step uploads nothing), and the key mass, if asked
  // for, comes from the CUDA scoring kernel over the same segments. Elsewhere
  // (probs wanted, key mass without the CUDA kernels, f16 on the CPU, a mask only
  // the dense path applies, or KVSTUDIO_CUDA_ATTENTION=dense) it runs a dense matmul over
  // [0, longest segment), masking slots past a segment's length and, if causal,
  // later positions; its softmax runs in float32 for bf16/f16 buffers. probs /
  // key_mass (float32) on request.
  KvAttention attend(int64_t layer, const at::Tensor& queries, const std::vector<int64_t>& query_positions, bool causal,
                     bool want_probs = false, bool want_key_mass = false) const;

  // One score per retained entry of the first `rows_scored` rows of `layer`, read
  // from the packed buffers in place by the scoring kernels
  // (kernels/segment_scoring.h): per segment, the softmax of the queries
  // [>= rows_scored, n_head, T, head_dim] (any float dtype; widened to float32)
  // over the entries flagged in `candidates` (bool [>= rows_scored, kv_heads,
  // >= stride], CPU; undefined: every entry), combined by `reduction`; with
  // `query_positions` (one per query), query t sees only the entries at positions
  // <= query_positions[t] (SnapKV's and R-KV's causal window votes). Returns
  // float32 [rows_scored, kv_heads, stride] on the CPU (with on_store_device, on
  // the device the scores were computed on: a GPU's, without waiting for them, so
  // that a policy decides there too), 0 for entries outside the
  // candidates and past a segment's length; stride >= max_length(layer). The CUDA
  // kernel runs when the buffers are on a GPU and the kernels are usable there
  // (key_scores_in_place()), the CPU twin otherwise (a GPU store without them is
  // copied to the host first). Sits in kv_store_key_scores.cpp.
  at::Tensor key_scores(int64_t layer, const at::Tensor& queries, const at::Tensor& candidates,
                        kernels::KeyScoreReduction reduction, double scale, int64_t rows_scored, int64_t stride,
                        const std::vector<int64_t>& query_positions = {}, bool on_store_device = false) const;
  // Whether key_scores() reads the buffers where they are: always on the CPU; on a
  // GPU when the CUDA scoring kernels are built and find a device.
  bool key_scores_in_place() const;

  // retain() for entries that never were tokens of a sequence: a CFG branch whose
  // prefix is shorter than its partner's, padded to share one append (Lumina-mGPT).
  // They leave as with retain(), but they are taken off the full-cache
  // equivalent and not counted as evicted.
  void drop_padding(int64_t layer, const at::Tensor& keep);

  // Keeps only batch rows [first_row, first_row + row_count) (e.g. drops the
  // unconditional half once CFG ends). Refused while entries are set aside.
  void keep_rows(int64_t first_row, int64_t row_count);

  // Hides entries from attention without dropping them, for probes that hide a
  // group of entries for a while and show it again (AMS-KV's "Remove Local": a
  // scale is hidden while it is recent and seen again once it is older). The
  // flagged entries (aside: bool [rows, kv_heads, >= max length], CPU) leave their
  // segments as with retain(), but the store keeps them: they still count in its
  // logical and allocated bytes (the memory is not saved), they are not counted as
  // evicted, and bring_back() puts them after each segment's entries again (slot
  // order then differs from position order, which only a causal mask would
  // notice: positions still identify every entry). Every segment must flag the
  // same positions in the same order (a full cache's segments do); one group per
  // layer at a time.
  void set_aside(int64_t layer, const at::Tensor& aside);
  void bring_back(int64_t layer);
  // Entries per segment set aside in `layer` (0 when none).
  int64_t set_aside_count(int64_t layer) const;

  // Entries a segment still receives before the next policy boundary (>= 0; see
  // Capacity above). Until it is called: grow by doubling, never shrink.
  void set_unit_headroom(int64_t entries);
  int64_t unit_headroom() const { return headroom_; }

  int64_t n_layer() const { return static_cast<int64_t>(layers_.size()); }
  int64_t rows() const { return rows_; }
  int64_t kv_heads() const { return kv_heads_; }
  int64_t head_dim() const { return head_dim_; }
  // The largest segment capacity of the layer (the stride of positions_tensor).
  int64_t capacity(int64_t layer) const { return layers_.at(layer).positions.size(2); }
  int64_t segment_capacity(int64_t layer, int64_t row, int64_t head) const;
  // Slots allocated in the layer's packed buffers (the sum of segment capacities).
  int64_t allocated_slots(int64_t layer) const { return layers_.at(layer).k.size(0); }

  int64_t length(int64_t layer, int64_t row, int64_t head) const;
  int64_t max_length(int64_t layer) const;
  bool uniform(int64_t layer) const;  // all segments hold the same number of entries
  // Retained positions of one segment, in slot order.
  std::vector<int64_t> positions(int64_t layer, int64_t row, int64_t head) const;
  // All positions [rows, kv_heads, capacity] (CPU int64; slots >= length are -1) and lengths [rows, kv_heads].
  const at::Tensor& positions_tensor(int64_t layer) const { return layers_.at(layer).positions; }
  const at::Tensor& lengths_tensor(int64_t layer) const { return layers_.at(layer).lengths; }
  // Keys / values of slots [0, length) of every segment as [rows, kv_heads, length,
  // head_dim]: a view when all capacities are equal and every segment reaches
  // `length`, else a copy. Slots at or past a segment's own length are zero.
  at::Tensor keys(int64_t layer, int64_t length) const;
  at::Tensor values(int64_t layer, int64_t length) const;
  // Entries appended to each segment of the layer so far (the uncompressed length).
  int64_t appended(int64_t layer) const { return layers_.at(layer).appended; }

  // Image 0's entries (batch row 0) evicted by retain() per layer, summed over
  // the KV heads, since the store was made.
  std::vector<int64_t> evicted_first_row() const;
  // The same, counted since the previous call (since the store was made on the
  // first): the per-unit eviction count of the unit snapshots
  // (engine/session/event_snapshots.h), which own this mark. Only the
  // reporting mark moves, so a const store (what the families' hooks hand out)
  // can report.
  std::vector<int64_t> evicted_first_row_since_last_report() const;

  KvMemoryStats memory() const;
  std::vector<KvMemoryStats> memory_per_layer() const;
  // Retained entries per (layer, kv head), summed over rows: [n_layer][kv_heads].
  std::vector<std::vector<int64_t>> retained_per_head() const;
  // Allocated slots per (layer, kv head), summed over rows: [n_layer][kv_heads].
  std::vector<std::vector<int64_t>> allocated_per_head() const;
  int64_t bytes_per_entry() const;  // head_dim x 2 x dtype size
  // The buffers' scalar type (the run-time dtype the model chose: f32, bf16, f16).
  at::ScalarType dtype() const { return c10::typeMetaToScalarType(options_.dtype()); }
  // The buffers' device.
  at::Device device() const { return options_.device(); }
  // The path attend() takes for a layer: "cpu-ragged", "flash", "memory-efficient"
  // or "dense" (for a decode step: one query, no probs, no key mass).
  std::string attention_path(int64_t layer) const;

 private:
  struct Layer {
    at::Tensor k, v;        // [slots, head_dim], on the compute device
    at::Tensor offsets;     // int64 [rows, kv_heads], CPU: first slot of each segment
    at::Tensor capacities;  // int64 [rows, kv_heads], CPU
    at::Tensor lengths;     // int64 [rows, kv_heads], CPU
    at::Tensor positions;   // int64 [rows, kv_heads, max capacity], CPU, -1 past the length
    int64_t appended = 0;
    int64_t padding = 0;            // drop_padding() entries, summed over segments
    int64_t evicted_first_row = 0;  // retain() drops from row 0's segments, summed over KV heads
    bool regular = true;            // all capacities equal (buffers viewable as 4-D)
    // Highest position ever appended: no retained entry is later (retain only drops).
    int64_t max_position = -1;
    // The positions of the last append, and the highest position before it, while
    // every segment still ends with that append (no retain since): a causal block
    // of queries at those positions then needs only a bottom-right aligned mask.
    std::vector<int64_t> tail_positions;
    int64_t max_position_before_tail = -1;
    // Entries set aside (set_aside): [rows, kv_heads, n, head_dim] and their n positions.
    at::Tensor aside_k, aside_v;
    std::vector<int64_t> aside_positions;
    // Device copies of the segment starts and lengths (int32) for the GPU kernels;
    // append() advances the lengths on the device, retain/repack drop the copies.
    mutable at::Tensor device_starts, device_lengths;
  };
  // The layer's segments on the buffers' device (uploaded once after a change).
  const Layer& with_device_segments(const Layer& layer) const;
  // retain() with the mask on the host (`keep`) and as it was given (`given`,
  // read in place by the compaction kernel when it is on the buffers' device).
  void retain_with(int64_t layer, const at::Tensor& keep, const at::Tensor& given);
  // Whether the CUDA scoring kernels are built and find a device (checked once).
  static bool cuda_kernels_usable();
  // attend()'s key mass on a GPU from the scoring kernel, the keys read in place:
  // float32 [rows, kv_heads, max length] on the device, no probability tensor.
  // Undefined where the kernels are not usable (kv_store_key_scores.cpp).
  at::Tensor key_mass_on_device(const Layer& layer, const at::Tensor& queries,
                                const std::vector<int64_t>& query_positions, bool causal) const;
  // retain() on a GPU through the compaction kernel: the flagged entries of every
  // segment move, in order, into new buffers with `new_capacities`; the keep flags
  // are uploaded once and the new lengths stay on the device for the attention
  // kernels. False (nothing done) where the kernels are not usable or
  // KVSTUDIO_CUDA_COMPACTION=off (kv_store_compaction.cpp).
  bool compact_on_device(Layer& layer, const at::Tensor& keep, const std::vector<std::vector<int64_t>>& kept,
                         const at::Tensor& new_capacities);
  // The packed kernels apply to this call (see attend()).
  bool packed_path(const Layer& layer, int64_t t, const std::vector<int64_t>& query_positions, bool causal,
                   bool* needs_mask) const;
  static int64_t max_length_of(const Layer& layer);
  // The layer's buffers plus its entries set aside (both held by the store).
  static int64_t allocated_bytes(const Layer& layer);
  // Writes k, v [rows, kv_heads, T, head_dim] after every segment's entries,
  // growing segments that lack room (append() without its bookkeeping).
  void write_after(Layer& layer, const at::Tensor& k, const at::Tensor& v, const std::vector<int64_t>& positions);
  // Moves every segment's first `keep_slots[s]` source slots (given as flat source
  // slot indices, in order) into a layout with the given capacities.
  void repack(Layer& layer, const at::Tensor& new_capacities, const std::vector<std::vector<int64_t>>& kept);
  at::Tensor padded(const Layer& layer, const at::Tensor& buffer, int64_t length) const;
  void update_peak(int64_t transient_bytes = 0);

  std::vector<Layer> layers_;
  int64_t rows_, kv_heads_, head_dim_;
  int64_t headroom_ = 0;
  bool fitted_ = false;  // set_unit_headroom was called: grow to and shrink to length + headroom
  at::TensorOptions options_;
  int64_t bytes_peak_ = 0;
  mutable std::vector<int64_t> evicted_reported_;  // evicted_first_row() at the last report
};

}  // namespace kvs
