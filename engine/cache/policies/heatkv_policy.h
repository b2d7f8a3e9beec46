#pragma once
// `heatkv` — HeatKV (Head-tuned KV-cache compression for visual autoregressive
// modeling, §3: Eq. 2-5, Algorithms 1-2) for the next-scale family (VAR). An
// offline calibration measures each head's scale-to-scale attention (Eq. 2,
// ScaleAttentionProfile); S-CAS ranks, per source scale, the heads that need it
// least, N_k (Eq. 5) says how many head-scales must be gone after scale k, and
// greedy early pruning evicts just enough before each scale that the total cache
// stays within B = b x layers x heads x c_{K-1} after every layer. The sink scales
// stay; the last scale is never cached. The plan is fixed before generation.
// Where the paper and the official code (arm-research/heatkv, 96dc288) differ,
// this follows the code: the cache size after a layer counts the current scale
// only in the layers that ran (Algorithm 2 as printed counts it in every
// layer), early pruning never picks the current scale or a layer that ran, and
// ties in an S-CAS order go to the lower head index, then the lower layer.
// Choices where the paper is silent: docs/policies.md#heatkv
#include <vector>

#include "engine/cache/policies/policy_registry.h"

namespace kvs {

struct ScaleAttentionProfile;  // scale_attention_profile.h

struct HeatKvOptions {
  double budget = 0.1;  // b
  int64_t sinks = 3;    // s, in scales
  bool binary = false;  // Binary-HeatKV (whole heads) instead of head-scales
  bool naive = false;   // E_k = G_k \ G_{k-1}
  // Classes of the S-CAS calibration the session gives the policy (0: the
  // bundle's file, else the first-use one); the policy only checks it.
  int64_t calibration_images = 0;
  // CFG of that calibration (0: the run's own CFG); the policy only checks it.
  double calibration_cfg = 0;
};

class HeatKvPolicy : public CachePolicy {
 public:
  HeatKvPolicy(const PolicyContext& context, const HeatKvOptions& options);
  std::string name() const override { return "heatkv"; }
  int64_t budget_tokens() const override;
  int64_t max_entries() const override { return context_.image_tokens(); }
  int64_t initial_entries() const override;
  void after_token(KvStore& store, int64_t token_index) override;

  bool supports_units() const override { return true; }
  void before_unit_attention(KvStore& store, int64_t layer, int64_t unit) override;
  void after_unit_layer(KvStore& store, int64_t layer, int64_t unit) override;

  // B = floor(b x layers x heads x c_{K-1}): image entries per image over all layers and heads.
  int64_t total_budget_tokens() const { return total_budget_; }
  int64_t heads_to_prune(int64_t scale) const { return n_prune_.at(static_cast<size_t>(scale)); }    // N_k
  int64_t early_pruned(int64_t scale) const { return early_count_.at(static_cast<size_t>(scale)); }  // |E_k|
  // Whether head-scale (source, layer, head) is absent at the start / at the end of scale k.
  bool absent_at_start(int64_t scale, int64_t source, int64_t layer, int64_t head) const;
  bool absent_at_end(int64_t scale, int64_t source, int64_t layer, int64_t head) const;
  // The cache after `layer` ran scale k and evicted (the count the plan keeps <= B):
  // layers up to it with G_k's retention of scales <= k, the later layers with
  // A_k's retention of scales < k (scale k is not in them yet).
  int64_t planned_size_after_layer(int64_t scale, int64_t layer) const;

 private:
  using HeadScaleSet = std::vector<uint8_t>;  // [source scale][layer][head]
  size_t index(int64_t source, int64_t layer, int64_t head) const {
    return static_cast<size_t>((source * context_.n_layer + layer) * context_.kv_heads + head);
  }
  void plan(const ScaleAttentionProfile& profile);
  int64_t cached_tokens(const HeadScaleSet& absent, int64_t scale, int64_t layer, int64_t head) const;
  void evict(KvStore& store, int64_t layer, const HeadScaleSet& absent, int64_t max_source) const;

  PolicyContext context_;
  HeatKvOptions options_;
  int64_t scales_ = 0, sink_tokens_ = 0, total_budget_ = 0;
  std::vector<HeadScaleSet> start_, end_;  // A_k and G_k per scale
  std::vector<int64_t> n_prune_, early_count_;
};

PolicyInfo heatkv_policy_info();

// The calibration_images of a heatkv spec (0 when unset: the default
// calibration), checked before any work: InvalidArgumentError naming the
// parameter for a negative value or more than the model's `num_classes`.
int64_t heatkv_calibration_images(const PolicySpec& spec, int64_t num_classes);
int64_t heatkv_calibration_images(const std::string& spec, int64_t num_classes);  // parses it first
// InvalidArgumentError unless 0 <= images <= num_classes (the model's classes).
void check_heatkv_calibration_images(int64_t images, int64_t num_classes);

// The CFG scale a heatkv spec's calibration is measured at: its calibration_cfg,
// or `run_cfg` when unset (0). A calibration's settings (classes, CFG, seed) are
// its key: a stored or kept one is used only when they all match.
double heatkv_calibration_cfg(const std::string& spec, double run_cfg);

}  // namespace kvs
