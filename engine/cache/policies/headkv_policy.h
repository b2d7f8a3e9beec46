#pragma once
// `headkv` — HeadKV (Liang, Zhang, Wen, Ye, "Head-Aware Key-Value Compression for
// Efficient Autoregressive Image Generation", §4), per layer, per (row, KV head):
//   - cache prefilling: no compression while the cache (condition + image entries)
//     is shorter than the threshold T (100 for LlamaGen, A.2);
//   - head grouping, once, when the cache length reaches T: the current token's
//     query attends over the cache; its attention is accumulated backwards from the
//     current position until it reaches tau (0.9); the head is LOCAL if the span
//     needed is smaller than the local window, GLOBAL otherwise. Types are frozen.
//   - local heads keep [C, R_loc]: the condition plus a sliding window of the most
//     recent tokens (Eq. 3);
//   - global heads keep [C, STE(H), R]: the condition, the recent lines R and the
//     history H thinned by Stratified Token Eviction (Eq. 4-6): H is split by
//     distance into a long-range part (the oldest alpha share) and a near part,
//     and each part evicts its share of the evictions by lowest line-query
//     saliency S_x = mean over the buffered queries of softmax(q K_x^T / sqrt(d))
//     computed over that part's keys only (LineAR Eq. 9 per part);
//   - periodic updates: new tokens are buffered for one line and the cache is
//     updated at line ends (§4 "Efficient Cache Update").
//
// The plain-text paper lost its equations and several symbols; choices where it is
// silent or unreadable (flagged [R] when they reconstruct a stripped symbol):
// - Budget: B = rho x N rounded down to whole lines (as LineAR, §5.1 [R] "we retain
//   rho N tokens for global heads"). Like LineAR, B counts the one-line buffer:
//   a global head is cut to G - n at every line end and grows back to G.
// - match_total=true (default, our issue asks for an equal total): per layer and
//   row, at grouping time, global heads get G = floor((kv x B - n_local x (W + n)) /
//   n_global), capped at N, so that the mean over heads of the per-head peak equals
//   B (a local head peaks at W + n). The paper itself gives global heads B and lets
//   local heads save memory (Table 4): match_total=false does that.
// - budget_tokens() and max_entries() both return the worst case over every
//   segment: max(T - condition, W + n, G_max) with G_max = B, or with match_total
//   kv x B - (kv - 1)(W + n) (one global head, all others local), capped at N.
//   With match_total this is often N itself, so the store is not sized from it:
//   initial_entries() = max(T - condition, B) and the store grows the global heads
//   and shrinks the local ones per segment (allocated tracks logical).
// - Threshold T counts the condition token(s) (cache length), and grouping happens
//   when it is reached (§4 "reaches"; A.2 says "exceeds": one token later).
// - Grouping uses the current token's post-RoPE query against the store's keys,
//   computed here (observe_queries) rather than from key_mass, so that every query
//   head is judged on its own attention; with grouped-query attention a KV head is
//   global if any of its query heads is global (its cache serves all of them).
// - The span needed is counted in positions back from the current token (on an
//   uncompressed cache this is the number of tokens); local iff span < W (the
//   paper's "smaller than" the window).
// - cond_mass=exclude (default): the condition token's attention is left out and
//   tau applies to the image tokens' mass. LlamaGen's class key is zero, so its
//   share measures how peaked the image logits are, not where the head looks, and
//   both head types keep it anyway. cond_mass=include is the literal reading (the
//   condition is reached last, so a head with > 1 - tau on it is global);
//   cond_mass=free counts its mass as already covered (it is always kept).
// - W = local_window (default two lines, 2n, = |R|): a head is local iff 90% of its
//   attention fits in the window a local head keeps. Local heads are updated at line
//   ends too: they keep the W most recent entries after a line end and grow by up
//   to n - 1 in between (never fewer than W recent tokens visible).
// - R = recent_lines lines (default 2, §5.1 "typically two rows").
// - Grouping is itself an update: every head is cut at once to what it would hold
//   at that point of the line (local W + k, global G - n + k, k = tokens of the
//   current line so far), so the pre-compression peak is T, whatever the line ends.
// - STE [R]: alpha (default 0.5; the paper's default was stripped) is the long-range
//   share: the oldest round(alpha x |H|) history entries are long-range, the rest
//   near. Evictions are shared the same way: m_long = min(|long|, round(alpha x m)),
//   the rest from the near part (overflow moves to the other part). The buffered
//   queries are the n most recent ones (the finished line at a line end).
// - Scores in float32; the mean runs over the buffered queries and over the query
//   heads sharing the KV head.
// - No initial image anchors (HeadKV keeps only C, H and R); the condition token is
//   never evicted and never counted.
// - CFG: head types, budgets and scores are decided on the conditional rows
//   (cfg_decision=cond, default) or on both rows (cfg_decision=both: a head is global
//   if global in either row; scores summed) and applied to both, so a CFG pair always
//   holds the same positions. Dropping CFG keeps the conditional rows' decisions.
// - A policy adopted mid-run groups at its first step with a cache at least T long
//   and evicts as many entries as needed at once.
// - Ties: the older entry is evicted first; rounding is half away from zero.
#include <vector>

#include "engine/cache/policies/policy_registry.h"

namespace kvs {

enum class CondMass { Exclude, Free, Include };

struct HeadKvOptions {
  int64_t budget_tokens = 0;   // B before rounding to whole lines
  int64_t threshold = 100;     // cache length (condition included) that triggers grouping
  double tau = 0.9;            // attention accumulation threshold
  int64_t local_window = 0;    // W in tokens; 0 = two lines
  int64_t recent_lines = 2;    // R in lines (global heads)
  double alpha = 0.5;          // long-range share of the history
  bool match_total = true;
  CondMass cond_mass = CondMass::Exclude;
  bool decide_on_both = false;
};

class HeadKvPolicy : public CachePolicy {
 public:
  HeadKvPolicy(const PolicyContext& context, const HeadKvOptions& options);
  std::string name() const override { return "headkv"; }
  int64_t budget_tokens() const override { return max_entries_; }
  int64_t max_entries() const override { return max_entries_; }
  // What every head holds until grouping (the threshold) or after it on average
  // (B); global heads above that grow once, local heads shrink to W + n.
  int64_t initial_entries() const override;
  bool wants_queries() const override { return true; }
  void observe_queries(int64_t layer, int64_t token_index, const at::Tensor& queries) override;
  void after_token(KvStore& store, int64_t token_index) override;

  // B (whole lines) and the resolved local window W, in image tokens.
  int64_t rho_budget() const { return budget_; }
  int64_t local_window() const { return window_; }
  // After grouping (for tests and the UI): the type of a decision row's KV head and
  // the global-head budget G of a (layer, decision row).
  bool grouped(int64_t layer) const { return grouped_rows_.at(layer) > 0; }
  bool is_global(int64_t layer, int64_t row, int64_t head) const;
  int64_t global_budget(int64_t layer, int64_t row) const;

 private:
  void group(const KvStore& store, int64_t layer, int64_t token_index);
  void compress(KvStore& store, int64_t layer, int64_t token_index);

  PolicyContext context_;
  HeadKvOptions options_;
  int64_t budget_, window_, recent_, max_entries_;
  std::vector<at::Tensor> line_queries_;     // per layer [rows, n_head, n, head_dim]
  std::vector<int64_t> last_query_token_;    // per layer: token whose query was observed last
  std::vector<int64_t> grouped_rows_;        // per layer: decision rows grouped (0 = not yet)
  std::vector<std::vector<uint8_t>> global_; // per layer [decision row x kv head]: 1 = global
  std::vector<std::vector<int64_t>> global_budget_;  // per layer [decision row]: G
};

PolicyInfo headkv_policy_info();

}  // namespace kvs
