#pragma once
// LlamaGen's generate() (autoregressive/models/generate.py), token by token:
// prefill on the class token, then one token per step in raster order, CFG as one
// doubled batch [cond; null class] with logits uncond + (cond - uncond) * scale,
// `cfg_interval` as upstream (CFG off for decode steps i > cfg_interval; we then
// drop the unconditional rows, which leaves the conditional rows' numbers
// unchanged and halves the remaining work).
#include <ATen/core/Tensor.h>

#include <functional>
#include <vector>

#include "engine/cache/kv_store.h"
#include "engine/cache/policies/cache_policy.h"
#include "engine/models/llamagen/llamagen_gpt.h"
#include "engine/sampling/sampling_params.h"

namespace kvs::llamagen {

class DecodeGraphs;

struct RasterParams {
  double cfg_scale = 1.0;     // > 1 enables CFG (as upstream)
  int64_t cfg_interval = -1;  // -1 = CFG on every step
  SamplingParams sampling;
  uint64_t seed = 0;
  // CUDA graphs of the model's decode step (decode_graphs.h; LlamaGenModel keeps
  // them); nullptr: every step runs eagerly. Both give the same tokens.
  DecodeGraphs* decode_graphs = nullptr;
};

struct RasterHooks {
  std::function<bool()> cancelled;  // checked before every token; true -> CancelledError
  // After each token: tokens_done (1..N), tokens so far [B, tokens_done] (CPU
  // int64). When sampling runs on a GPU the host copy is refreshed at the end of
  // every image line (tokens_done a multiple of the grid width) and at the last
  // token; in between the current line's entries may still read 0.
  std::function<void(int64_t tokens_done, const at::Tensor& tokens, const KvStore& cache)> on_token;
  int64_t record_logits_steps = 0;  // keep the (CFG-combined) logits of the first steps
  // The active cache policy (nullptr or unset = full cache), asked before every
  // step, so its owner may swap it at a line boundary (from on_token): the new
  // policy adopts the cache as it stands.
  std::function<CachePolicy*()> policy;
  // Attention probe for the UI: when wants_attention(i) is true for the step that
  // feeds token i, every layer's attention (with per-key mass) is passed on.
  std::function<bool(int64_t token_index)> wants_attention;
  std::function<void(int64_t layer, int64_t token_index, const KvAttention& attention, const KvStore& cache)>
      on_attention;
  // Store capacity in image entries per segment (0 = all image tokens).
  int64_t cache_capacity_tokens = 0;
};

struct RasterResult {
  at::Tensor tokens;                    // [B, block_size] int64, CPU
  std::vector<at::Tensor> step_logits;  // first record_logits_steps, each [B, vocab]
  KvMemoryStats memory;
  int64_t decode_steps = 0;  // steps after the prefill (block_size - 1)
  int64_t graph_steps = 0;   // of them, those that replayed CUDA graphs
};

// The policy context of a LlamaGen generation: geometry and head counts.
PolicyContext raster_policy_context(const GptConfig& config, int64_t batch, bool cfg, uint64_t seed);

// The observer of the decode step that feeds token i: the active policy's
// query and attention hooks and the hooks' attention probe, each only when
// asked for (key mass costs a little). `hooks` must outlive the step.
StepObserver step_observer(CachePolicy* policy, const RasterHooks& hooks, int64_t token_index);

RasterResult generate_raster(const LlamaGenGpt& gpt, const at::Tensor& labels, const RasterParams& params,
                             const RasterHooks& hooks = {});

}  // namespace kvs::llamagen
