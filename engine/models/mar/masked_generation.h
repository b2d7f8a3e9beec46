#pragma once
// MAR's step-by-step generation (LTH14/mar models/mar.py MAR.sample_tokens +
// models/diffloss.py DiffLoss.sample) on the masked floor
// (engine/generation/masked: the order-based schedule, the token state, the
// per-step callback), ported to match the official code numerically. What is
// MAR's own here is the network behind the loop: at each step the
// encoder–decoder runs on the tokens known so far (doubled with CFG: class
// embedding rows first, then fake_latent rows), or a feature cache stands in
// for it, and the diffusion head samples the tokens predicted now with the
// step's guidance. Every random draw comes from the injectable MarRandom, in
// upstream call order (the generation orders first).
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/generation/masked/masked_loop.h"
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

// The floor's schedule and step types, under MAR's names.
using masked::cfg_for_step;
using masked::mask_len_after_step;
using masked::MaskedResult;
using masked::MaskedStep;

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

// DiffLoss.sample(z, temperature, cfg): z [rows, D] (with guidance: conditional
// rows then unconditional rows) -> sampled tokens [rows, C]. One rng.normal draw of
// the initial noise (rows/2 rows with guidance, duplicated), then one per reverse step.
at::Tensor sample_head(const DiffusionHead& head, const GaussianDiffusion& diffusion, const at::Tensor& z,
                       double temperature, double cfg, MarRandom& rng, const GaussianDiffusion::ModelFn& model = {},
                       const std::function<bool()>& cancelled = {});

// MAR's network for one run on class ids `labels` [B] (CFG's fake_latent rows
// added with guidance), drawing from `rng`; `rng` and `hooks` must outlive it.
std::unique_ptr<masked::MaskedNetwork> class_conditioned_mar(const MarModel& model, const at::Tensor& labels,
                                                             const MaskedParams& params, MarRandom& rng,
                                                             const MaskedHooks& hooks);
// The loop's geometry for `model` under `params`, `images` images.
masked::MaskedShape masked_shape(const MarModel& model, int64_t images, const MaskedParams& params);

// MAR.sample_tokens(bsz = labels.size(0), num_iter, cfg, cfg_schedule, labels, temperature).
MaskedResult generate_masked(const MarModel& model, const at::Tensor& labels, const MaskedParams& params,
                             MarRandom& rng, const MaskedHooks& hooks = {});

}  // namespace kvs::mar
