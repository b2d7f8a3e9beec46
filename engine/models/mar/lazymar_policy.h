#pragma once
// `lazymar`: LazyMAR's feature caches for masked (MAR) models — Yan et al. 2025,
// "LazyMAR: Accelerating Masked Autoregressive Models via Feature Caching",
// following the official implementation (feihongyan1/LazyMAR models/mar_cache.py,
// models/basic.py) where the paper leaves details open. For the masked family a
// "policy" is a feature-caching strategy (mar::MarFeatureCache), not a KV
// eviction policy.
//
// Periodic cache-reuse-refreshment (§1, §3.2): refresh steps (k < start or
// (k - start) % interval == 0) run the exact computation and fill the caches.
// Token cache (§3.2.1, Eq. 8-9): at lazy steps only the buffer, the tokens
// predicted at the previous step and, from the similarity block on, the N tokens
// least similar to the previous step (cosine of the values, averaged over heads)
// are computed; the others reuse their cached K/V and outputs. `selection` swaps
// that choice for the other strategies of the ablation (§4.4, Table 3 and
// Figure 6's random cache): lazymar_selection.h. Condition cache
// (§3.2.2, Eq. 10): at lazy steps the unconditional branch is the conditional one
// plus the difference stored at the last refresh step. The diffusion-head cache
// (official models/diffloss_cached.py, not in the paper's text) is an option,
// off by default: lazymar_head_cache.h.
//
// Choices where the paper is silent: docs/policies.md#lazymar
#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/cache/policies/policy_registry.h"
#include "engine/models/mar/lazymar_selection.h"
#include "engine/models/mar/masked_generation.h"

namespace kvs {

struct LazyMarParams {
  int64_t start = 5;     // steps [0, start) compute everything; `start` is the first refresh of the period
  int64_t interval = 9;  // τ: a refresh every `interval` steps from `start`
  std::string retention = "official";  // "official" | "constant"
  double ratio = 0.25;                 // recomputed fraction at lazy steps with retention=constant
  int64_t extra = 15;                  // tokens recomputed on top of the forced ones
  int64_t layer = 3;                   // similarity block (0-based)
  LazyMarSelection selection = LazyMarSelection::MaxSimilarity;  // which tokens reuse their features (Table 3)
  bool token_cache = true;
  bool condition_cache = true;
  bool head_cache = false;     // the official diffusion-head cache (lazymar_head_cache.h)
  int64_t head_threshold = 7;  // a full head at t = T-1 and every t % head_threshold == 0

  static LazyMarParams from(const PolicyParams& params);  // validates; throws InvalidArgumentError
  void validate() const;
  bool is_refresh(int64_t step) const { return step < start || (step - start) % interval == 0; }
  // The recomputed fraction of the tokens at a lazy step of a `steps`-step run.
  double retention_ratio(int64_t step, int64_t steps) const;
};

// The official per-step retention table (64 entries).
const std::vector<double>& lazymar_official_retention();

class LazyMarCache : public mar::MarFeatureCache {
 public:
  // `flops` (may be null) receives the FLOPs this cache executes; `seed` seeds
  // selection=random.
  LazyMarCache(LazyMarParams params, const mar::MarConfig& config, mar::MarFlopCounter* flops = nullptr,
               uint64_t seed = 0);

  at::Tensor condition(const mar::MarTransformer& transformer, const mar::MarStepInput& input) override;
  // With head_cache=on: LazyMarHeadCache over this step's reverse diffusion; else empty (the exact head).
  mar::GaussianDiffusion::ModelFn head_model(const mar::DiffusionHead& head, const mar::GaussianDiffusion& diffusion,
                                             const mar::MarStepInput& input, const at::Tensor& z_rows,
                                             double cfg) override;

  // What the last condition() did.
  struct StepReport {
    int64_t step = -1;
    bool refresh = true;
    bool unconditional_computed = true;  // false when the condition cache stood in for it
    // [B, seq_len] bool (CPU): grid positions whose features were recomputed in
    // the decoder blocks from the similarity block on (all at refresh steps).
    at::Tensor recomputed;
    int64_t recomputed_tokens = 0;  // image 0, grid positions
    // Lazy steps only (undefined at refresh steps), over the cached rows and every
    // sequence position (buffer first), CPU: the cosine similarity S(x_i) of block
    // s's values (Eq. 8), I_compute (bool), and how many positions were forced
    // (predicted now or at the previous step) / selected per row.
    at::Tensor similarity, selected;
    int64_t forced_tokens = 0, selected_tokens = 0;
  };
  const StepReport& last_step() const { return report_; }
  // Sees every decoder block's Q/K/V of image 0's first row ([1, heads,
  // buffer + seq_len, head_dim]) at every step: K and V of every position (the
  // cached ones included), Q at the positions this step computed (all at refresh
  // steps; the recomputed ones at lazy steps, zeros elsewhere). The tokens
  // predicted at a step are always recomputed, so their queries are exact (the
  // session's attention maps). Null: no calls.
  void set_decoder_observer(const mar::MarBlockObserver* observer) { observer_ = observer; }
  const LazyMarParams& params() const { return params_; }
  int64_t similarity_layer() const { return sim_layer_; }
  // C_cond = X_uncond - X_cond at the last decoder block (refresh steps with CFG), [B, N, D].
  const at::Tensor& condition_difference() const { return cond_diff_; }
  // The last decoder block's output per cached row as of the last step (pre decoder_norm), [rows, N, D].
  const at::Tensor& last_decoder_output() const { return dec_last_; }

 private:
  at::Tensor refresh(const mar::MarTransformer& t, const mar::MarStepInput& in);
  at::Tensor lazy(const mar::MarTransformer& t, const mar::MarStepInput& in);
  void count(double flops) const;
  void observe(int64_t layer, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) const;

  LazyMarParams params_;
  mar::MarConfig config_;
  mar::MarFlopCounter* flops_ = nullptr;
  const mar::MarBlockObserver* observer_ = nullptr;
  at::Generator generator_;  // selection=random
  int64_t sim_layer_ = 0;
  int64_t cached_rows_ = 0;  // rows held by the caches (conditional rows, or every row)
  // Per encoder / decoder block: K and V of every sequence position (buffer +
  // grid), [cached_rows, buffer + seq_len, heads * head_dim].
  std::vector<at::Tensor> enc_k_, enc_v_, dec_k_, dec_v_;
  at::Tensor dec_in_;     // decoder input, [cached_rows, buffer + seq_len, D]
  at::Tensor dec_last_;   // the last block's output, same shape
  at::Tensor sim_v_;      // block s's V at the previous step, [cached_rows, heads, N, head_dim]
  at::Tensor cond_diff_;  // X_uncond - X_cond at the last block (refresh steps), [B, N, D]
  StepReport report_;
};

// The feature cache a masked-model spec asks for: nullptr for "full", a
// LazyMarCache for "lazymar:..."; any other policy throws InvalidArgumentError
// naming the policies masked models take. `seed`: the request's (selection=random).
std::unique_ptr<LazyMarCache> make_masked_feature_cache(const PolicySpec& spec, const mar::MarConfig& config,
                                                        mar::MarFlopCounter* flops = nullptr, uint64_t seed = 0);
// The same for a spec still in text (parsed here).
std::unique_ptr<LazyMarCache> make_masked_feature_cache(const std::string& spec, const mar::MarConfig& config,
                                                        mar::MarFlopCounter* flops = nullptr, uint64_t seed = 0);
// True when the registry lists `name` for the masked family.
bool serves_masked_family(const std::string& name);

}  // namespace kvs
