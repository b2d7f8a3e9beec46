#pragma once
// MAR's step-by-step generation (LTH14/mar models/mar.py MAR.sample_tokens +
// models/diffloss.py DiffLoss.sample), ported to match the official code
// numerically, with the hooks the session, the UI and a feature cache need.
//
// Step k of num_iter: run the encoder–decoder on the tokens known so far
// (doubled with CFG: class embedding rows first, then fake_latent rows); the
// tokens still unknown after the step are the first mask_len positions of each
// image's random order, mask_len = floor(seq_len * cos(pi/2 * (k+1)/num_iter))
// clamped to [1, unknown - 1]; the tokens predicted now (all remaining ones at
// the last step) are sampled by the diffusion head with this step's guidance
// (linear: 1 + (cfg - 1) * (seq_len - mask_len) / seq_len, or constant).
// Every random draw comes from the injectable MarRandom, in upstream call order.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/models/mar/gaussian_diffusion.h"
#include "engine/models/mar/mar_flops.h"
#include "engine/models/mar/mar_transformer.h"

namespace kvs::mar {

struct MarModel;
class DiffusionHead;
class MarRandom;

struct MaskedParams {
  int64_t num_iter = 64;                // decoding steps
  double cfg = 1.0;                     // 1.0 disables guidance (upstream compares cfg == 1.0)
  std::string cfg_schedule = "linear";  // "linear" | "constant"
  double temperature = 1.0;             // scales the diffusion noise
  void validate() const;                // throws InvalidArgumentError
};

// The schedule of one step, as upstream computes it (float64 cosine, float32 mask_len / cfg).
// Tokens still unknown after step `step` when `unknown_now` are unknown before it.
int64_t mask_len_after_step(int64_t step, int64_t num_iter, int64_t seq_len, int64_t unknown_now);
// The guidance of a step whose mask_len is `mask_len` (float32 arithmetic, as upstream).
float cfg_for_step(double cfg, const std::string& schedule, int64_t mask_len, int64_t seq_len);

// What the transformer is asked for at one step. Rows are 2B with CFG
// (conditional rows first), else B.
struct MarStepInput {
  int64_t step = 0, num_iter = 0;
  bool cfg = false;
  at::Tensor tokens;           // [rows, seq_len, C]: known tokens, zeros elsewhere
  at::Tensor mask;             // [rows, seq_len] float, 1 = unknown before this step
  at::Tensor class_embedding;  // [rows, E]
  // The positions this step predicts / the previous step predicted ([rows,
  // seq_len] bool). Upstream derives the former after the forward; it depends
  // only on the order, so it is known before (LazyMAR recomputes both sets).
  at::Tensor to_predict;
  at::Tensor predicted_before;
};

// The feature-cache hook (a "policy" for masked models): how the diffusion
// head's condition z is obtained at a step, and optionally how the head is
// evaluated. The default (no cache) is upstream's full recomputation.
class MarFeatureCache {
 public:
  virtual ~MarFeatureCache() = default;
  // z [rows, seq_len, D] = forward_mae_decoder(forward_mae_encoder(...)), or a
  // cached approximation of it. Runs the transformer's pieces itself.
  virtual at::Tensor condition(const MarTransformer& transformer, const MarStepInput& input) = 0;
  // The model function of this step's reverse diffusion over `diffusion`'s
  // respaced steps (z_rows: the selected condition rows, cfg: this step's
  // guidance, 1 = none); it is called once per reverse step, t = T-1 down to 0.
  // It counts its own FLOPs. Empty: the exact head (counted by generate_masked).
  virtual GaussianDiffusion::ModelFn head_model(const DiffusionHead& head, const GaussianDiffusion& diffusion,
                                                const MarStepInput& input, const at::Tensor& z_rows, double cfg) {
    (void)head, (void)diffusion, (void)input, (void)z_rows, (void)cfg;
    return {};
  }
};

// What on_step sees after a step (image rows only, never the CFG copies).
struct MaskedStep {
  int64_t step = 0, steps_total = 0;
  int64_t tokens_done = 0;                     // known tokens per image after this step
  int64_t predicted = 0;                       // tokens per image predicted at this step
  double cfg = 1.0;                            // this step's guidance
  const at::Tensor* tokens = nullptr;          // [B, seq_len, C]: known tokens, zeros elsewhere
  const at::Tensor* predicted_mask = nullptr;  // [B, seq_len] bool: predicted at this step
  const at::Tensor* known = nullptr;           // [B, seq_len] bool: known after this step
  const at::Tensor* orders = nullptr;          // [B, seq_len] int64: the generation orders
};

struct MaskedHooks {
  // Checked before every step and every reverse diffusion step; true throws CancelledError.
  std::function<bool()> cancelled;
  std::function<void(const MaskedStep&)> on_step;
  MarFeatureCache* feature_cache = nullptr;    // null: the full computation
  const MarBlockObserver* observer = nullptr;  // per-block hooks of the full computation
  // Counts the matmul/attention FLOPs executed (mar_flops.h): the full computation
  // and the exact head here; a feature cache counts what it runs itself (and its
  // head_model's evaluations). begin_step() is called before every step.
  MarFlopCounter* flops = nullptr;
};

struct MaskedResult {
  at::Tensor tokens;  // [B, seq_len, C] (before unpatchify)
  at::Tensor orders;  // [B, seq_len] int64
  std::vector<int64_t> predicted_per_step;
  std::vector<double> cfg_per_step;
};

// DiffLoss.sample(z, temperature, cfg): z [rows, D] (with guidance: conditional
// rows then unconditional rows) -> sampled tokens [rows, C]. One rng.normal draw of
// the initial noise (rows/2 rows with guidance, duplicated), then one per reverse step.
at::Tensor sample_head(const DiffusionHead& head, const GaussianDiffusion& diffusion, const at::Tensor& z,
                       double temperature, double cfg, MarRandom& rng, const GaussianDiffusion::ModelFn& model = {},
                       const std::function<bool()>& cancelled = {});

// MAR.sample_tokens(bsz = labels.size(0), num_iter, cfg, cfg_schedule, labels, temperature).
MaskedResult generate_masked(const MarModel& model, const at::Tensor& labels, const MaskedParams& params,
                             MarRandom& rng, const MaskedHooks& hooks = {});

}  // namespace kvs::mar
