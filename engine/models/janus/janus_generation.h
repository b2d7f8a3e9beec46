#pragma once
// Janus-Pro's generate() (generation_inference.py), token by token: step 0 runs
// the language model over the whole prompt with a KV cache; every later step
// feeds one image embedding gen_aligner(gen_embed(token)) for both CFG rows;
// logits are gen_head on the last hidden state after the final norm; CFG is
// uncond + w * (cond - uncond) and the token is drawn from
// softmax(logits / temperature). The batch is the official `parallel_size`:
// every image gets the same prompt, rows laid out [cond x B; uncond x B] (the
// official loop interleaves them; each row's numbers are the same).
//
// The hooks are the raster family's (engine/models/llamagen/raster_generation.h):
// cancellation, the active cache policy asked before every step, attention
// probes, per-token callbacks. The prompt positions are the condition tokens of
// the policy context: kept, never evicted, not counted in a budget.
#include <ATen/core/Tensor.h>

#include <functional>

#include "engine/cache/policies/cache_policy.h"
#include "engine/models/janus/janus_model.h"
#include "engine/models/llamagen/raster_generation.h"
#include "engine/sampling/sampling_params.h"

namespace kvs::janus {

struct PromptParams {
  double cfg_weight = 5.0;  // > 1 enables CFG (1: the conditional rows alone, which is the same distribution)
  SamplingParams sampling;  // the official loop: temperature only (top_k 0, top_p 1)
  uint64_t seed = 0;
  // Replays recorded randomness instead of drawing: given the step and the
  // sampling distribution [B, V] (CPU float32), returns the ids [B] (int64).
  // Conformance uses it to replay torch.multinomial exactly.
  std::function<at::Tensor(int64_t step, const at::Tensor& probs)> choose;
};

// The policy context of a Janus-Pro generation: the prompt's positions are the
// condition tokens.
PolicyContext prompt_policy_context(const JanusConfig& config, int64_t prompt_tokens, int64_t batch, bool cfg,
                                    uint64_t seed);

// cond_ids / uncond_ids: the prompt ids [P] of the conditional and the
// unconditional row (equal lengths; uncond ignored without CFG); `images` rows each.
llamagen::RasterResult generate_from_prompt(const JanusModel& model, const at::Tensor& cond_ids,
                                            const at::Tensor& uncond_ids, int64_t images, const PromptParams& params,
                                            const llamagen::RasterHooks& hooks = {});

// generation_inference.py's image conversion: clip((x + 1) / 2 * 255, 0, 255),
// truncated -> uint8 [B, H, W, 3] (LlamaGen's differs: x * 127.5 + 128).
at::Tensor janus_images_to_uint8_nhwc(const at::Tensor& images);

}  // namespace kvs::janus
