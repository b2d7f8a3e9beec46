#pragma once
// `headkv` — HeadKV (Liang, Zhang, Wen, Ye, "Head-Aware Key-Value Compression for
// Efficient Autoregressive Image Generation", §4; thresholds from A.2), per layer,
// per (row, KV head): no compression until the cache reaches the threshold T;
// then every head is grouped once by accumulating its attention backwards to tau:
// local heads keep a sliding window, global heads the recent lines plus a history
// thinned by Stratified Token Eviction; updates at line ends.
//
// Memory, as the paper gives it (§5.1 "Implementation Details", Table 4): rho sets
// what a global head keeps, B = rho x N, and a local head keeps only its window
// of W recent tokens, "always smaller than that of global heads" (W < B, checked);
// so after grouping a layer holds at most B per head, less the more are local,
// which is why Table 4 puts HeadKV's memory below LineAR's at equal rho. That is
// the default. match_total=true is not the paper's: global heads then share what
// the local heads leave, G = floor((kv x B - n_local x W) / n_global) capped at N,
// so the mean per head equals B (a comparison at equal total memory).
//
// The one-line buffer of periodic updates (§4 "Efficient Cache Update") lives
// inside the recent window, as §4 appends new tokens to the recent set: a global
// head's R recent lines end with the line under way, and a local head's window W
// includes it. At a line end a global head is cut to G - n (R - 1 recent lines and
// the history that fits) and grows back to G by the next one; so at rho = 1/8 on a
// 24x24 grid (B = 3 lines, R = 2) one line of history survives every line end.
// Lines on Lumina-mGPT: one image row with its end-of-line token (n = W + 1, as
// the paper's N = 2352 = 48 x 49 counts them); the recent window and R count
// those lines, and the threshold follows A.2's 300 (768 px) / 500 (1024 px).
// Choices where the paper is silent or unreadable: docs/policies.md#headkv
#include <vector>

#include "engine/cache/policies/policy_registry.h"

namespace kvs {

enum class CondMass { Exclude, Free, Include };

struct HeadKvOptions {
  int64_t budget_tokens = 0;  // B before rounding to whole lines
  int64_t threshold = 100;    // cache length (condition included) that triggers grouping
  double tau = 0.9;           // attention accumulation threshold
  int64_t local_window = 0;   // W in tokens, the line under way included; 0 = two lines (< B)
  int64_t recent_lines = 2;   // R in lines (global heads), the line under way included
  double alpha = 0.5;         // long-range share of the history
  bool match_total = false;   // the paper: global heads keep B
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
  // (B); global heads above that grow once, local heads shrink to W.
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
  // The keep mask of `layer` at this boundary (undefined: nothing to evict), on
  // the device its scores were computed on; after_token evicts every layer's at once.
  at::Tensor compress(const KvStore& store, int64_t layer, int64_t token_index);

  PolicyContext context_;
  HeadKvOptions options_;
  int64_t budget_, window_, recent_, max_entries_;
  std::vector<at::Tensor> line_queries_;             // per layer [rows, n_head, n, head_dim]
  std::vector<int64_t> last_query_token_;            // per layer: token whose query was observed last
  std::vector<int64_t> grouped_rows_;                // per layer: decision rows grouped (0 = not yet)
  std::vector<std::vector<uint8_t>> global_;         // per layer [decision row x kv head]: 1 = global
  std::vector<std::vector<int64_t>> global_budget_;  // per layer [decision row]: G
};

PolicyInfo headkv_policy_info();
// The grouping threshold T of A.2 for an image of `image_tokens` (the default
// of the `threshold` parameter).
int64_t headkv_default_threshold(int64_t image_tokens);

}  // namespace kvs
