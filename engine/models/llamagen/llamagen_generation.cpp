#include "engine/models/llamagen/llamagen_generation.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include "engine/core/cuda_graphs.h"
#include "engine/core/errors.h"
#include "engine/generation/raster/raster_stream.h"
#include "engine/models/llamagen/decode_graphs.h"
#include "engine/models/llamagen/llamagen_model.h"
#include "engine/session/event_snapshots.h"
#include "engine/session/request_checks.h"

namespace kvs::llamagen {
namespace {

// The class-conditioned GPT as the raster loop drives it: the condition rows
// are class ids, [labels; null class x B] with CFG.
class ClassConditionedGpt final : public raster::RasterNetwork {
 public:
  ClassConditionedGpt(const LlamaGenGpt& gpt, at::Tensor condition, DecodeGraphs* graphs)
      : gpt_(gpt), condition_(std::move(condition)), graphs_(graphs) {}

  KvStore make_cache(int64_t rows, int64_t capacity) const override { return gpt_.make_cache(rows, capacity); }
  at::Tensor prefill(KvStore& cache) override { return gpt_.prefill(condition_, cache); }
  at::Tensor decode_step(const at::Tensor& ids, int64_t position, KvStore& cache,
                         const StepObserver& observer) override {
    if (graphs_ != nullptr) {
      at::Tensor logits = graphs_->step(ids, position, cache, observer);
      if (logits.defined()) {
        ++graph_steps_;
        return logits;
      }
    }
    return gpt_.decode_step(ids, position, cache, observer);
  }
  int64_t graph_steps() const override { return graph_steps_; }

 private:
  const LlamaGenGpt& gpt_;
  at::Tensor condition_;
  DecodeGraphs* graphs_;
  int64_t graph_steps_ = 0;
};

// The checked class ids [B] and the condition rows (with the null class for CFG).
at::Tensor condition_rows(const GptConfig& config, const at::Tensor& labels_in, bool use_cfg) {
  at::Tensor labels = labels_in.to(at::kCPU, at::kLong).reshape({-1});
  if (labels.size(0) <= 0) throw InvalidArgumentError("generation needs at least one class label");
  if (labels.min().item<int64_t>() < 0 || labels.max().item<int64_t>() >= config.num_classes)
    throw InvalidArgumentError("class label out of range [0, " + std::to_string(config.num_classes) + ")");
  if (use_cfg && !config.has_null_class())
    throw InvalidArgumentError("this model has no null class (class_dropout_prob = 0), so CFG > 1 is impossible");
  return use_cfg ? at::cat({labels, at::full({labels.size(0)}, config.null_class(), labels.options())}) : labels;
}

raster::RasterShape raster_shape(const GptConfig& config, int64_t batch) {
  return {batch, config.cls_token_num, config.block_size, config.grid_size()};
}

}  // namespace

PolicyContext raster_policy_context(const GptConfig& config, int64_t batch, bool cfg, uint64_t seed) {
  PolicyContext context;
  context.n_layer = config.n_layer;
  context.n_head = config.n_head;
  context.kv_heads = config.kv_heads();
  context.head_dim = config.head_dim();
  context.grid_height = config.grid_size();
  context.grid_width = config.grid_size();
  context.condition_tokens = config.cls_token_num;
  context.batch = batch;
  context.cfg = cfg;
  context.seed = seed;
  return context;
}

raster::RasterResult generate_raster(const LlamaGenGpt& gpt, const at::Tensor& labels,
                                     const raster::RasterParams& params, const raster::RasterHooks& hooks,
                                     DecodeGraphs* graphs) {
  params.sampling.validate();
  const at::Tensor condition = condition_rows(gpt.config(), labels, params.cfg_scale > 1.0);
  ClassConditionedGpt network(gpt, condition, graphs);
  const int64_t batch = params.cfg_scale > 1.0 ? condition.size(0) / 2 : condition.size(0);
  return raster::generate(network, raster_shape(gpt.config(), batch), params, hooks);
}

GenerationResult run_raster_generation(const LlamaGenModel& model, const GenerationRequest& request,
                                       const RunContext& ctx) {
  const GptConfig& config = model.gpt->config();
  check_class_ids(request, config.num_classes, model.name);
  const int64_t batch = static_cast<int64_t>(request.class_ids.size());
  const int64_t grid = config.grid_size();

  raster::RasterRun run;
  run.model_name = model.name;
  run.family = "llamagen";
  run.shape = raster_shape(config, batch);
  run.grid_height = run.grid_width = grid;
  run.query_heads_per_kv_head = config.n_head / config.kv_heads();
  run.policy_context = raster_policy_context(config, batch, request.cfg_scale > 1.0, request.seed);
  run.params.cfg_scale = request.cfg_scale;
  run.params.cfg_interval = request.cfg_interval;
  run.params.sampling = request.sampling;
  run.params.seed = request.seed;
  run.params.sampling.validate();
  run.decode = [&](const at::Tensor& codes) {
    return to_rgb_images(images_to_uint8_nhwc(model.vq->decode_codes(codes, grid, grid)));
  };
  if (model.encoder)
    run.encode = [&](const RgbImage& picture) { return model.encoder->encode_picture(picture, model.image_size()); };

  const bool graphs_requested = parse_cuda_graphs(request.cuda_graphs) && !cuda_graphs_disabled_by_environment();
  ClassConditionedGpt network(*model.gpt,
                              condition_rows(config, at::tensor(request.class_ids), request.cfg_scale > 1.0),
                              graphs_requested ? model.decode_graphs.get() : nullptr);
  raster::RasterResult raster;
  GenerationResult result = raster::stream_raster(network, run, request, ctx, &raster);
  result.cuda_graphs = decode_graphs_report(graphs_requested, model.gpt->device().is_cuda(), raster.graph_steps,
                                            raster.decode_steps, model.decode_graphs && model.decode_graphs->failed());
  return result;
}

}  // namespace kvs::llamagen
