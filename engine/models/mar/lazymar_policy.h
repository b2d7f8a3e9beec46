#pragma once
// `lazymar`: LazyMAR's feature caches for masked (MAR) models — Yan et al. 2025,
// "LazyMAR: Accelerating Masked Autoregressive Models via Feature Caching"
// (../shared/papers/lazymar.txt), following the official implementation
// (feihongyan1/LazyMAR models/mar_cache.py, models/basic.py) where the paper
// leaves details open. For the masked family a "policy" is a feature-caching
// strategy (mar::MarFeatureCache), not a KV eviction policy.
//
// Periodic cache-reuse-refreshment (§1, §3.2): step k is a refresh step when
// k < start or (k - start) % interval == 0 (interval = τ). A refresh step runs the
// exact computation (both CFG branches, every token: its z equals the full
// recomputation's bit for bit) and fills the caches; the steps in between are lazy.
//
// Token cache (§3.2.1, Eq. 8-9), at a lazy step, on the rows it caches:
// - encoder: only the buffer and the tokens predicted at the previous step (now
//   known) are computed; the other known tokens' K/V come from the cache (the
//   official EncoderAttention's appended KV cache), and their encoder outputs /
//   decoder inputs are reused from the cache;
// - decoder blocks before the similarity layer s run on every token; at block s
//   every token's value v is computed and compared with the previous step's v of
//   the same block: S(x_i) = cosine similarity per head, averaged over heads
//   (Eq. 8 on the value matrix, §4.4 "The Position to Calculate Similarity");
// - I_compute = the N tokens of lowest similarity, where the tokens predicted at
//   this step and at the previous step are always in I_compute; N = max(forced +
//   extra, floor(ratio(k) * (buffer + seq_len))) (official _prune_tokens);
// - from block s's MLP on, only I_compute is computed; its K/V overwrite the
//   cache, every query attends to all tokens (cached K/V for I_cache, Eq. 9).
// Condition cache (§3.2.2, Eq. 10): at refresh steps C_cond := X_uncond - X_cond
// at the decoder's last block output (before decoder_norm, as the official code);
// at lazy steps only the conditional rows run and X_uncond := X_cond + C_cond.
//
// Choices where the paper is silent (official code unless said otherwise):
// - s = the decoder block with 0-based index `layer` (default 3, the official
//   layer_idx == 3); on decoders with fewer blocks, the last block (ours: the
//   official code cannot run them).
// - Retention schedule: "official" stretches the official 64-entry per-step table
//   (1.0 for steps 0-19, then 0.6 ... 0.05) over any step count by relative
//   position, ratio(k) = table[floor(64 k / steps)] — identical at 64 steps; the
//   official code indexes the table by step and fails above 64 steps. "constant"
//   uses `ratio` at every lazy step.
// - The forced tokens (predicted now and at the previous step) are excluded from
//   the ranking (score -inf), so they are computed even when other tokens have a
//   negative cosine similarity (the official code scores them 0, which can rank
//   them behind such tokens).
// - The buffer positions take part in the ranking like image tokens (official).
// - Defaults start = 5, interval = 9: the official code's values and the paper's
//   64-step setting (§4.1); the paper's 32-step setting is start = 4, interval = 5.
// - Tokens not in I_compute keep, as z, their last computed decoder output (the
//   official code leaves zeros there; only the predicted tokens' z is used, and
//   they are always computed, so the images do not depend on this).
// - The token cache and the K/V caches hold the conditional rows only when the
//   condition cache is on (official); with condition_cache=off they hold every row
//   and the unconditional branch goes through the token cache too (Table 2's
//   "token cache only" ablation).
// Diffusion-head cache (official models/diffloss_cached.py; the paper does not
// describe it), an option: head_cache=on reuses the head's MLP branches,
// residual updates of blocks 1-4 and CFG difference across the reverse steps of
// each MAR step, with a full head every head_threshold steps (official 7) — see
// lazymar_head_cache.h for the rule and the choices. Off by default: the paper's
// text describes only the token and condition caches, and the head cache costs
// agreement (MAR demo: 28 dB PSNR against the full run, 40 dB without it). The
// official LazyMAR code always runs it, so the paper's FLOPs (Table 1) are to be
// compared with head_cache=on.
#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/cache/policies/policy_registry.h"
#include "engine/models/mar/masked_generation.h"

namespace kvs {

struct LazyMarParams {
  int64_t start = 5;     // steps [0, start) compute everything; `start` is the first refresh of the period
  int64_t interval = 9;  // τ: a refresh every `interval` steps from `start`
  std::string retention = "official";  // "official" | "constant"
  double ratio = 0.25;                 // recomputed fraction at lazy steps with retention=constant
  int64_t extra = 15;                  // tokens recomputed on top of the forced ones
  int64_t layer = 3;                   // similarity block (0-based)
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
  // `flops` (may be null) receives the FLOPs this cache executes.
  LazyMarCache(LazyMarParams params, const mar::MarConfig& config, mar::MarFlopCounter* flops = nullptr);

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
// naming the policies masked models take.
std::unique_ptr<LazyMarCache> make_masked_feature_cache(const std::string& spec, const mar::MarConfig& config,
                                                        mar::MarFlopCounter* flops = nullptr);
// True when the registry lists `name` for the masked family.
bool serves_masked_family(const std::string& name);

}  // namespace kvs
