#include "engine/models/infinity/infinity_generation.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <cmath>

#include "engine/core/errors.h"
#include "engine/models/infinity/bsq_codes.h"

namespace kvs::infinity {
namespace {

class AccumulatorSink final : public CodeSink {
 public:
  AccumulatorSink(int64_t batch, const InfinityConfig& config, const std::vector<Grid>& grids, at::Device device)
      : accumulator_(batch, config.codebook_dim, config.spatial_patchify, grids, device) {}
  at::Tensor add_scale(int64_t si, const at::Tensor& bits) override {
    return accumulator_.add_scale(si, bits.reshape({bits.size(0), -1, bits.size(-1)}));
  }
  const at::Tensor& summed_codes() const override { return accumulator_.summed_codes(); }

 private:
  BsqCodeAccumulator accumulator_;
};

double pick(const std::vector<double>& values, int64_t si) {
  return values.size() == 1 ? values.front() : values.at(static_cast<size_t>(si));
}

// Infinity's transformer, its bits and codes as the next-scale loop drives them.
class TextConditionedInfinity final : public scale::ScaleNetwork {
 public:
  TextConditionedInfinity(const InfinityTransformer& transformer, InfinityText text, const InfinitySchedule& schedule,
                          const InfinityParams& params, int64_t batch, bool cfg_rows, InfinityNetworkOptions options)
      : transformer_(transformer),
        text_(std::move(text)),
        schedule_(schedule),
        offsets_(schedule.offsets()),
        rope_(transformer.rope_table(schedule.scale_template, schedule.grids)),
        params_(params),
        batch_(batch),
        cfg_rows_(cfg_rows),
        options_(std::move(options)),
        codes_(make_code_sink(batch, transformer.config(), schedule.grids, transformer.device())),
        sampler_(params.seed),
        x_(transformer.first_scale_input(text_)) {
    if (options_.text_out) *options_.text_out = &text_;
  }

  KvStore make_cache(int64_t rows, int64_t capacity) const override { return transformer_.make_cache(rows, capacity); }

  at::Tensor forward_scale(int64_t si, KvStore& cache, const ScaleObserver& observer) override {
    std::vector<at::Tensor> blocks;
    const bool record = options_.block_outputs != nullptr && si < options_.block_output_scales;
    at::Tensor logits = transformer_.forward_scale(x_, text_, rope_, offsets_, si, cache, observer,
                                                   record ? &blocks : nullptr);
    if (record) {
      options_.block_outputs->resize(static_cast<size_t>(si) + 1);
      (*options_.block_outputs)[static_cast<size_t>(si)] = std::move(blocks);
    }
    return logits;
  }

  at::Tensor guide(int64_t si, const at::Tensor& logits) override {
    // get_logits(...).mul(1 / tau), then cfg * cond + (1 - cfg) * uncond; the
    // conditional rows alone where this scale's cfg is 1.
    const double cfg = params_.cfg_at(si);
    at::Tensor scaled = logits * (1.0 / params_.tau_at(si));
    at::Tensor guided = cfg_rows_ && cfg != 1.0
                            ? scaled.narrow(0, 0, batch_) * cfg + scaled.narrow(0, batch_, batch_) * (1.0 - cfg)
                            : scaled.narrow(0, 0, batch_);
    return guided.reshape({batch_, -1, 2});
  }

  at::Tensor take(int64_t si, const at::Tensor& guided) override {
    const int64_t bits_per_token = transformer_.config().token_bits();
    const Grid g = schedule_.grids.at(static_cast<size_t>(si));
    const at::Tensor draws = options_.draws_override ? options_.draws_override(si) : at::Tensor();
    at::Tensor bits = sampler_.sample(guided, params_.sampling, draws).view({batch_, g[0] * g[1], bits_per_token});
    if (options_.bits_override) {
      at::Tensor replaced = options_.bits_override(si, guided, bits);
      if (replaced.defined()) bits = replaced.to(at::kCPU, at::kLong).reshape(bits.sizes());
    }
    at::Tensor next = codes_->add_scale(si, bits.to(transformer_.device()));
    if (next.defined()) {
      if (options_.next_inputs) options_.next_inputs->push_back(next.to(at::kCPU));
      x_ = transformer_.scale_input(next);
      if (cfg_rows_) x_ = x_.repeat({2, 1, 1});
    }
    return pack_bits(bits);
  }

  const at::Tensor& f_hat() const override { return codes_->summed_codes(); }

 private:
  const InfinityTransformer& transformer_;
  const InfinityText text_;
  const InfinitySchedule schedule_;
  const std::vector<int64_t> offsets_;
  const RopeTable rope_;
  const InfinityParams params_;
  const int64_t batch_;
  const bool cfg_rows_;
  const InfinityNetworkOptions options_;
  std::unique_ptr<CodeSink> codes_;
  BitwiseSampler sampler_;
  at::Tensor x_;
};

}  // namespace

double InfinityParams::cfg_at(int64_t si) const { return pick(cfg, si); }
double InfinityParams::tau_at(int64_t si) const { return pick(tau, si); }

bool InfinityParams::uses_cfg(int64_t scales) const {
  for (int64_t si = 0; si < scales; ++si)
    if (cfg_at(si) != 1.0) return true;
  return false;
}

void InfinityParams::validate(int64_t scales) const {
  for (const auto* list : {&cfg, &tau}) {
    const char* name = list == &cfg ? "cfg" : "tau";
    if (list->size() != 1 && static_cast<int64_t>(list->size()) < scales)
      throw InvalidArgumentError(std::string("Infinity ") + name + ": one value or one per scale (" +
                                 std::to_string(scales) + "), got " + std::to_string(list->size()));
    for (const double v : *list)
      if (!std::isfinite(v)) throw InvalidArgumentError(std::string("Infinity ") + name + " must be finite");
  }
  for (int64_t si = 0; si < scales; ++si)
    if (!(tau_at(si) > 0.0)) throw InvalidArgumentError("Infinity tau must be > 0 (it divides the logits)");
  if (sampling.top_k < 0) throw InvalidArgumentError("top-k must be >= 0 (0 = off)");
  if (!(sampling.top_p >= 0.0 && sampling.top_p <= 1.0))
    throw InvalidArgumentError("top-p must be in [0, 1] (0 = off)");
}

std::unique_ptr<CodeSink> make_code_sink(int64_t batch, const InfinityConfig& config, const std::vector<Grid>& grids,
                                         at::Device device) {
  return std::make_unique<AccumulatorSink>(batch, config, grids, device);
}

std::unique_ptr<scale::ScaleNetwork> text_conditioned_infinity(const InfinityTransformer& transformer,
                                                               const TextRows& prompts, const TextRows& negatives,
                                                               const InfinitySchedule& schedule,
                                                               const InfinityParams& params,
                                                               InfinityNetworkOptions options) {
  const InfinityConfig& config = transformer.config();
  const int64_t scales = static_cast<int64_t>(schedule.grids.size());
  if (scales == 0) throw InvalidArgumentError("Infinity: the schedule has no scales");
  if (scales > config.level_embeddings)
    throw InvalidArgumentError("Infinity: " + std::to_string(scales) + " scales, but the model embeds at most " +
                               std::to_string(config.level_embeddings));
  params.validate(scales);
  const int64_t batch = prompts.texts();
  if (batch <= 0) throw InvalidArgumentError("generation needs at least one prompt");
  if (negatives.texts() != 0 && negatives.texts() != batch)
    throw InvalidArgumentError("Infinity: " + std::to_string(negatives.texts()) + " negative prompts for " +
                               std::to_string(batch) + " prompts");
  const bool cfg_rows = params.uses_cfg(scales);
  at::Tensor rows = prompts.rows;
  std::vector<int64_t> lengths = prompts.lengths;
  if (cfg_rows) {
    if (negatives.texts() == 0) {
      // The learned unconditional text, as long as each prompt.
      std::vector<at::Tensor> parts{prompts.rows.to(transformer.device(), at::kFloat)};
      for (const int64_t n : prompts.lengths) parts.push_back(transformer.unconditional_text(n));
      rows = at::cat(parts, 0);
      lengths.insert(lengths.end(), prompts.lengths.begin(), prompts.lengths.end());
    } else {
      rows = at::cat({prompts.rows.to(transformer.device(), at::kFloat),
                      negatives.rows.to(transformer.device(), at::kFloat)},
                     0);
      lengths.insert(lengths.end(), negatives.lengths.begin(), negatives.lengths.end());
    }
  }
  InfinityText text = transformer.encode_text(rows, lengths);
  return std::make_unique<TextConditionedInfinity>(transformer, std::move(text), schedule, params, batch, cfg_rows,
                                                   std::move(options));
}

scale::ScaleShape scale_shape(const InfinitySchedule& schedule, int64_t batch, bool cfg) {
  scale::ScaleShape shape;
  shape.rows = cfg ? 2 * batch : batch;
  for (const Grid& g : schedule.grids) shape.scale_tokens.push_back(g[0] * g[1]);
  return shape;
}

PolicyContext scale_policy_context(const InfinityConfig& config, const InfinitySchedule& schedule, int64_t batch,
                                   bool cfg, uint64_t seed) {
  PolicyContext context;
  context.n_layer = config.depth;
  context.n_head = config.num_heads;
  context.kv_heads = config.num_heads;
  context.head_dim = config.head_dim();
  context.grid_height = schedule.grids.back()[0];
  context.grid_width = schedule.grids.back()[1];
  context.condition_tokens = 0;
  context.batch = batch;
  context.cfg = cfg;
  context.seed = seed;
  for (const Grid& g : schedule.grids) context.unit_tokens.push_back(g[0] * g[1]);
  return context;
}

at::Tensor pack_bits(const at::Tensor& bits) {
  // The official mask 2**arange(d-1, -1, -1): bit 0 is the most significant.
  const int64_t n = bits.size(-1);
  if (n > 62) throw InvalidArgumentError("more than 62 bits per token cannot be packed into one id");
  const at::Tensor weights = at::pow(2, at::arange(n - 1, -1, -1, at::TensorOptions().dtype(at::kLong)));
  return (bits.to(at::kCPU, at::kLong) * weights).sum(-1);
}

}  // namespace kvs::infinity
