// libFuzzer target for the four calibration files of the scale policies, each
// input fed to every parser: HeatKV's heatkv_calibration.json
// (ScaleAttentionProfile), AMS-KV's amskv_calibration.json (AmsKvCalibration),
// HACK's hack_calibration.json (HeadVarianceProfile) and ScaleKV's
// scalekv_calibration.json (LayerSelectivityProfile), all over one header reader
// (calibration_header.h). Any input must be refused with kvs::FormatError (any
// other exception escapes and is a crash) or give a calibration whose every
// derived value reads and which writes back to a file that reads back the same.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "engine/cache/policies/amskv_calibration.h"
#include "engine/cache/policies/head_variance_profile.h"
#include "engine/cache/policies/layer_selectivity_profile.h"
#include "engine/cache/policies/scale_attention_profile.h"
#include "engine/core/errors.h"

namespace {

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "calibration_fuzzer: %s\n", what);
  std::abort();
}

// What a parsed file writes must read back, field for field: a writer that
// drops or rounds what its reader accepted would lose a calibration on save.
template <class Calibration>
Calibration written_back(const Calibration& c) {
  try {
    return Calibration::from_json_text(c.to_json_text(), "written.json");
  } catch (const kvs::FormatError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    fail("a parsed calibration wrote a file its own parser refuses");
  }
}

template <class Calibration>
void expect_same_header(const Calibration& a, const Calibration& b) {
  if (a.model != b.model || a.layers != b.layers || a.unit_tokens != b.unit_tokens || a.classes != b.classes ||
      a.seed != b.seed || a.cfg != b.cfg)
    fail("the header read back differs");
}

}  // namespace

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
    const kvs::ScaleAttentionProfile back = written_back(p);
    expect_same_header(p, back);
    if (back.heads != p.heads || back.samples != p.samples || back.beta != p.beta)
      fail("HeatKV beta read back differs");
  } catch (const kvs::FormatError&) {
  }
  try {
    const kvs::AmsKvCalibration c = kvs::AmsKvCalibration::from_json_text(text, "fuzz.json");
    const kvs::AmsKvCalibration back = written_back(c);
    expect_same_header(c, back);
    if (back.decision_scales != c.decision_scales || back.layer_statistic != c.layer_statistic ||
        back.similarity != c.similarity || back.theta.theta != c.theta.theta)
      fail("AMS-KV fields read back differ");
  } catch (const kvs::FormatError&) {
  }
  try {
    const kvs::HeadVarianceProfile p = kvs::HeadVarianceProfile::from_json_text(text, "fuzz.json");
    for (int64_t l = 0; l < p.layers; ++l)
      for (int64_t h = 0; h < p.heads; ++h) (void)p.score(l, h);
    const std::vector<uint8_t> contextual = p.contextual_heads(p.heads);
    if (std::accumulate(contextual.begin(), contextual.end(), int64_t{0}) != p.heads)
      fail("HACK classified another number of heads than asked");
    const kvs::HeadVarianceProfile back = written_back(p);
    expect_same_header(p, back);
    if (back.heads != p.heads || back.samples != p.samples || back.variance != p.variance)
      fail("HACK variances read back differ");
  } catch (const kvs::FormatError&) {
  }
  try {
    const kvs::LayerSelectivityProfile p = kvs::LayerSelectivityProfile::from_json_text(text, "fuzz.json");
    std::vector<int64_t> every_scale(static_cast<size_t>(p.scales()));
    std::iota(every_scale.begin(), every_scale.end(), 0);
    const std::vector<uint8_t> drafters = p.drafters(every_scale, p.layers);
    if (static_cast<int64_t>(drafters.size()) != p.layers * p.scales()) fail("ScaleKV drafter flags have another size");
    const kvs::LayerSelectivityProfile back = written_back(p);
    expect_same_header(p, back);
    if (back.top_k != p.top_k || back.samples != p.samples || back.current_ratio != p.current_ratio ||
        back.history_top_k != p.history_top_k)
      fail("ScaleKV ratios read back differ");
  } catch (const kvs::FormatError&) {
  }
  return 0;
}
