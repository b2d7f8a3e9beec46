#include "engine/models/infinity/infinity_calibration.h"

#include <ATen/Functions.h>

#include "engine/cache/policies/head_variance_profile.h"
#include "engine/cache/policies/layer_selectivity_profile.h"
#include "engine/cache/policies/scale_attention_profile.h"
#include "engine/core/errors.h"
#include "engine/core/logging.h"
#include "engine/generation/scale/scale_calibration.h"
#include "engine/models/infinity/infinity_model.h"
#include "engine/text/sentencepiece_trainer.h"

namespace kvs::infinity {
namespace {

constexpr int64_t kDefaultPrompts = 10;  // HeatKV §4: N = 10 calibration prompts (HACK uses the same)
constexpr int64_t kPromptList = 30;      // the caption list's prompts (its last lines are negative phrases)

std::string schedule_key(const InfinitySchedule& s) {
  std::string key = std::to_string(s.scale_template.h_div_w) + ":";
  for (const Grid& g : s.grids) key += std::to_string(g[0]) + "x" + std::to_string(g[1]) + ",";
  return key;
}

class InfinityCalibrationProvider final : public CalibrationProvider {
 public:
  InfinityCalibrationProvider(const InfinityModel& model, InfinityCalibrations& kept, InfinitySchedule schedule,
                              InfinityParams params, std::function<bool()> cancelled)
      : model_(model),
        kept_(kept),
        schedule_(std::move(schedule)),
        params_(std::move(params)),
        cancelled_(std::move(cancelled)),
        key_(schedule_key(schedule_)) {
    params_.seed = 0;
  }

  std::shared_ptr<const ScaleAttentionProfile> scale_attention(int64_t images, double cfg) override {
    const int64_t count = images > 0 ? images : kDefaultPrompts;
    const double run_cfg = cfg > 0 ? cfg : params_.cfg_at(0);
    auto& slot = kept_.attention[{key_, count, run_cfg}];
    if (slot) return slot;
    module_logger("session").info("measuring HeatKV's scale attention on " + std::to_string(count) +
                                  " calibration prompts (first use on this image size)");
    const scale::CalibrationRun run = calibration_run(count, run_cfg);
    auto profile = std::make_shared<ScaleAttentionProfile>();
    profile->beta = scale::measure_scale_attention(run);
    fill(*profile, run, count, run_cfg);
    slot = profile;
    return slot;
  }

  std::shared_ptr<const AmsKvCalibration> amskv_similarity() override { return nullptr; }

  std::shared_ptr<const LayerSelectivityProfile> layer_selectivity(int64_t top_k) override {
    const double cfg = params_.cfg_at(0);
    auto& slot = kept_.selectivity[{key_, cfg, top_k}];
    if (slot) return slot;
    module_logger("session").info("measuring ScaleKV's attention selectivity on " + std::to_string(kDefaultPrompts) +
                                  " calibration prompts (first use on this image size)");
    const scale::CalibrationRun run = calibration_run(kDefaultPrompts, cfg);
    auto profile = std::make_shared<LayerSelectivityProfile>(
        scale::measure_attention_selectivity(run, top_k, prompt_indices(kDefaultPrompts)));
    profile->model = model_.name;
    profile->seed = 0;
    profile->cfg = cfg;
    slot = profile;
    return slot;
  }

  std::shared_ptr<const HeadVarianceProfile> head_variance() override {
    const double cfg = params_.cfg_at(0);
    auto& slot = kept_.variance[{key_, cfg}];
    if (slot) return slot;
    module_logger("session").info("measuring HACK's head variance on " + std::to_string(kDefaultPrompts) +
                                  " calibration prompts (first use on this image size)");
    const scale::CalibrationRun run = calibration_run(kDefaultPrompts, cfg);
    auto profile = std::make_shared<HeadVarianceProfile>();
    profile->variance = scale::measure_head_variance(run);
    fill(*profile, run, kDefaultPrompts, cfg);
    slot = profile;
    return slot;
  }

 private:
  static std::vector<int64_t> prompt_indices(int64_t count) {
    std::vector<int64_t> out;
    for (int64_t i = 0; i < count; ++i) out.push_back(i);
    return out;
  }

  template <typename Profile>
  void fill(Profile& p, const scale::CalibrationRun& run, int64_t count, double cfg) const {
    p.model = model_.name;
    p.layers = run.context.n_layer;
    p.heads = run.context.n_head;
    p.unit_tokens = run.context.unit_tokens;
    p.classes = prompt_indices(count);
    p.seed = 0;
    p.cfg = cfg;
    p.samples = count;
  }

  scale::CalibrationRun calibration_run(int64_t count, double cfg) const {
    InfinityParams params = params_;
    params.cfg = {cfg};
    const bool cfg_rows = params.uses_cfg(static_cast<int64_t>(schedule_.grids.size()));
    scale::CalibrationRun run;
    run.context = scale_policy_context(model_.config.transformer, schedule_, count, cfg_rows, 0);
    run.cancelled = cancelled_;
    const std::vector<std::string> prompts = calibration_prompts(count);
    run.generate = [this, prompts, params, cfg_rows](const scale::ScaleHooks& hooks) {
      const TextRows rows = model_.encode_texts(prompts);
      auto network = text_conditioned_infinity(*model_.transformer, rows, TextRows{}, schedule_, params);
      scale::generate(*network, scale_shape(schedule_, static_cast<int64_t>(prompts.size()), cfg_rows), hooks);
    };
    return run;
  }

  const InfinityModel& model_;
  InfinityCalibrations& kept_;
  const InfinitySchedule schedule_;
  InfinityParams params_;
  const std::function<bool()> cancelled_;
  const std::string key_;
};

}  // namespace

std::vector<std::string> calibration_prompts(int64_t count) {
  if (count <= 0 || count > kPromptList)
    throw InvalidArgumentError("Infinity calibrates on 1 to " + std::to_string(kPromptList) + " prompts, asked for " +
                               std::to_string(count));
  const auto& corpus = text::caption_corpus();
  return {corpus.begin(), corpus.begin() + count};
}

std::shared_ptr<CalibrationProvider> infinity_calibration_provider(const InfinityModel& model,
                                                                   InfinityCalibrations& kept,
                                                                   const InfinitySchedule& schedule,
                                                                   const InfinityParams& params,
                                                                   std::function<bool()> cancelled) {
  return std::make_shared<InfinityCalibrationProvider>(model, kept, schedule, params, std::move(cancelled));
}

}  // namespace kvs::infinity
