#include "engine/models/var/var_generation.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include "engine/core/errors.h"
#include "engine/sampling/scale_sampler.h"

namespace kvs::var {
namespace {

// VAR's transformer and VQ-VAE as the next-scale loop drives them.
class ClassConditionedVar final : public scale::ScaleNetwork {
 public:
  ClassConditionedVar(const VarTransformer& transformer, const MultiScaleVqvae& vqvae, const at::Tensor& cond_labels,
                      int64_t batch, const ScaleParams& params)
      : transformer_(transformer),
        vqvae_(vqvae),
        params_(params),
        batch_(batch),
        use_cfg_(params.cfg != 0.0),
        condition_(transformer.condition(cond_labels)),
        x_(transformer.first_scale_input(condition_)),
        f_hat_(vqvae.empty_fhat(batch)),
        sampler_(params.seed) {}

  KvStore make_cache(int64_t rows, int64_t capacity) const override { return transformer_.make_cache(rows, capacity); }
  at::Tensor forward_scale(int64_t si, KvStore& cache, const ScaleObserver& observer) override {
    return transformer_.forward_scale(x_, condition_, si, cache, observer);
  }
  at::Tensor guide(int64_t si, const at::Tensor& logits) override {
    if (!use_cfg_) return logits;
    // ratio = si / num_stages_minus_1; t = cfg * ratio; (1 + t) * cond - t * uncond
    const int64_t scales = transformer_.config().scales();
    const double ratio = scales > 1 ? static_cast<double>(si) / static_cast<double>(scales - 1) : 0.0;
    const double t = params_.cfg * ratio;
    return logits.narrow(0, 0, batch_) * (1.0 + t) - logits.narrow(0, batch_, batch_) * t;
  }
  at::Tensor take(int64_t si, const at::Tensor& guided) override {
    at::Tensor ids = sampler_.sample(guided, params_.sampling);
    vqvae_.accumulate(f_hat_, vqvae_.embed_scale(ids, si), si);
    if (si + 1 < transformer_.config().scales()) {
      x_ = transformer_.scale_input(vqvae_.next_scale_input(f_hat_, si), si + 1);
      if (use_cfg_) x_ = x_.repeat({2, 1, 1});
    }
    return ids;
  }
  const at::Tensor& f_hat() const override { return f_hat_; }

 private:
  const VarTransformer& transformer_;
  const MultiScaleVqvae& vqvae_;
  const ScaleParams params_;
  const int64_t batch_;
  const bool use_cfg_;
  const VarCondition condition_;
  at::Tensor x_;
  at::Tensor f_hat_;
  ScaleSampler sampler_;
};

}  // namespace

PolicyContext scale_policy_context(const VarConfig& config, int64_t batch, bool cfg, uint64_t seed) {
  PolicyContext context;
  context.n_layer = config.depth;
  context.n_head = config.num_heads;
  context.kv_heads = config.num_heads;
  context.head_dim = config.head_dim();
  context.grid_height = config.final_grid();
  context.grid_width = config.final_grid();
  context.condition_tokens = 0;
  context.batch = batch;
  context.cfg = cfg;
  context.seed = seed;
  for (int64_t si = 0; si < config.scales(); ++si) context.unit_tokens.push_back(config.scale_tokens(si));
  return context;
}

scale::ScaleShape scale_shape(const VarConfig& config, int64_t batch, bool cfg) {
  scale::ScaleShape shape;
  shape.rows = cfg ? 2 * batch : batch;
  for (int64_t si = 0; si < config.scales(); ++si) shape.scale_tokens.push_back(config.scale_tokens(si));
  return shape;
}

std::unique_ptr<scale::ScaleNetwork> class_conditioned_var(const VarTransformer& transformer,
                                                           const MultiScaleVqvae& vqvae, const at::Tensor& labels_in,
                                                           const ScaleParams& params) {
  const VarConfig& config = transformer.config();
  check_compatible(config, vqvae.config());
  params.sampling.validate();
  if (!(params.cfg >= 0)) throw InvalidArgumentError("VAR cfg must be >= 0 (0 = no guidance)");
  at::Tensor labels = labels_in.to(at::kCPU, at::kLong).reshape({-1});
  const int64_t batch = labels.size(0);
  if (batch <= 0) throw InvalidArgumentError("generation needs at least one class label");
  if (labels.min().item<int64_t>() < 0 || labels.max().item<int64_t>() >= config.num_classes)
    throw InvalidArgumentError("class label out of range [0, " + std::to_string(config.num_classes) + ")");
  const at::Tensor cond_labels = params.cfg != 0.0
                                     ? at::cat({labels, at::full({batch}, config.null_class(), labels.options())})
                                     : labels;
  return std::make_unique<ClassConditionedVar>(transformer, vqvae, cond_labels, batch, params);
}

ScaleResult generate_scales(const VarTransformer& transformer, const MultiScaleVqvae& vqvae, const at::Tensor& labels,
                            const ScaleParams& params, const ScaleHooks& hooks) {
  const auto network = class_conditioned_var(transformer, vqvae, labels, params);
  return scale::generate(*network, scale_shape(transformer.config(), labels.numel(), params.cfg != 0.0), hooks);
}

}  // namespace kvs::var
