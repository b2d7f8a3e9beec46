#pragma once
// `amskv` — AMS-KV (Xu, Wang, Wang, Li, "AMS-KV: Adaptive KV Caching in Multi-Scale
// Visual Autoregressive Transformers", AAAI-26, Algorithms 1-2), for the
// next-scale family (VAR). Per layer: the condensed scales (the first cds) are
// always kept and later scales roll through the cache first in, first out (CLRU)
// within the layer's budget, which starts at C_min and is raised once to C_max when
// a scale overflows C_min and the layer's inter-scale key similarity is below
// theta. The similarity is S = -mean((k_i - resize(k_{i-1}))^2) over all heads,
// tokens and dimensions of the image's conditional row (keys as cached, bilinear
// resize): the negated mean squared difference, not the paper's -||.||_2 (Eq. 3),
// so that the paper's theta range applies (scale_key_similarity.h).
//
// theta: an explicit theta= wins; else the model's calibrated theta
// (PolicyContext::calibrations: the bundle's amskv_calibration.json made by
// `kvstudio-cli calibrate --policy amskv`, amskv_calibration.h, which the VAR
// session reads); else the paper's
// -0.008, VAR-d30's value, which on other models may promote every layer.
//
// allocation=uniform is the paper's S1 ("Not All Layers are Cache-Demanding",
// Table 2): as many layers get C_max as in its S2, but spread uniformly over the
// depth instead of chosen by similarity. The paper's experiment gives C_max to
// one sixth of the layers; the choices made here: m = demanding_layers layers
// (0: round(layers / 6)), the centres of m equal bands of depth
// (floor((k + 1/2) x layers / m)), hold C_max from the first scale and every other
// layer C_min throughout (no similarity is computed); the rest of Algorithm 1 (a
// scale larger than the budget is not cached, CLRU) is unchanged.
// allocation=similarity (S2, Algorithm 1) is the default.
//
// Order of attention and eviction (the paper's Algorithm 1 appends a scale and
// rolls the cache, silent on when the scale attends): by default a scale attends
// to C_{i-1} and itself, and the layer rolls to C_bgt after it (order=attend_first).
// The peak is the same either way (C_{i-1} plus the scale, the moment it is
// appended); rolled first (order=evict_first), a cache-efficient layer would draw
// the penultimate scale from the condensed scales and itself alone, the paper's
// most harmful removal ("Remove Local", Table 1). evict_first refuses budgets
// under which CLRU would cut a cached scale's own entries before they attend.
// Choices where the paper is silent: docs/policies.md#amskv
#include <optional>
#include <vector>

#include "engine/cache/policies/policy_registry.h"
#include "engine/cache/policies/scale_key_similarity.h"

namespace kvs {

// Which layers get C_max: promoted by inter-scale similarity (S2, Algorithm 1), or
// a fixed number of layers spread uniformly over the depth (S1, Table 2).
enum class AmsKvAllocation { Similarity, Uniform };

// When a layer rolls its cache to the budget: after the scale has attended
// (the default), or before, so that the scale attends to the rolled cache.
enum class AmsKvOrder { AttendFirst, EvictFirst };

// VAR-d30's threshold (Experimental Setup; Appendix E's best FID).
inline constexpr double kAmsKvPaperTheta = -0.008;

struct AmsKvOptions {
  int64_t condensed_scales = 2;  // C_cds in scales
  int64_t c_max = 0, c_min = 0;  // tokens; 0 = the paper's default from the scale schedule
  std::optional<double> theta;   // unset: the calibration's theta when there is one, else kAmsKvPaperTheta
  AmsKvAllocation allocation = AmsKvAllocation::Similarity;
  int64_t demanding_layers = 0;  // Uniform: layers given C_max; 0 = round(layers / 6), Table 2's share
  AmsKvOrder order = AmsKvOrder::AttendFirst;
};

class AmsKvPolicy : public CachePolicy {
 public:
  AmsKvPolicy(const PolicyContext& context, const AmsKvOptions& options);
  std::string name() const override { return "amskv"; }
  int64_t budget_tokens() const override { return c_max_; }
  int64_t max_entries() const override;
  int64_t initial_entries() const override;
  void after_token(KvStore& store, int64_t token_index) override;

  bool supports_units() const override { return true; }
  bool wants_unit_keys() const override { return options_.allocation == AmsKvAllocation::Similarity; }
  void observe_unit_keys(int64_t layer, int64_t unit, const at::Tensor& keys) override;
  void before_unit_attention(KvStore& store, int64_t layer, int64_t unit) override;
  void after_unit_layer(KvStore& store, int64_t layer, int64_t unit) override;

  int64_t c_max() const { return c_max_; }
  int64_t c_min() const { return c_min_; }
  int64_t condensed_tokens() const { return cds_tokens_; }
  double theta() const { return theta_; }
  // Where theta came from: "theta=", "calibration" or "paper default".
  const std::string& theta_source() const { return theta_source_; }
  // Per layer and image: the current budget C_bgt and the last similarity S
  // (NaN before the second scale).
  int64_t layer_budget(int64_t layer, int64_t image) const;
  double last_similarity(int64_t layer, int64_t image) const;
  bool cache_demanding(int64_t layer, int64_t image) const { return layer_budget(layer, image) == c_max_; }
  // allocation=uniform: the layers given C_max, ascending (empty otherwise).
  const std::vector<int64_t>& uniform_demanding_layers() const { return uniform_layers_; }

 private:
  size_t at(int64_t layer, int64_t image) const { return static_cast<size_t>(layer * images_ + image); }
  // Algorithm 1, lines 5-16, for every image of `layer` with scale `unit` appended:
  // raises budgets and returns the keep mask of the roll (undefined: nothing to
  // evict). Attend-first, a scale that is not cached is dropped in the same mask;
  // evict-first it is marked in drop_pending_ and dropped after it has attended.
  at::Tensor roll(const KvStore& store, int64_t layer, int64_t unit);

  PolicyContext context_;
  AmsKvOptions options_;
  int64_t c_max_ = 0, c_min_ = 0, cds_tokens_ = 0, images_ = 1;
  double theta_ = kAmsKvPaperTheta;
  std::string theta_source_;
  std::vector<int64_t> budget_;        // [layer x image]
  std::vector<double> similarity_;     // [layer x image]
  std::vector<uint8_t> drop_pending_;  // [layer x image]: the current scale is not cached
  ScaleKeySimilarity keys_;
  std::vector<int64_t> uniform_layers_;
};

// The scales at which a layer still at C_min runs the promotion test (Algorithm
// 1, line 10: the appended scale overflows the budget; scales larger than C_max
// are never cached and never tested), following such a layer's cache length
// through the schedule; scale 0 is left out (it has no predecessor, S is
// undefined). What the offline profiling measures theta on.
std::vector<int64_t> amskv_decision_scales(const PolicyContext& context, const AmsKvOptions& options);

PolicyInfo amskv_policy_info();

}  // namespace kvs
