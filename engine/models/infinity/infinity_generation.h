#pragma once
// Infinity's autoregressive_infer_cfg (infinity/models/infinity.py) on the
// next-scale floor (engine/generation/scale): what is Infinity's own here is
// the network behind the loop, per scale:
//   - CFG rows: with any scale's cfg != 1 the rows are [cond; uncond], the
//     unconditional text being the learned cfg_uncond[:len] of each prompt, or
//     the negative prompt's own T5 rows; at scale si the logits are
//     (cond, uncond) / tau_si mixed as cfg_si * cond + (1 - cfg_si) * uncond, the
//     conditional rows alone where cfg_si == 1;
//   - the bits are drawn per bit (bitwise_sampler.h) and become BSQ codes,
//     summed at the final latent size; the next scale's input is the sum
//     resized to that scale, word-embedded and repeated for the CFG rows;
//   - the image is the BSQ-VAE decoder's output of the summed codes.
// The loop (cache sizing, cancellation, the policy's unit hooks, the attention
// probe, the per-scale callback) is the floor's.
#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>
#include <vector>

#include "engine/cache/policies/cache_policy.h"
#include "engine/generation/scale/scale_loop.h"
#include "engine/models/infinity/bitwise_sampler.h"
#include "engine/models/infinity/infinity_transformer.h"

namespace kvs::infinity {

// The T5 rows of a batch's texts: every row's output concatenated [N, Ct5] and each row's length.
struct TextRows {
  at::Tensor rows;
  std::vector<int64_t> lengths;
  int64_t texts() const { return static_cast<int64_t>(lengths.size()); }
};

struct InfinityParams {
  // Per scale, or one value for every scale (gen_one_img's cfg_list / tau_list).
  std::vector<double> cfg{3.0};
  std::vector<double> tau{0.5};
  BitSampling sampling;
  uint64_t seed = 0;  // g_seed
  double cfg_at(int64_t si) const;
  double tau_at(int64_t si) const;
  bool uses_cfg(int64_t scales) const;  // any scale's cfg != 1
  void validate(int64_t scales) const;
};

// The schedule a run generates: the aspect template and its grids (scale_schedules.h).
struct InfinitySchedule {
  ScaleTemplate scale_template;
  std::vector<Grid> grids;
  std::vector<int64_t> offsets() const { return scale_offsets(grids); }
};

// What a conformance runner or a test sees of a scale and may change: the
// guided logits [B, tokens * bits, 2], the port's own bits [B, tokens, bits];
// it returns the bits to continue with (an undefined tensor: the port's own).
using BitsOverride = std::function<at::Tensor(int64_t si, const at::Tensor& guided, const at::Tensor& own_bits)>;
// Recorded Exp(1) draws of scale si ([B * tokens * bits, 2]) to replay; undefined: the generator's.
using DrawsOverride = std::function<at::Tensor(int64_t si)>;

// The BSQ side the network hands each scale's bits to (bsq_codes.h's
// accumulator behind an interface, so that this header stays free of it).
class CodeSink {
 public:
  virtual ~CodeSink() = default;
  // Adds scale si's bits [B, tokens, bits]; returns the next scale's input
  // codes [B, tokens', bits] (undefined after the last scale).
  virtual at::Tensor add_scale(int64_t si, const at::Tensor& bits) = 0;
  virtual const at::Tensor& summed_codes() const = 0;  // [B, d, H, W]
};
std::unique_ptr<CodeSink> make_code_sink(int64_t batch, const InfinityConfig& config, const std::vector<Grid>& grids,
                                         at::Device device);

struct InfinityNetworkOptions {
  BitsOverride bits_override;
  DrawsOverride draws_override;
  // Every scale's next input codes, in order (for conformance), when set.
  std::vector<at::Tensor>* next_inputs = nullptr;
  // Every block's output at the first scales (index = scale), when set.
  std::vector<std::vector<at::Tensor>>* block_outputs = nullptr;
  int64_t block_output_scales = 0;
  const InfinityText** text_out = nullptr;  // receives the run's text side (valid while the network lives)
};

// Infinity's network for one run: `prompts` the conditional rows (B texts),
// `negatives` empty (cfg_uncond) or B negative texts.
std::unique_ptr<scale::ScaleNetwork> text_conditioned_infinity(const InfinityTransformer& transformer,
                                                               const TextRows& prompts, const TextRows& negatives,
                                                               const InfinitySchedule& schedule,
                                                               const InfinityParams& params,
                                                               InfinityNetworkOptions options = {});

// The run's geometry (rows: 2B with CFG) and its policy context (one unit per
// scale, the last grid as the token grid, no condition entries: the prompt
// enters through AdaLN, the start token and the cross-attention).
scale::ScaleShape scale_shape(const InfinitySchedule& schedule, int64_t batch, bool cfg);
PolicyContext scale_policy_context(const InfinityConfig& config, const InfinitySchedule& schedule, int64_t batch,
                                   bool cfg, uint64_t seed);

// The ids the loop reports per token: the token's bits packed most significant first.
at::Tensor pack_bits(const at::Tensor& bits);

}  // namespace kvs::infinity
