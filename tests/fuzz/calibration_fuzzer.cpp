// libFuzzer target for the two scale calibration files: HeatKV's
// heatkv_calibration.json (ScaleAttentionProfile::from_json_text) and AMS-KV's
// amskv_calibration.json (AmsKvCalibration::from_json_text). Any input must be
// refused with kvs::FormatError or give a profile whose every value reads back.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "engine/cache/policies/amskv_calibration.h"
#include "engine/cache/policies/scale_attention_profile.h"
#include "engine/core/errors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const kvs::ScaleAttentionProfile p = kvs::ScaleAttentionProfile::from_json_text(text, "fuzz.json");
    const int64_t k = p.scales();
    for (int64_t l = 0; l < p.layers; ++l)
      for (int64_t h = 0; h < p.heads; ++h) {
        (void)p.beta_at(l, h, k - 1, k - 1);
        (void)p.cas(l, h, 0);
        (void)p.scas(l, h, 0);
      }
  } catch (const kvs::FormatError&) {
  }
  try {
    const kvs::AmsKvCalibration c = kvs::AmsKvCalibration::from_json_text(text, "fuzz.json");
    (void)c.to_json_text();
  } catch (const kvs::FormatError&) {
  }
  return 0;
}
