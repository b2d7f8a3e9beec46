#pragma once
// LlamaGen's generate() (autoregressive/models/generate.py) on the raster floor
// (engine/generation/raster): the condition is the class token (the null class
// for CFG's unconditional rows), one line per grid row. What is LlamaGen's own
// here is the network behind the loop (the GPT, with its CUDA graphs when asked)
// and the run's geometry; the loop, the CFG and the events are the floor's.
#include <ATen/core/Tensor.h>

#include "engine/cache/policies/cache_policy.h"
#include "engine/generation/raster/raster_loop.h"
#include "engine/session/generation_request.h"
#include "engine/session/generation_result.h"
#include "engine/session/model_family.h"

namespace kvs::llamagen {

class DecodeGraphs;
class LlamaGenGpt;
struct GptConfig;
struct LlamaGenModel;

// The policy context of a LlamaGen generation: geometry and head counts.
PolicyContext raster_policy_context(const GptConfig& config, int64_t batch, bool cfg, uint64_t seed);

// labels [B] (class ids). `graphs`: CUDA graphs of the decode step
// (decode_graphs.h; LlamaGenModel keeps them), nullptr: every step runs
// eagerly. Both give the same tokens.
raster::RasterResult generate_raster(const LlamaGenGpt& gpt, const at::Tensor& labels,
                                     const raster::RasterParams& params, const raster::RasterHooks& hooks = {},
                                     DecodeGraphs* graphs = nullptr);

// A streamed run (engine/generation/raster/raster_stream.h) of the request's
// classes, decoded by the model's VQ tokenizer.
GenerationResult run_raster_generation(const LlamaGenModel& model, const GenerationRequest& request,
                                       const RunContext& context);

}  // namespace kvs::llamagen
