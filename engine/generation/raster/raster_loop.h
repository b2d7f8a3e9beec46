#pragma once
// The decode loop of every raster family (LlamaGen's generate(), Janus-Pro's
// generation_inference.py): the condition runs into the cache (the prefill),
// then one image token per step in raster order. CFG is one doubled batch
// [cond x B; uncond x B] whose logits combine as uncond + (cond - uncond) *
// scale; `cfg_interval` as LlamaGen has it (CFG off for decode steps i >
// cfg_interval: the unconditional rows are dropped, which leaves the
// conditional rows' numbers unchanged and halves the remaining work); the
// network's own logits processors (RasterNetwork::constrain) follow. Before
// every step the loop checks cancellation and asks for the active cache
// policy; after it the policy may evict. A family hands in its network
// (RasterNetwork); the loop owns the rest.
#include <ATen/core/Tensor.h>

#include <functional>
#include <vector>

#include "engine/cache/kv_store.h"
#include "engine/cache/policies/cache_policy.h"
#include "engine/generation/step_observer.h"
#include "engine/sampling/sampling_params.h"

namespace kvs::raster {

// A family's network as the loop drives it, one object per run: it holds the
// run's condition rows (class labels, prompt ids; doubled for CFG) and whatever
// else the family keeps per run.
class RasterNetwork {
 public:
  virtual ~RasterNetwork() = default;
  // A cache for `rows` sequences with room for `capacity` positions.
  virtual KvStore make_cache(int64_t rows, int64_t capacity) const = 0;
  // Runs the condition rows into the empty `cache`; returns the logits
  // [rows, vocab] (float32) of image token 0.
  virtual at::Tensor prefill(KvStore& cache) = 0;
  // Feeds image tokens `ids` [rows] (int64) at sequence `position`; returns the
  // logits [rows, vocab] (float32) of the next token.
  virtual at::Tensor decode_step(const at::Tensor& ids, int64_t position, KvStore& cache,
                                 const StepObserver& observer) = 0;
  // The family's own logits processors, after CFG and before sampling, for the
  // logits that choose image token `token_index` [rows, vocab] (Lumina-mGPT's
  // image-token constraint: an end-of-line token at every row end, image tokens
  // elsewhere). The default changes nothing.
  virtual at::Tensor constrain(int64_t token_index, const at::Tensor& logits) const {
    (void)token_index;
    return logits;
  }
  // Decode steps so far that replayed captured CUDA graphs (0 for a network without them).
  virtual int64_t graph_steps() const { return 0; }
};

// A run's geometry, from the family's config.
struct RasterShape {
  int64_t images = 1;            // B: images generated together (the rows per CFG half)
  int64_t condition_tokens = 0;  // sequence positions before image token 0
  int64_t image_tokens = 0;      // tokens per image
  int64_t line_tokens = 0;       // tokens per line: the unit a policy decides at
};

struct RasterParams {
  double cfg_scale = 1.0;     // > 1 enables CFG (the network's rows must then be doubled)
  int64_t cfg_interval = -1;  // -1 = CFG on every step
  SamplingParams sampling;
  uint64_t seed = 0;
  // Replays recorded randomness instead of drawing: given the step and its
  // (CFG-combined) logits [B, V], returns the ids [B] (int64). Conformance uses
  // it to replay the official program's draws exactly.
  std::function<at::Tensor(int64_t step, const at::Tensor& logits)> choose;
  // Tokens given instead of drawn, for finishing a picture from its top rows:
  // [B, n] int64 (CPU), 0 < n < image tokens. Steps 0..n-1 feed them (the
  // network and the policy see them as any token); drawing starts at token n.
  at::Tensor given_tokens;
};

struct RasterHooks {
  std::function<bool()> cancelled;  // checked before every token; true -> CancelledError
  // After each token: tokens_done (1..N), tokens so far [B, tokens_done] (CPU
  // int64). When sampling runs on a GPU the host copy is refreshed at the end of
  // every line and at the last token; in between the current line's entries may
  // still read 0.
  std::function<void(int64_t tokens_done, const at::Tensor& tokens, const KvStore& cache)> on_token;
  int64_t record_logits_steps = 0;  // keep the (CFG-combined) logits of the first steps
  // The active cache policy (nullptr or unset = full cache), asked before every
  // step, so its owner may swap it at a line boundary (from on_token): the new
  // policy adopts the cache as it stands.
  std::function<CachePolicy*()> policy;
  // Attention probe for the window: when wants_attention(i) is true for the step
  // that feeds token i, every layer's attention (with per-key mass) is passed on.
  std::function<bool(int64_t token_index)> wants_attention;
  std::function<void(int64_t layer, int64_t token_index, const KvAttention& attention, const KvStore& cache)>
      on_attention;
  // Store capacity in image entries per segment (0 = all image tokens).
  int64_t cache_capacity_tokens = 0;
};

struct RasterResult {
  at::Tensor tokens;                    // [B, image_tokens] int64, CPU
  std::vector<at::Tensor> step_logits;  // first record_logits_steps, each [B, vocab]
  KvMemoryStats memory;
  int64_t decode_steps = 0;  // steps after the prefill (image_tokens - 1)
  int64_t graph_steps = 0;   // of them, those that replayed CUDA graphs
};

// The observer of the decode step that feeds token i: the active policy's
// query and attention hooks and the hooks' attention probe, each only when
// asked for (key mass costs a little). `hooks` must outlive the step.
StepObserver step_observer(CachePolicy* policy, const RasterHooks& hooks, int64_t token_index);

RasterResult generate(RasterNetwork& network, const RasterShape& shape, const RasterParams& params,
                      const RasterHooks& hooks = {});

}  // namespace kvs::raster
