#include "engine/generation/scale/scale_calibration.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include "engine/cache/policies/amskv_policy.h"
#include "engine/cache/policies/attention_selectivity_meter.h"
#include "engine/core/errors.h"

namespace kvs::scale {
namespace {

void check(const CalibrationRun& run) {
  if (run.images() <= 0) throw InvalidArgumentError("calibration needs at least one image");
  if (run.context.unit_tokens.empty()) throw InvalidArgumentError("calibration needs the model's scales");
}

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

std::vector<double> measure_scale_attention(const CalibrationRun& run) {
  check(run);
  const PolicyContext& c = run.context;
  const int64_t layers = c.n_layer, heads = c.n_head, scales = static_cast<int64_t>(c.unit_tokens.size());
  const int64_t total = c.image_tokens(), images = run.images();
  // position -> scale (index 0: empty slot, position -1, lands in an extra, discarded bin).
  std::vector<int64_t> table(static_cast<size_t>(total) + 1, 0);
  table[0] = scales;
  for (int64_t si = 0; si < scales; ++si)
    for (int64_t i = 0; i < c.unit_tokens[static_cast<size_t>(si)]; ++i)
      table[static_cast<size_t>(c.unit_begin(si) + i + 1)] = si;
  const at::Tensor scale_of = at::tensor(table, at::TensorOptions().dtype(at::kLong));
  at::Tensor beta = at::zeros({layers, heads, scales, scales}, at::TensorOptions().dtype(at::kDouble));
  ScaleHooks hooks;
  hooks.cancelled = run.cancelled;
  hooks.wants_attention = [](int64_t) { return true; };
  hooks.on_attention = [&](int64_t layer, int64_t si, const KvAttention& a, const KvStore& store) {
    const int64_t len = a.key_mass.size(-1);
    const at::Tensor mass = a.key_mass.narrow(0, 0, images).to(at::kCPU, at::kDouble);  // [images, H, len]
    const at::Tensor pos = store.positions_tensor(layer).narrow(0, 0, images).narrow(2, 0, len).to(at::kCPU);
    const at::Tensor bins =
        at::index_select(scale_of, 0, (pos.clamp(-1, total - 1) + 1).reshape({-1})).reshape(pos.sizes());
    const at::Tensor by_scale = at::zeros({images, heads, scales + 1}, mass.options()).scatter_add_(2, bins, mass);
    // beta^d[k1 = si][k2] = mass on scale k2 / t_si, summed over images here.
    beta[layer].select(1, si).add_(by_scale.narrow(2, 0, scales).sum(0) /
                                   static_cast<double>(c.unit_tokens[static_cast<size_t>(si)]));
  };
  run.generate(hooks);
  const at::Tensor mean = (beta / static_cast<double>(images)).contiguous();
  return {mean.data_ptr<double>(), mean.data_ptr<double>() + mean.numel()};
}

std::vector<double> measure_head_variance(const CalibrationRun& run) {
  check(run);
  const PolicyContext& c = run.context;
  const int64_t layers = c.n_layer, heads = c.n_head, scales = static_cast<int64_t>(c.unit_tokens.size());
  const int64_t images = run.images();
  at::Tensor variance = at::zeros({layers, heads, scales}, at::TensorOptions().dtype(at::kDouble));
  ScaleHooks hooks;
  hooks.cancelled = run.cancelled;
  hooks.wants_attention = [](int64_t) { return true; };
  hooks.on_attention = [&](int64_t layer, int64_t si, const KvAttention& a, const KvStore& store) {
    const int64_t len = a.key_mass.size(-1);
    // m_j: the scale's attention on key j, averaged over its queries (sums to 1 over the keys).
    const at::Tensor m = a.key_mass.narrow(0, 0, images).to(at::kCPU, at::kDouble) /
                         static_cast<double>(c.unit_tokens[static_cast<size_t>(si)]);  // [images, H, len]
    const at::Tensor seen =
        (store.positions_tensor(layer).narrow(0, 0, images).narrow(2, 0, len).to(at::kCPU) >= 0).to(at::kDouble);
    const at::Tensor keys = seen.sum(-1);  // c, [images, H]
    const at::Tensor normalised = at::clamp_min(keys * (m * m * seen).sum(-1) - 1.0, 0.0);
    variance[layer].select(1, si).add_(normalised.sum(0));
  };
  run.generate(hooks);
  const at::Tensor mean = (variance / static_cast<double>(images)).contiguous();
  return {mean.data_ptr<double>(), mean.data_ptr<double>() + mean.numel()};
}

LayerSelectivityProfile measure_attention_selectivity(const CalibrationRun& run, int64_t top_k,
                                                      const std::vector<int64_t>& labels) {
  check(run);
  AttentionSelectivityMeter meter(run.context, top_k);
  ScaleHooks hooks;
  hooks.cancelled = run.cancelled;
  hooks.policy = [&meter]() -> CachePolicy* { return &meter; };
  run.generate(hooks);
  return meter.profile(labels);
}

AmsKvCalibration measure_key_similarity(const CalibrationRun& run, double demanding_fraction) {
  check(run);
  const PolicyContext& context = run.context;
  if (context.unit_tokens.size() < 2) throw InvalidArgumentError("AMS-KV's calibration needs at least two scales");
  AmsKvCalibration c;
  c.layers = context.n_layer;
  c.unit_tokens = context.unit_tokens;
  c.demanding_fraction = demanding_fraction;
  // The budgets the policy runs with by default (amskv with no parameters).
  const AmsKvOptions defaults;
  const AmsKvPolicy budgets(context, defaults);
  c.cds = defaults.condensed_scales;
  c.c_min = budgets.c_min();
  c.c_max = budgets.c_max();
  c.decision_scales = amskv_decision_scales(context, defaults);

  SimilarityProbe probe(context, run.images());
  ScaleHooks hooks;
  hooks.cancelled = run.cancelled;
  hooks.policy = [&probe]() -> CachePolicy* { return &probe; };
  run.generate(hooks);
  c.similarity = probe.similarity();
  c.derive_theta();
  return c;
}

}  // namespace kvs::scale
