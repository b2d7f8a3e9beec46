#include "engine/models/infinity/infinity_calibration.h"

#include <ATen/Functions.h>

#include <filesystem>

#include "engine/core/errors.h"
#include "engine/core/logging.h"
#include "engine/generation/scale/scale_calibration.h"
#include "engine/models/infinity/infinity_model.h"
#include "engine/session/bundle_info.h"
#include "engine/text/sentencepiece_trainer.h"

namespace kvs::infinity {
namespace {

std::vector<int64_t> prompt_indices(int64_t count) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < count; ++i) out.push_back(i);
  return out;
}

// One full-cache run of the set's prompts at `size` (the unconditional rows from
// cfg_uncond, as a prompt without a negative prompt runs).
scale::CalibrationRun calibration_run(const InfinityModel& model, const InfinityImageSize& size,
                                      const InfinityCalibrationSet& set, const std::function<bool()>& cancelled) {
  const std::vector<std::string> prompts = calibration_prompts(set.prompts);
  const InfinitySchedule schedule = schedule_of(size);
  InfinityParams params;
  params.cfg = {set.cfg};
  params.seed = set.seed;
  const auto scales = static_cast<int64_t>(schedule.grids.size());
  params.validate(scales);
  const bool cfg_rows = params.uses_cfg(scales);
  scale::CalibrationRun run;
  run.context = scale_policy_context(model.config.transformer, schedule, set.prompts, cfg_rows, set.seed);
  run.cancelled = cancelled;
  run.generate = [&model, prompts, schedule, params, cfg_rows](const scale::ScaleHooks& hooks) {
    const TextRows rows = model.encode_texts(prompts);
    auto network = text_conditioned_infinity(*model.transformer, rows, TextRows{}, schedule, params);
    scale::generate(*network, scale_shape(schedule, static_cast<int64_t>(prompts.size()), cfg_rows), hooks);
  };
  return run;
}

template <typename Profile>
std::shared_ptr<const Profile> load_if_present(const std::string& path) {
  std::error_code ec;
  if (path.empty() || !std::filesystem::exists(path, ec)) return nullptr;
  return std::make_shared<const Profile>(Profile::load(path));  // a corrupt file is an error, not replaced
}

class InfinityCalibrationProvider final : public CalibrationProvider {
 public:
  InfinityCalibrationProvider(const InfinityModel& model, InfinityCalibrations& kept, std::string bundle_dir,
                              const InfinityImageSize& size, double run_cfg, std::function<bool()> cancelled)
      : model_(model),
        kept_(kept),
        bundle_dir_(std::move(bundle_dir)),
        size_(size),
        run_cfg_(run_cfg),
        cancelled_(std::move(cancelled)) {}

  std::shared_ptr<const ScaleAttentionProfile> scale_attention(int64_t images, double cfg) override {
    const double at_cfg = cfg > 0 ? cfg : run_cfg_;
    // A set of N prompts kept from an earlier run is answered without reading the file again.
    if (images > 0)
      if (const auto found = kept_.attention.find({size_.text(), images, at_cfg});
          found != kept_.attention.end() && found->second)
        return found->second;
    const std::string path = stored(kScaleAttentionProfileFile);
    const auto file = load_if_present<ScaleAttentionProfile>(path);
    // calibration_images=0 (the default): the stored file's prompts, else HeatKV's 10.
    const int64_t count = images > 0 ? images
                          : file     ? static_cast<int64_t>(file->classes.size())
                                     : kInfinityCalibrationPrompts;
    auto& slot = kept_.attention[{size_.text(), count, at_cfg}];
    if (slot) return slot;
    auto log = module_logger("session");
    if (file && file->classes == prompt_indices(count) && file->cfg == at_cfg && file->seed == 0) {
      log.info("loaded the scale-attention calibration " + path);
      slot = file;
      return slot;
    }
    log.info(
        format_text("measuring HeatKV's scale attention on %lld calibration prompts at CFG %g (first use at %s; "
                    "'kvstudio-cli calibrate --policy heatkv --image-size %s' stores one)",
                    static_cast<long long>(count), at_cfg, size_.text().c_str(), size_.text().c_str()));
    slot = std::make_shared<const ScaleAttentionProfile>(
        calibrate_scale_attention(model_, size_, set(count, at_cfg), cancelled_));
    return slot;
  }

  std::shared_ptr<const AmsKvCalibration> amskv_similarity() override {
    const auto found = kept_.similarity.find(size_.text());
    if (found != kept_.similarity.end()) return found->second;
    const std::string path = stored(kAmsKvCalibrationFile);
    auto file = load_if_present<AmsKvCalibration>(path);
    if (file)
      module_logger("session").info(
          format_text("loaded the AMS-KV calibration %s: theta %g", path.c_str(), file->theta.theta));
    kept_.similarity[size_.text()] = file;
    return file;
  }

  std::shared_ptr<const LayerSelectivityProfile> layer_selectivity(int64_t top_k) override {
    auto& slot = kept_.selectivity[{size_.text(), run_cfg_, top_k}];
    if (slot) return slot;
    const std::string path = stored(kScaleKvCalibrationFile);
    const auto file = load_if_present<LayerSelectivityProfile>(path);
    if (file && file->top_k == top_k) {
      module_logger("session").info("loaded the ScaleKV calibration " + path);
      slot = file;
      return slot;
    }
    module_logger("session").info(format_text(
        "measuring ScaleKV's attention selectivity (top_k=%lld) on %lld calibration prompts (first use at %s)",
        static_cast<long long>(top_k), static_cast<long long>(kInfinityCalibrationPrompts), size_.text().c_str()));
    slot = std::make_shared<const LayerSelectivityProfile>(
        calibrate_attention_selectivity(model_, size_, set(kInfinityCalibrationPrompts, run_cfg_), top_k, cancelled_));
    return slot;
  }

  std::shared_ptr<const HeadVarianceProfile> head_variance() override {
    auto& slot = kept_.variance[{size_.text(), run_cfg_}];
    if (slot) return slot;
    const std::string path = stored(kHeadVarianceProfileFile);
    if (auto file = load_if_present<HeadVarianceProfile>(path)) {
      module_logger("session").info("loaded the HACK head calibration " + path);
      slot = file;
      return slot;
    }
    module_logger("session").info(
        format_text("measuring HACK's head variance on %lld calibration prompts (first use "
                    "at %s)",
                    static_cast<long long>(kInfinityCalibrationPrompts), size_.text().c_str()));
    slot = std::make_shared<const HeadVarianceProfile>(
        calibrate_head_variance(model_, size_, set(kInfinityCalibrationPrompts, run_cfg_), cancelled_));
    return slot;
  }

 private:
  std::string stored(const char* file) const {
    return bundle_dir_.empty() ? std::string() : stored_calibration_path(bundle_dir_, file, size_);
  }
  static InfinityCalibrationSet set(int64_t prompts, double cfg) {
    InfinityCalibrationSet s;
    s.prompts = prompts;
    s.cfg = cfg;
    s.seed = 0;
    return s;
  }

  const InfinityModel& model_;
  InfinityCalibrations& kept_;
  const std::string bundle_dir_;
  const InfinityImageSize size_;
  const double run_cfg_;
  const std::function<bool()> cancelled_;
};

}  // namespace

std::vector<std::string> calibration_prompts(int64_t count) {
  if (count <= 0 || count > kInfinityCalibrationPromptList)
    throw InvalidArgumentError("Infinity calibrates on 1 to " + std::to_string(kInfinityCalibrationPromptList) +
                               " prompts, asked for " + std::to_string(count));
  const auto& corpus = text::caption_corpus();
  return {corpus.begin(), corpus.begin() + count};
}

std::string stored_calibration_path(const std::string& bundle_dir, const std::string& file,
                                    const InfinityImageSize& size) {
  const std::filesystem::path name(file);
  return (std::filesystem::path(bundle_dir) / (name.stem().string() + "." + size.text() + name.extension().string()))
      .string();
}

ScaleAttentionProfile calibrate_scale_attention(const InfinityModel& model, const InfinityImageSize& size,
                                                const InfinityCalibrationSet& set,
                                                const std::function<bool()>& cancelled) {
  const scale::CalibrationRun run = calibration_run(model, size, set, cancelled);
  ScaleAttentionProfile profile;
  profile.beta = scale::measure_scale_attention(run);
  scale::record_calibration(profile, run, model.name, prompt_indices(set.prompts), set.seed, set.cfg);
  return profile;
}

HeadVarianceProfile calibrate_head_variance(const InfinityModel& model, const InfinityImageSize& size,
                                            const InfinityCalibrationSet& set, const std::function<bool()>& cancelled) {
  const scale::CalibrationRun run = calibration_run(model, size, set, cancelled);
  HeadVarianceProfile profile;
  profile.variance = scale::measure_head_variance(run);
  scale::record_calibration(profile, run, model.name, prompt_indices(set.prompts), set.seed, set.cfg);
  return profile;
}

LayerSelectivityProfile calibrate_attention_selectivity(const InfinityModel& model, const InfinityImageSize& size,
                                                        const InfinityCalibrationSet& set, int64_t top_k,
                                                        const std::function<bool()>& cancelled) {
  LayerSelectivityProfile profile = scale::measure_attention_selectivity(calibration_run(model, size, set, cancelled),
                                                                         top_k, prompt_indices(set.prompts));
  profile.model = model.name;
  profile.seed = set.seed;
  profile.cfg = set.cfg;
  return profile;
}

AmsKvCalibration calibrate_key_similarity(const InfinityModel& model, const InfinityImageSize& size,
                                          const InfinityCalibrationSet& set, double demanding_fraction,
                                          const std::function<bool()>& cancelled) {
  AmsKvCalibration c = scale::measure_key_similarity(calibration_run(model, size, set, cancelled), demanding_fraction);
  c.model = model.name;
  c.classes = prompt_indices(set.prompts);
  c.seed = set.seed;
  c.cfg = set.cfg;
  return c;
}

std::shared_ptr<CalibrationProvider> infinity_calibration_provider(const InfinityModel& model,
                                                                   InfinityCalibrations& kept,
                                                                   const std::string& bundle_dir,
                                                                   const InfinityImageSize& size, double run_cfg,
                                                                   std::function<bool()> cancelled) {
  return std::make_shared<InfinityCalibrationProvider>(model, kept, bundle_dir, size, run_cfg, std::move(cancelled));
}

}  // namespace kvs::infinity
