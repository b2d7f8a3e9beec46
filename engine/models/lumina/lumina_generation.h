#pragma once
// Lumina-mGPT's generation (inference_solver.py FlexARInferenceSolver.generate:
// transformers 4.43.3 `generate` with the solver's three logits processors) on
// the raster floor (engine/generation/raster).
//
// The prompt runs into the cache; the model then writes the image header itself,
// sampled as the official loop samples it: <racm3:break> under the text top-k,
// the height and width grid tokens under the image top-k (no CFG yet). The body
// follows on the floor, one line per image row: W image tokens and the
// end-of-line token <reserved08799>, H rows. Per step, in the official order:
// CFG (uncond + scale * (cond - uncond)) -> the image-token constraint (the
// end-of-line token forced at every row end, image ids only elsewhere) -> top-k
// -> temperature -> multinomial. The official loop then forces <eoss> and
// samples the closing separator in text mode; neither changes the image, and
// the port stops after the body.
//
// CFG: the unconditional branch is a second sequence, [<racm3:break>, h, w]
// alone at positions 0, 1, 2 (no BOS, no text), fed every body token the
// conditional branch is fed, end-of-line tokens included. Here both branches
// are rows of one cache ([cond x B; uncond x B]) stepped together: each row
// takes its own RoPE positions, while the cache files both under the
// conditional sequence's positions, so that a policy's decision names the same
// image tokens in both rows (cache_policy.h apply_keep). A negative prompt
// (not in the official code) is templated like the prompt and put before the
// unconditional header. The condition tokens of the policy context are the
// prompt and the header: kept, never evicted, not counted in a budget; the
// unconditional branch is compressed by the same decisions (the papers are
// silent on it).
//
// The header is the model's choice. If it asks for another size than the run's
// (or does not start an image at all), the run's own header tokens are used
// instead, with a warning: a deviation from the official loop, which would
// write whatever the model chose.
#include <ATen/core/Tensor.h>

#include <functional>
#include <vector>

#include "engine/cache/policies/cache_policy.h"
#include "engine/generation/raster/raster_loop.h"
#include "engine/models/lumina/lumina_model.h"
#include "engine/session/generation_request.h"
#include "engine/session/generation_result.h"
#include "engine/session/model_family.h"

namespace kvs::lumina {

struct LuminaSteps {
  LuminaImageSize size;
  int64_t text_top_k = 10;  // create_logits_processor(text_top_k=10): the <racm3:break> step
  // Replays recorded randomness for the three header steps (conformance): given
  // the header step (0..2) and its processed logits [B, V], returns the ids [B].
  std::function<at::Tensor(int64_t header_step, const at::Tensor& logits)> choose_header;
  // Keep the raw conditional and unconditional logits of the first steps
  // (header steps included: step 3 is body token 0), for conformance.
  int64_t record_steps = 0;
};

struct LuminaRecord {
  std::vector<at::Tensor> cond_logits;    // per step [B, V]
  std::vector<at::Tensor> uncond_logits;  // per CFG step from step 3 [B, V]
  at::Tensor header;                      // [B, 3] the header tokens as sampled
  bool header_replaced = false;           // the run's own header was used instead
};

// The processors of a step that chooses body token `index`: everything but the
// end-of-line token masked at a row end, everything but the image tokens
// elsewhere; index = the body's length is the <eoss> step (forced too).
at::Tensor constrain_body_logits(const at::Tensor& logits, int64_t index, const LuminaImageSize& size,
                                 const LuminaTokenIds& ids);

// The policy context of a Lumina-mGPT run: a line is one image row with its
// end-of-line token (W + 1 tokens); `condition_tokens` = the longer prompt + 3.
PolicyContext lumina_policy_context(const LuminaConfig& config, const LuminaImageSize& size, int64_t condition_tokens,
                                    int64_t batch, bool cfg, uint64_t seed);

// cond_ids: the prompt ids [P] (BOS ... <reserved08706>); uncond_prefix: the
// ids before the unconditional header (empty: the official branch). The body
// tokens come back in RasterResult::tokens [B, H * (W + 1)].
raster::RasterResult generate_from_prompt(const LuminaModel& model, const std::vector<int64_t>& cond_ids,
                                          const std::vector<int64_t>& uncond_prefix, int64_t images,
                                          const raster::RasterParams& params, const LuminaSteps& steps,
                                          const raster::RasterHooks& hooks = {}, LuminaRecord* record = nullptr);

// Body tokens [B, H * (W + 1)] -> images (the end-of-line column dropped; ids
// that are not image tokens, as in a preview's rows not generated yet, decode
// as the first image token).
at::Tensor decode_body(const LuminaModel& model, const at::Tensor& body, const LuminaImageSize& size);

// The image size of a request: its image_size, or the model's own.
LuminaImageSize request_image_size(const LuminaModel& model, const GenerationRequest& request);

// A streamed run (engine/generation/raster/raster_stream.h) of the request's
// prompt: one unit per image row (end-of-line token included).
GenerationResult run_prompt_generation(const LuminaModel& model, const GenerationRequest& request,
                                       const RunContext& context);

}  // namespace kvs::lumina
