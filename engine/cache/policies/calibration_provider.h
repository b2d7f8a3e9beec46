#pragma once
// How a policy that needs a calibration of the model gets it: one interface the
// policy asks while it is built (PolicyContext::calibrations). The model family
// answers it (the VAR session reads the bundle's file, or measures one on first
// use and keeps it with the loaded model); a check of a spec before any run
// answers with stand-ins. A policy never learns who answered, and the session
// never needs to know which policy asked.
//
// Every answer may be null, meaning "none known": HeatKV then refuses to run
// (it has nothing to rank heads by), AMS-KV takes the paper's threshold, and
// ScaleKV and HACK score every layer and head alike (enough to check their
// parameters).
#include <cstdint>
#include <memory>

namespace kvs {

struct ScaleAttentionProfile;    // scale_attention_profile.h  (HeatKV)
struct AmsKvCalibration;         // amskv_calibration.h        (AMS-KV)
struct LayerSelectivityProfile;  // layer_selectivity_profile.h (ScaleKV)
struct HeadVarianceProfile;      // head_variance_profile.h    (HACK)

class CalibrationProvider {
 public:
  virtual ~CalibrationProvider() = default;
  // HeatKV's scale-to-scale attention measured on `images` classes (0: the
  // bundle's calibration classes) at CFG `cfg` (0: the run's CFG).
  virtual std::shared_ptr<const ScaleAttentionProfile> scale_attention(int64_t images, double cfg) = 0;
  // AMS-KV's threshold profiling of the model.
  virtual std::shared_ptr<const AmsKvCalibration> amskv_similarity() = 0;
  // ScaleKV's attention selectivity, measured with K' = top_k.
  virtual std::shared_ptr<const LayerSelectivityProfile> layer_selectivity(int64_t top_k) = 0;
  // HACK's per-head attention variance.
  virtual std::shared_ptr<const HeadVarianceProfile> head_variance() = 0;
};

// Calibrations known in advance (tests; a spec checked before a run): each
// answer is what it was given, whatever the arguments.
class FixedCalibrations : public CalibrationProvider {
 public:
  std::shared_ptr<const ScaleAttentionProfile> attention;
  std::shared_ptr<const AmsKvCalibration> similarity;
  std::shared_ptr<const LayerSelectivityProfile> selectivity;
  std::shared_ptr<const HeadVarianceProfile> variance;

  std::shared_ptr<const ScaleAttentionProfile> scale_attention(int64_t, double) override { return attention; }
  std::shared_ptr<const AmsKvCalibration> amskv_similarity() override { return similarity; }
  std::shared_ptr<const LayerSelectivityProfile> layer_selectivity(int64_t) override { return selectivity; }
  std::shared_ptr<const HeadVarianceProfile> head_variance() override { return variance; }
};

}  // namespace kvs
