#pragma once
// The one small interface every KV-cache policy implements: the raster family's
// per-token flow below, and the next-scale family's per-unit hooks (see
// supports_units()). The masked family keeps no growing KV cache: its policies
// are feature caches (LazyMAR, engine/models/mar/), not CachePolicy.
//
// Flow per generated token i (0-based raster index): the model runs one decode
// step whose input is token i; every layer appends token i's K/V to the store
// and, if the policy asked, hands it the step's queries. Then after_token(store, i)
// may evict. A "line boundary" is after_token with (i + 1) % grid_width == 0.
// Condition tokens (positions < condition_tokens) are permanent sinks: no policy
// evicts them and budgets do not count them.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/cache/cache_region.h"
#include "engine/cache/kv_store.h"

namespace kvs {

class CalibrationProvider;  // calibration_provider.h

struct PolicyContext {
  int64_t n_layer = 0, n_head = 0, kv_heads = 0, head_dim = 0;
  int64_t grid_height = 0, grid_width = 0;  // in tokens
  int64_t condition_tokens = 1;             // sequence positions [0, condition_tokens)
  int64_t batch = 1;                        // images (conditional rows)
  bool cfg = false;                         // rows = 2 x batch: [cond; uncond] pairs
  uint64_t seed = 0;                        // for stochastic policies
  // Next-scale family (VAR) only: the tokens of each unit (scale) in generation
  // order, e.g. 1, 4, 9, ..., 256; empty for raster models. Unit u occupies the
  // sequence positions [unit_begin(u), unit_begin(u) + unit_tokens[u]).
  std::vector<int64_t> unit_tokens;
  // Next-scale family: where the policies that need a calibration of the model
  // (HeatKV, AMS-KV, ScaleKV, HACK) get it while they are built; null when
  // none is known (calibration_provider.h says what each policy does then).
  std::shared_ptr<CalibrationProvider> calibrations;
  int64_t image_tokens() const {
    if (unit_tokens.empty()) return grid_height * grid_width;
    int64_t total = 0;
    for (int64_t n : unit_tokens) total += n;
    return total;
  }
  int64_t unit_begin(int64_t unit) const {
    int64_t begin = 0;
    for (int64_t u = 0; u < unit; ++u) begin += unit_tokens.at(static_cast<size_t>(u));
    return begin;
  }
};

class CachePolicy {
 public:
  virtual ~CachePolicy() = default;
  virtual std::string name() const = 0;
  // The budget B in image tokens per (layer, row, head) segment; the store never
  // holds more image entries than this after any after_token call.
  virtual int64_t budget_tokens() const = 0;
  // Worst case of image entries a segment holds between two after_token calls
  // (sizes the store so allocated bytes track logical bytes).
  virtual int64_t max_entries() const { return budget_tokens(); }
  // Image entries every segment gets when the store is created. The store grows a
  // segment that needs more and, with a unit headroom, shrinks one that holds far
  // less, so a policy whose segments differ (HeadKV) starts small instead of
  // allocating its worst case for every head.
  virtual int64_t initial_entries() const { return max_entries(); }
  // Whether the model should pass this step's queries to observe_queries.
  virtual bool wants_queries() const { return false; }
  // queries: [rows, n_head, 1, head_dim], post-RoPE, of the step whose input is token i.
  // Next-scale family: token_index is the unit and queries are all of its
  // [rows, n_head, T, head_dim], scaled so that softmax(q k^T / sqrt(head_dim)) is
  // the model's attention (right after the append, before before_unit_attention).
  virtual void observe_queries(int64_t /*layer*/, int64_t /*token_index*/, const at::Tensor& /*queries*/) {}
  // Whether the step's attention should also yield the per-key attention mass,
  // handed to observe_attention (costs a little: only asked for when needed).
  virtual bool wants_key_mass() const { return false; }
  // key_mass: [rows, kv_heads, L] (L = the layer's max length, on the compute
  // device): the attention of this step's queries (summed over the query heads of
  // each KV head) on slot j; positions: [rows, kv_heads, L] CPU, the sequence
  // position of each slot (-1 for empty slots). Positions identify entries
  // across evictions; slots do not.
  virtual void observe_attention(int64_t /*layer*/, int64_t /*token_index*/, const at::Tensor& /*key_mass*/,
                                 const at::Tensor& /*positions*/) {}
  virtual void after_token(KvStore& store, int64_t token_index) = 0;
  // The regions the policy treats by rule once the sequence positions [0,
  // positions) have been appended (condition tokens included), in drawing order
  // (later regions are drawn over earlier ones). Policies that rank every entry
  // alike (full, H2O, SnapKV, ...) have none.
  virtual std::vector<CacheRegion> regions(int64_t /*positions*/) const { return {}; }

  // ---- Next-scale family (VAR: PolicyContext::unit_tokens is set) ----
  // Unit u (a scale) runs as one step: in every layer l the model appends all
  // unit_tokens[u] entries at once (positions = flattened multi-scale sequence
  // indices) and the unit's queries attend, without a causal mask, to every
  // retained entry (earlier scales and the unit itself). Per unit the calls are:
  //   for each layer l: append -> observe_unit_keys(l, u, keys) if wants_unit_keys()
  //                     -> observe_queries(l, u, queries) if wants_queries()
  //                     -> before_unit_attention(store, l, u)
  //                     -> attend -> observe_unit_attention(l, u, ...) if wants_key_mass()
  //                     -> after_unit_layer(store, l, u)
  //   then after_unit(store, u): the scale boundary (a policy swap happens after it).
  // after_token is never called for this family. The defaults do nothing, so the
  // raster policies are untouched; the session runs a VAR model only with `full`
  // or a policy whose supports_units() is true.
  virtual bool supports_units() const { return false; }
  virtual bool wants_unit_keys() const { return false; }
  // keys: [rows, kv_heads, T, head_dim] of unit u as cached (VAR: after the L2
  // normalisation), on the compute device (AMS-KV's inter-scale key similarity).
  virtual void observe_unit_keys(int64_t /*layer*/, int64_t /*unit*/, const at::Tensor& /*keys*/) {}
  // key_mass: [rows, kv_heads, L] attention of all the unit's queries (summed over
  // queries and grouped heads) per slot; positions: [rows, kv_heads, L] CPU (HeatKV's
  // scale-to-scale attention mass).
  virtual void observe_unit_attention(int64_t /*layer*/, int64_t /*unit*/, const at::Tensor& /*key_mass*/,
                                      const at::Tensor& /*positions*/) {}
  // Layer l has appended unit u's entries but not attended yet: evictions here
  // decide what the unit's queries see (AMS-KV rolls its cache when a scale is
  // appended, Algorithm 1; HeatKV evicts its early-pruned head-scales before a
  // scale starts). The unit's own entries must stay until after_unit_layer: they
  // are the unit's self-attention.
  virtual void before_unit_attention(KvStore& /*store*/, int64_t /*layer*/, int64_t /*unit*/) {}
  // Layer l has attended for unit u: evictions in layer l here keep a budget after
  // every layer (HeatKV's greedy early pruning), not only between scales.
  virtual void after_unit_layer(KvStore& /*store*/, int64_t /*layer*/, int64_t /*unit*/) {}
  // All layers have run unit u.
  virtual void after_unit(KvStore& /*store*/, int64_t /*unit*/) {}
};

// The number of image entries of every segment of `layer` (condition entries excluded).
at::Tensor image_entry_counts(const KvStore& store, int64_t layer, int64_t condition_tokens);

// Slot bookkeeping shared by the policies, over slots [0, length) of one layer
// (all CPU tensors, [rows, kv_heads, length]).
struct ImageSlots {
  at::Tensor is_image;   // bool: slot holds an image entry (not a condition token, not empty)
  at::Tensor rank;       // int64: order among the segment's image entries (slot order = age), -1 otherwise
  at::Tensor count;      // int64 [rows, kv_heads]: image entries per segment
  at::Tensor positions;  // int64: sequence positions (-1 for empty slots)
  int64_t length = 0;
};
ImageSlots image_slots(const KvStore& store, int64_t layer, int64_t condition_tokens);

// Next-scale family: the unit (scale) of every slot of `layer`, [rows, kv_heads,
// max length] CPU int64, -1 for empty slots (needs context.unit_tokens).
at::Tensor unit_of_slots(const KvStore& store, int64_t layer, const PolicyContext& context);

// Keep mask that drops, per segment, the evict_count[r][h] candidates with the
// lowest score (ties: the older entry goes first). Non-candidates are kept.
// score: float [rows, kv, L]; candidates: bool [rows, kv, L]; evict_count: int64 [rows, kv].
// Runs on the score's device (candidates and counts are moved there); the mask is there too.
at::Tensor keep_all_but_lowest(const at::Tensor& score, const at::Tensor& candidates, const at::Tensor& evict_count);

// Applies a keep mask decided on the conditional rows: when the store holds CFG
// pairs (rows == 2 x batch) the first half's decision is mirrored onto the second,
// slot for slot where the partners hold the same positions, else by position (a
// partner keeps the entries whose positions its conditional row keeps:
// Lumina-mGPT's unconditional sequence has a shorter prefix than its prompt).
void apply_keep(KvStore& store, int64_t layer, const at::Tensor& keep, const PolicyContext& context);
// The same for every layer at once (keeps[l] undefined: layer l keeps all):
// KvStore::retain_layers, one wait for the masks a policy made on a GPU.
void apply_keeps(KvStore& store, const std::vector<at::Tensor>& keeps, const PolicyContext& context);

// Rows whose scores decide evictions: all rows, or the conditional half of CFG pairs.
int64_t decision_rows(const KvStore& store, const PolicyContext& context);

}  // namespace kvs
