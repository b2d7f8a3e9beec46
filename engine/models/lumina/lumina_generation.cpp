#include "engine/models/lumina/lumina_generation.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <algorithm>
#include <limits>

#include "engine/core/errors.h"
#include "engine/core/logging.h"
#include "engine/generation/raster/raster_stream.h"
#include "engine/models/lumina/lumina_prompt.h"
#include "engine/sampling/token_sampler.h"
#include "engine/session/event_snapshots.h"
#include "engine/session/request_checks.h"

namespace kvs::lumina {
namespace {

constexpr float kMasked = -std::numeric_limits<float>::infinity();

// The seed of the header's draws: a stream of its own, so that the body's first
// draws do not repeat the header's.
uint64_t header_seed(uint64_t seed) { return seed ^ 0x9e3779b97f4a7c15ULL; }

class LuminaNetwork final : public raster::RasterNetwork {
 public:
  LuminaNetwork(const LuminaModel& model, std::vector<int64_t> cond, std::vector<int64_t> uncond_prefix, int64_t images,
                bool cfg, const raster::RasterParams& params, const LuminaSteps& steps, LuminaRecord* record)
      : model_(model),
        cond_(std::move(cond)),
        uncond_prefix_(std::move(uncond_prefix)),
        images_(images),
        cfg_(cfg),
        params_(params),
        steps_(steps),
        record_(record),
        header_sampler_(header_seed(params.seed)) {
    const int64_t p = static_cast<int64_t>(cond_.size()), pn = static_cast<int64_t>(uncond_prefix_.size());
    condition_tokens_ = (cfg_ ? std::max(p, pn) : p) + 3;
    for (int64_t r = 0; r < images_; ++r) rope_offsets_.push_back(condition_tokens_ - (p + 3));
    if (cfg_)
      for (int64_t r = 0; r < images_; ++r) rope_offsets_.push_back(condition_tokens_ - (pn + 3));
  }

  int64_t condition_tokens() const { return condition_tokens_; }

  KvStore make_cache(int64_t rows, int64_t capacity) const override { return model_.lm->make_cache(rows, capacity); }

  at::Tensor prefill(KvStore& cache) override {
    const ChameleonLanguageModel& lm = *model_.lm;
    const LuminaTokenIds& ids = model_.config.ids;
    const int64_t p = static_cast<int64_t>(cond_.size());
    // The conditional branch alone writes the header.
    KvStore cond_cache = lm.make_cache(images_, p + 3);
    at::Tensor rows = at::tensor(cond_, at::TensorOptions().dtype(at::kLong)).unsqueeze(0).expand({images_, p});
    at::Tensor logits = lm.logits(lm.forward(lm.embed(rows), 0, &cond_cache).select(1, p - 1));
    const std::vector<int64_t> expected{ids.begin_of_image, ids.grid_base + steps_.size.grid_height(),
                                        ids.grid_base + steps_.size.grid_width()};
    std::vector<at::Tensor> header;
    bool replaced = false;
    for (int64_t step = 0; step < 3; ++step) {
      record_cond(step, logits);
      at::Tensor chosen = choose_header(step, logits).to(at::kCPU, at::kLong).reshape({images_});
      if (!at::all(chosen == expected[static_cast<size_t>(step)]).item<bool>()) replaced = true;
      header.push_back(chosen);
      const at::Tensor fed = at::full({images_, 1}, expected[static_cast<size_t>(step)], chosen.options());
      logits = lm.logits(lm.forward(lm.embed(fed), p + step, &cond_cache).select(1, 0));
    }
    if (replaced)
      module_logger("lumina-mgpt")
          .warn("the model's image header did not ask for " + std::to_string(steps_.size.width) + "x" +
                std::to_string(steps_.size.height) + "; the run's own header tokens were used instead");
    if (record_) {
      record_->header = at::stack(header, 1);
      record_->header_replaced = replaced;
    }
    record_cond(3, logits);
    if (!cfg_) {
      move_into(cache, {&cond_cache}, {p + 3});
      return logits;
    }
    // The unconditional branch: [negative prompt] + the header, from position 0.
    std::vector<int64_t> uncond = uncond_prefix_;
    uncond.insert(uncond.end(), expected.begin(), expected.end());
    const int64_t pu = static_cast<int64_t>(uncond.size());
    KvStore uncond_cache = lm.make_cache(images_, pu);
    at::Tensor urows = at::tensor(uncond, at::TensorOptions().dtype(at::kLong)).unsqueeze(0).expand({images_, pu});
    at::Tensor ulogits = lm.logits(lm.forward(lm.embed(urows), 0, &uncond_cache).select(1, pu - 1));
    record_uncond(3, ulogits);
    move_into(cache, {&cond_cache, &uncond_cache}, {p + 3, pu});
    return at::cat({logits, ulogits});
  }

  at::Tensor decode_step(const at::Tensor& ids, int64_t position, KvStore& cache,
                         const StepObserver& observer) override {
    const int64_t rows = ids.size(0);
    const std::vector<int64_t> offsets(rope_offsets_.begin(), rope_offsets_.begin() + rows);
    at::Tensor hidden = model_.lm->forward(model_.lm->embed(ids.view({-1, 1})), position, &cache, observer, offsets);
    at::Tensor logits = model_.lm->logits(hidden.select(1, 0));
    const int64_t step = position - condition_tokens_ + 4;  // feeding body token i chooses i + 1: step i + 4
    record_cond(step, logits.narrow(0, 0, images_));
    if (rows > images_) record_uncond(step, logits.narrow(0, images_, images_));
    return logits;
  }

  at::Tensor constrain(int64_t token_index, const at::Tensor& logits) const override {
    return constrain_body_logits(logits, token_index, steps_.size, model_.config.ids);
  }

 private:
  at::Tensor choose_header(int64_t step, const at::Tensor& logits) {
    // <racm3:break> is chosen in text mode, the grid tokens already in image mode
    // (InterleavedTopKLogitsProcessor counts the open <racm3:break>).
    SamplingParams sampling = params_.sampling;
    sampling.top_k = step == 0 ? steps_.text_top_k : params_.sampling.top_k;
    if (steps_.choose_header) return steps_.choose_header(step, logits);
    return header_sampler_.sample(logits, sampling);
  }

  void record_cond(int64_t step, const at::Tensor& logits) {
    if (record_ && step < steps_.record_steps) record_->cond_logits.push_back(logits.to(at::kCPU).clone());
  }
  void record_uncond(int64_t step, const at::Tensor& logits) {
    if (record_ && step < steps_.record_steps) record_->uncond_logits.push_back(logits.to(at::kCPU).clone());
  }

  // Copies the branches' caches into the run's store, row block by row block,
  // each sequence's entries filed under the conditional sequence's positions
  // (the last prefix entry at condition_tokens - 1): the shorter sequences are
  // padded in front, and the padding is dropped again at once.
  void move_into(KvStore& cache, const std::vector<const KvStore*>& branches, const std::vector<int64_t>& lengths) {
    const int64_t c = condition_tokens_;
    std::vector<int64_t> positions(static_cast<size_t>(c));
    for (int64_t i = 0; i < c; ++i) positions[static_cast<size_t>(i)] = i;
    bool padded = false;
    for (int64_t length : lengths) padded = padded || length < c;
    for (int64_t layer = 0; layer < cache.n_layer(); ++layer) {
      std::vector<at::Tensor> keys, values, keeps;
      for (size_t b = 0; b < branches.size(); ++b) {
        const int64_t pad = c - lengths[b];
        at::Tensor k = branches[b]->keys(layer, lengths[b]), v = branches[b]->values(layer, lengths[b]);
        if (pad > 0) {
          auto zeros = [&](const at::Tensor& t) {
            return at::zeros({t.size(0), t.size(1), pad, t.size(3)}, t.options());
          };
          k = at::cat({zeros(k), k}, 2);
          v = at::cat({zeros(v), v}, 2);
        }
        keys.push_back(k);
        values.push_back(v);
        keeps.push_back((at::arange(c, at::TensorOptions().dtype(at::kLong)) >= pad)
                            .view({1, 1, c})
                            .expand({k.size(0), k.size(1), c}));
      }
      cache.append(layer, at::cat(keys), at::cat(values), positions);
      if (padded) cache.drop_padding(layer, at::cat(keeps).contiguous());
    }
  }

  const LuminaModel& model_;
  std::vector<int64_t> cond_, uncond_prefix_;
  int64_t images_;
  bool cfg_;
  raster::RasterParams params_;
  LuminaSteps steps_;
  LuminaRecord* record_;
  TokenSampler header_sampler_;
  int64_t condition_tokens_ = 0;
  std::vector<int64_t> rope_offsets_;
};

raster::RasterShape raster_shape(const LuminaImageSize& size, int64_t images, int64_t condition_tokens) {
  return {images, condition_tokens, size.body_tokens(), size.line_tokens()};
}

}  // namespace

at::Tensor constrain_body_logits(const at::Tensor& logits, int64_t index, const LuminaImageSize& size,
                                 const LuminaTokenIds& ids) {
  at::Tensor out = at::full_like(logits, kMasked);
  // MultiModalLogitsProcessor: a forced token scores 0, everything else -inf.
  if (index == size.body_tokens()) {
    out.select(1, ids.end_of_image).fill_(0.0);
    return out;
  }
  if ((index + 1) % size.line_tokens() == 0) {
    out.select(1, ids.end_of_line).fill_(0.0);
    return out;
  }
  const int64_t n = 8192;
  out.narrow(1, ids.first_image, n).copy_(logits.narrow(1, ids.first_image, n));
  return out;
}

PolicyContext lumina_policy_context(const LuminaConfig& config, const LuminaImageSize& size, int64_t condition_tokens,
                                    int64_t batch, bool cfg, uint64_t seed) {
  const ChameleonConfig& l = config.lm;
  PolicyContext context;
  context.n_layer = l.num_hidden_layers;
  context.n_head = l.num_attention_heads;
  context.kv_heads = l.num_key_value_heads;
  context.head_dim = l.head_dim();
  context.grid_height = size.token_height();
  context.grid_width = size.line_tokens();  // a line: W image tokens and its end-of-line token
  context.condition_tokens = condition_tokens;
  context.batch = batch;
  context.cfg = cfg;
  context.seed = seed;
  return context;
}

raster::RasterResult generate_from_prompt(const LuminaModel& model, const std::vector<int64_t>& cond_ids,
                                          const std::vector<int64_t>& uncond_prefix, int64_t images,
                                          const raster::RasterParams& params, const LuminaSteps& steps,
                                          const raster::RasterHooks& hooks, LuminaRecord* record) {
  params.sampling.validate();
  if (images <= 0) throw InvalidArgumentError("generation needs at least one image");
  if (cond_ids.empty()) throw InvalidArgumentError("the prompt has no tokens");
  if (params.cfg_interval != -1)
    throw InvalidArgumentError("Lumina-mGPT runs CFG on every image step (no CFG interval)");
  LuminaNetwork network(model, cond_ids, uncond_prefix, images, params.cfg_scale > 1.0, params, steps, record);
  return raster::generate(network, raster_shape(steps.size, images, network.condition_tokens()), params, hooks);
}

at::Tensor decode_body(const LuminaModel& model, const at::Tensor& body, const LuminaImageSize& size) {
  const int64_t b = body.size(0), h = size.token_height(), w = size.token_width();
  at::Tensor grid = body.to(at::kCPU, at::kLong).reshape({b, h, w + 1}).narrow(2, 0, w);
  const int64_t first = model.config.ids.first_image;
  const at::Tensor is_image = (grid >= first) & (grid < first + 8192);
  return model.decode_image_tokens(at::where(is_image, grid, at::full_like(grid, first)).contiguous());
}

LuminaImageSize request_image_size(const LuminaModel& model, const GenerationRequest& request) {
  if (request.image_size.empty()) return {model.config.image_size, model.config.image_size};
  return parse_lumina_image_size(request.image_size);
}

GenerationResult run_prompt_generation(const LuminaModel& model, const GenerationRequest& request,
                                       const RunContext& ctx) {
  check_conditioning(request, true, model.name);
  if (!model.tokenizer) throw ModelMismatchError("model " + model.name + " has no tokenizer");
  if (request.cfg_interval != -1)
    throw InvalidArgumentError("Lumina-mGPT runs CFG on every image step: --cfg-interval does not apply");
  const LuminaImageSize size = request_image_size(model, request);
  const LuminaPrompt prompt = build_lumina_prompt(*model.tokenizer, model.config, request.prompt,
                                                  request.negative_prompt, size);
  const int64_t batch = request.images;
  const bool use_cfg = request.cfg_scale > 1.0;

  raster::RasterParams params;
  params.cfg_scale = request.cfg_scale;
  params.sampling = request.sampling;
  params.seed = request.seed;
  params.sampling.validate();
  LuminaSteps steps;
  steps.size = size;
  LuminaNetwork network(model, prompt.cond, prompt.uncond_prefix, batch, use_cfg, params, steps, nullptr);
  const int64_t condition = network.condition_tokens();

  raster::RasterRun run;
  run.model_name = model.name;
  run.family = "lumina-mgpt";
  run.shape = raster_shape(size, batch, condition);
  run.grid_height = size.token_height();
  run.grid_width = size.line_tokens();
  // The conditional sequence's positions: a longer negative prompt moves it back.
  run.condition_labels.assign(static_cast<size_t>(condition - 3) - prompt.labels.size(), "");
  run.condition_labels.insert(run.condition_labels.end(), prompt.labels.begin(), prompt.labels.end());
  for (const char* header : {"<racm3:break>", "<grid h>", "<grid w>"}) run.condition_labels.push_back(header);
  run.query_heads_per_kv_head = model.config.lm.num_attention_heads / model.config.lm.num_key_value_heads;
  run.policy_context = lumina_policy_context(model.config, size, condition, batch, use_cfg, request.seed);
  run.params = params;
  run.decode = [&](const at::Tensor& body) {
    return to_rgb_images(lumina_images_to_uint8_nhwc(decode_body(model, body, size)));
  };
  return raster::stream_raster(network, run, request, ctx);
}

}  // namespace kvs::lumina
