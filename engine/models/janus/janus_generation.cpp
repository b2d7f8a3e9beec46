#include "engine/models/janus/janus_generation.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include "engine/core/errors.h"
#include "engine/generation/raster/raster_stream.h"
#include "engine/models/janus/janus_prompt.h"
#include "engine/session/event_snapshots.h"
#include "engine/session/request_checks.h"

namespace kvs::janus {
namespace {

// The language model with Janus's image-token path as the raster loop drives
// it: the condition rows are prompt ids ([cond x B; uncond x B] with CFG).
class PromptConditionedModel final : public raster::RasterNetwork {
 public:
  PromptConditionedModel(const JanusModel& model, at::Tensor rows) : model_(model), rows_(std::move(rows)) {}

  KvStore make_cache(int64_t rows, int64_t capacity) const override {
    return model_.language->make_cache(rows, capacity);
  }
  at::Tensor prefill(KvStore& cache) override {
    const JanusLanguageModel& lm = *model_.language;
    at::Tensor hidden = lm.forward(lm.embed_text(rows_), 0, &cache);
    return model_.image_logits(hidden.select(1, rows_.size(1) - 1));
  }
  at::Tensor decode_step(const at::Tensor& ids, int64_t position, KvStore& cache,
                         const StepObserver& observer) override {
    at::Tensor hidden = model_.language->forward(model_.image_embeds(ids.view({-1, 1})), position, &cache, observer);
    return model_.image_logits(hidden.select(1, 0));
  }

 private:
  const JanusModel& model_;
  at::Tensor rows_;
};

// The checked prompt rows [images (x2 with CFG), P].
at::Tensor prompt_rows(const JanusConfig& config, const at::Tensor& cond_in, const at::Tensor& uncond_in,
                       int64_t images, bool use_cfg) {
  if (images <= 0) throw InvalidArgumentError("generation needs at least one image");
  at::Tensor cond = cond_in.to(at::kCPU, at::kLong).reshape({-1});
  const int64_t prompt_len = cond.size(0);
  const int64_t n_tokens = config.image_tokens();
  const int64_t context = config.language.max_position_embeddings;
  if (prompt_len < 1) throw InvalidArgumentError("the prompt has no tokens");
  if (prompt_len + n_tokens > context)
    throw InvalidArgumentError("the prompt is " + std::to_string(prompt_len) + " tokens: with " +
                               std::to_string(n_tokens) + " image tokens the model's context of " +
                               std::to_string(context) + " positions holds at most " +
                               std::to_string(context - n_tokens) + " prompt tokens");
  if (cond.min().item<int64_t>() < 0 || cond.max().item<int64_t>() >= config.language.vocab_size)
    throw InvalidArgumentError("prompt token id out of range [0, " + std::to_string(config.language.vocab_size) + ")");
  at::Tensor rows = cond.unsqueeze(0).expand({images, prompt_len});
  if (!use_cfg) return rows;
  at::Tensor uncond = uncond_in.to(at::kCPU, at::kLong).reshape({-1});
  if (uncond.size(0) != prompt_len)
    throw InvalidArgumentError("the unconditional prompt has " + std::to_string(uncond.size(0)) +
                               " tokens, the prompt " + std::to_string(prompt_len) +
                               ": CFG rows must keep equal positions");
  return at::cat({rows, uncond.unsqueeze(0).expand({images, prompt_len})});
}

raster::RasterShape raster_shape(const JanusConfig& config, int64_t images, int64_t prompt_tokens) {
  return {images, prompt_tokens, config.image_tokens(), config.grid_size()};
}

}  // namespace

PolicyContext prompt_policy_context(const JanusConfig& config, int64_t prompt_tokens, int64_t batch, bool cfg,
                                    uint64_t seed) {
  const LanguageConfig& l = config.language;
  PolicyContext context;
  context.n_layer = l.num_hidden_layers;
  context.n_head = l.num_attention_heads;
  context.kv_heads = l.num_key_value_heads;
  context.head_dim = l.head_dim();
  context.grid_height = config.grid_size();
  context.grid_width = config.grid_size();
  context.condition_tokens = prompt_tokens;
  context.batch = batch;
  context.cfg = cfg;
  context.seed = seed;
  return context;
}

raster::RasterResult generate_from_prompt(const JanusModel& model, const at::Tensor& cond_ids,
                                          const at::Tensor& uncond_ids, int64_t images,
                                          const raster::RasterParams& params, const raster::RasterHooks& hooks) {
  params.sampling.validate();
  at::Tensor rows = prompt_rows(model.config, cond_ids, uncond_ids, images, params.cfg_scale > 1.0);
  PromptConditionedModel network(model, rows);
  return raster::generate(network, raster_shape(model.config, images, rows.size(1)), params, hooks);
}

GenerationResult run_prompt_generation(const JanusModel& model, const GenerationRequest& request,
                                       const RunContext& ctx) {
  const JanusConfig& config = model.config;
  check_conditioning(request, true, model.name);
  if (!model.tokenizer) throw ModelMismatchError("model " + model.name + " has no tokenizer");
  const PromptRows prompt = build_prompt_rows(*model.tokenizer, config, request.prompt, request.negative_prompt);
  const int64_t prompt_len = static_cast<int64_t>(prompt.cond.size());
  const int64_t grid = config.grid_size(), batch = request.images;
  const bool use_cfg = request.cfg_scale > 1.0;

  raster::RasterRun run;
  run.model_name = model.name;
  run.family = "janus-pro";
  run.shape = raster_shape(config, batch, prompt_len);
  run.grid_height = run.grid_width = grid;
  run.condition_labels = prompt.labels;
  run.query_heads_per_kv_head = config.language.num_attention_heads / config.language.num_key_value_heads;
  run.policy_context = prompt_policy_context(config, prompt_len, batch, use_cfg, request.seed);
  run.params.cfg_scale = request.cfg_scale;
  run.params.sampling = request.sampling;
  run.params.seed = request.seed;
  run.params.sampling.validate();
  run.decode = [&](const at::Tensor& codes) {
    return to_rgb_images(janus_images_to_uint8_nhwc(model.vq->decode_codes(codes, grid, grid)));
  };
  if (model.encoder)
    run.encode = [&](const RgbImage& picture) { return model.encoder->encode_picture(picture, model.image_size()); };
  PromptConditionedModel network(model, prompt_rows(config, at::tensor(prompt.cond), at::tensor(prompt.uncond), batch,
                                                    use_cfg));
  return raster::stream_raster(network, run, request, ctx);
}

at::Tensor janus_images_to_uint8_nhwc(const at::Tensor& images) {
  at::Tensor x = at::clamp((images.to(at::kCPU, at::kFloat) + 1) / 2 * 255, 0, 255);
  return x.to(at::kByte).permute({0, 2, 3, 1}).contiguous();
}

}  // namespace kvs::janus
