#include "engine/models/var/var_family.h"

#include "engine/cache/policies/head_variance_profile.h"
#include "engine/cache/policies/heatkv_policy.h"
#include "engine/cache/policies/layer_selectivity_profile.h"
#include "engine/cache/policies/scale_attention_profile.h"
#include "engine/core/errors.h"
#include "engine/models/var/var_calibration.h"

namespace kvs::var {

const FamilyDescription& var_description() {
  static const FamilyDescription d = [] {
    FamilyDescription f;
    f.name = "var";
    f.display_name = "next-scale (VAR)";
    f.summary = "class-conditional, next-scale prediction";
    f.unit = GenerationUnit::Scale;
    f.conditioning = Conditioning::ClassLabel;
    f.grid = "pyramid of square token maps, coarse to fine";
    f.measures_kv_bytes = true;
    f.overlays.attention_map = true;
    f.overlays.retained_masks = true;
    f.overlays.scale_matrix = true;
    f.policy_family = "scale";
    f.compare_presets = {"",
                         "full",
                         "heatkv:budget=0.1",
                         "heatkv:budget=0.25",
                         "amskv",
                         "streaming:rho=0.25",
                         "heatkv:budget=0.1,variant=binary"};
    f.conformance_constructor = "var_args";
    f.random_presets = {"var-demo", "var-d16", "var-d20", "var-d24", "var-d30", "var-d36"};
    f.convert_usage =
        "--checkpoint var_d16.pth --tokenizer vae_ch160v4096z32.pth --out DIR\n"
        "  [--image-size 256|512|1024 or --patch-nums 1,2,3,... (default: the official schedule that fits)]\n"
        "  [--n-head N (default: from the checkpoint)] [--dtype keep|f32|f16|bf16] [--name NAME]";
    f.create_random_usage =
        "--preset var-demo|var-d16|var-d20|var-d24|var-d30|var-d36\n"
        "  [--image-size 256|512 (default: the official one, 512 for d36)] [--classes N] [--seed N] [--dtype ...]\n"
        "  A randomly initialised VAR bundle (next-scale) with the official VQVAE (vae_ch160v4096z32).";
    f.calibrated_policies = {"heatkv", "amskv", "scalekv", "hack"};
    // HeatKV's calibration_images=N asks for its own calibration set (docs/policies.md#heatkv).
    auto images_work = [](int64_t images) {
      return "S-CAS head scores on " + std::to_string(images) + (images == 1 ? " class" : " classes");
    };
    auto file_serves = [](const std::string& bundle_dir, int64_t num_classes, const std::string& spec, double run_cfg) {
      try {
        const auto stored = stored_scale_attention(bundle_dir);
        return stored &&
               measured_with(*stored, heatkv_calibration_settings(heatkv_calibration_images(spec, num_classes),
                                                                  heatkv_calibration_cfg(spec, run_cfg), num_classes,
                                                                  stored.get()));
      } catch (const Error&) {
        return false;  // a corrupt file: the run says so
      }
    };
    auto calibration_cfg = [](const std::string& spec, double run_cfg) {
      try {
        return heatkv_calibration_cfg(spec, run_cfg);
      } catch (const Error&) {
        return run_cfg;  // a bad spec: the run refuses it itself
      }
    };
    f.calibrated_on_first_use = {
        {"heatkv", "HeatKV", kScaleAttentionProfileFile, "S-CAS head scores on 2 classes", "calibration_images",
         images_work, calibration_cfg, file_serves},
        {"scalekv", "ScaleKV", kScaleKvCalibrationFile, "drafter and refiner layers from 10 classes", "", {}, {}, {}},
        {"hack", "HACK", kHeadVarianceProfileFile, "contextual and structural heads from 10 classes", "", {}, {}, {}}};
    return f;
  }();
  return d;
}

}  // namespace kvs::var
