#pragma once
// Janus-Pro's generate() (generation_inference.py) on the raster floor
// (engine/generation/raster): step 0 runs the language model over the whole
// prompt with a KV cache; every later step feeds one image embedding
// gen_aligner(gen_embed(token)) for both CFG rows; logits are gen_head on the
// last hidden state after the final norm; CFG is uncond + w * (cond - uncond)
// and the token is drawn from softmax(logits / temperature). The batch is the
// official `parallel_size`: every image gets the same prompt, rows laid out
// [cond x B; uncond x B] (the official loop interleaves them; each row's
// numbers are the same). The prompt positions are the condition tokens of the
// policy context: kept, never evicted, not counted in a budget. What is
// Janus-Pro's own here is the network behind the loop and the prompt rows; the
// loop, the CFG and the events are the floor's.
#include <ATen/core/Tensor.h>

#include "engine/cache/policies/cache_policy.h"
#include "engine/generation/raster/raster_loop.h"
#include "engine/models/janus/janus_model.h"
#include "engine/session/generation_request.h"
#include "engine/session/generation_result.h"
#include "engine/session/model_family.h"

namespace kvs::janus {

// The policy context of a Janus-Pro generation: the prompt's positions are the
// condition tokens.
PolicyContext prompt_policy_context(const JanusConfig& config, int64_t prompt_tokens, int64_t batch, bool cfg,
                                    uint64_t seed);

// cond_ids / uncond_ids: the prompt ids [P] of the conditional and the
// unconditional row (equal lengths; uncond ignored without CFG); `images` rows
// each. params.cfg_scale is the official cfg_weight. The recorded step logits
// are CFG-combined, before the temperature.
raster::RasterResult generate_from_prompt(const JanusModel& model, const at::Tensor& cond_ids,
                                          const at::Tensor& uncond_ids, int64_t images,
                                          const raster::RasterParams& params, const raster::RasterHooks& hooks = {});

// A streamed run (engine/generation/raster/raster_stream.h) of the request's
// prompt: templated ids, one unit per token row of the grid, the attention map
// over the prompt's words and the image so far.
GenerationResult run_prompt_generation(const JanusModel& model, const GenerationRequest& request,
                                       const RunContext& context);

// generation_inference.py's image conversion: clip((x + 1) / 2 * 255, 0, 255),
// truncated -> uint8 [B, H, W, 3] (LlamaGen's differs: x * 127.5 + 128).
at::Tensor janus_images_to_uint8_nhwc(const at::Tensor& images);

}  // namespace kvs::janus
