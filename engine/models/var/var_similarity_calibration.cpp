#include "engine/models/var/var_similarity_calibration.h"

#include <ATen/Functions.h>

#include "engine/cache/policies/amskv_policy.h"
#include "engine/core/errors.h"
#include "engine/models/var/var_model.h"

namespace kvs::var {
namespace {

// A full cache that records S for every layer, scale and image: the generation
// is the full cache's (nothing is evicted, the store is sized for every token).
class SimilarityProbe : public CachePolicy {
 public:
  SimilarityProbe(const PolicyContext& context, int64_t images)
      : tokens_(context.image_tokens()),
        images_(images),
        keys_(context.n_layer),
        similarity_(static_cast<size_t>(images),
                    std::vector<std::vector<double>>(static_cast<size_t>(context.n_layer),
                                                     std::vector<double>(context.unit_tokens.size() - 1, 0.0))) {}
  std::string name() const override { return "full"; }
  int64_t budget_tokens() const override { return tokens_; }
  void after_token(KvStore&, int64_t) override {}
  bool supports_units() const override { return true; }
  bool wants_unit_keys() const override { return true; }
  void observe_unit_keys(int64_t layer, int64_t unit, const at::Tensor& keys) override {
    const std::vector<double> s = keys_.observe(layer, unit, keys, images_);
    if (unit == 0) return;
    for (size_t image = 0; image < s.size(); ++image)
      similarity_[image][static_cast<size_t>(layer)][static_cast<size_t>(unit - 1)] = s[image];
  }
  const std::vector<std::vector<std::vector<double>>>& similarity() const { return similarity_; }

 private:
  int64_t tokens_, images_;
  ScaleKeySimilarity keys_;
  std::vector<std::vector<std::vector<double>>> similarity_;  // [image][layer][scale - 1]
};

}  // namespace

AmsKvCalibration calibrate_key_similarity(const VarModel& model, const std::vector<int64_t>& classes,
                                          const ScaleParams& params, double demanding_fraction,
                                          const std::function<bool()>& cancelled) {
  const VarConfig& config = model.transformer->config();
  if (classes.empty()) throw InvalidArgumentError("calibration needs at least one class");
  if (config.scales() < 2) throw InvalidArgumentError("AMS-KV's calibration needs at least two scales");
  const auto images = static_cast<int64_t>(classes.size());
  const PolicyContext context = scale_policy_context(config, images, params.cfg != 0.0, params.seed);

  AmsKvCalibration c;
  c.model = model.name;
  c.layers = config.depth;
  c.unit_tokens = context.unit_tokens;
  c.classes = classes;
  c.seed = params.seed;
  c.cfg = params.cfg;
  c.demanding_fraction = demanding_fraction;
  // The budgets the policy runs with by default (amskv with no parameters).
  const AmsKvOptions defaults;
  const AmsKvPolicy budgets(context, defaults);
  c.cds = defaults.condensed_scales;
  c.c_min = budgets.c_min();
  c.c_max = budgets.c_max();
  c.decision_scales = amskv_decision_scales(context, defaults);

  SimilarityProbe probe(context, images);
  ScaleHooks hooks;
  hooks.cancelled = cancelled;
  hooks.policy = [&probe]() -> CachePolicy* { return &probe; };
  generate_scales(*model.transformer, *model.vqvae, at::tensor(classes), params, hooks);
  c.similarity = probe.similarity();
  c.derive_theta();
  return c;
}

}  // namespace kvs::var
