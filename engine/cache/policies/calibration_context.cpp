// The four calibration files of the scale policies against the model they are
// used on: whether one was made for this geometry, and the uniform stand-ins
// HeatKV, HACK and ScaleKV use before a calibration exists. Apart from the
// files' parsers (amskv_calibration.cpp, scale_attention_profile.cpp,
// head_variance_profile.cpp, layer_selectivity_profile.cpp), which stay
// torch-free so that they can be fuzzed on their own.
#include <optional>
#include <string>
#include <vector>

#include "engine/cache/policies/amskv_calibration.h"
#include "engine/cache/policies/cache_policy.h"
#include "engine/cache/policies/calibration_header.h"
#include "engine/cache/policies/head_variance_profile.h"
#include "engine/cache/policies/layer_selectivity_profile.h"
#include "engine/cache/policies/scale_attention_profile.h"
#include "engine/core/errors.h"

namespace kvs {
namespace {

// Throws when a calibration's geometry is not the model's: its layers, its
// scales' token counts and, for the formats with a per-head table, its KV heads
// (`heads`; none for the per-layer formats). `what` names the file, `remedy`
// says how to make a matching one.
void require_model_geometry(const PolicyContext& context, const std::string& what, int64_t layers,
                            const std::vector<int64_t>& unit_tokens, std::optional<int64_t> heads,
                            const std::string& remedy) {
  const bool heads_match = !heads || *heads == context.kv_heads;
  if (layers == context.n_layer && heads_match && unit_tokens == context.unit_tokens) return;
  throw InvalidArgumentError("the " + what + " (" + calibration_geometry(layers, unit_tokens, heads.value_or(0)) +
                             ") was made for another model than this one (" +
                             calibration_geometry(context.n_layer, context.unit_tokens, heads ? context.kv_heads : 0) +
                             "): " + remedy);
}

}  // namespace

void AmsKvCalibration::check_matches(const PolicyContext& context) const {
  require_model_geometry(context, "AMS-KV calibration", layers, unit_tokens, std::nullopt,
                         "run 'kvstudio-cli calibrate --policy amskv --model DIR' again, or give theta=");
}

void ScaleAttentionProfile::check_matches(const PolicyContext& context) const {
  require_model_geometry(context, "scale-attention calibration", layers, unit_tokens, heads,
                         "run 'kvstudio-cli calibrate --policy heatkv --model DIR' again");
}

ScaleAttentionProfile ScaleAttentionProfile::uniform(const PolicyContext& context) {
  ScaleAttentionProfile p;
  p.model = "uniform";
  p.layers = context.n_layer;
  p.heads = context.kv_heads;
  p.unit_tokens = context.unit_tokens;
  const int64_t k = p.scales();
  p.beta.assign(static_cast<size_t>(p.layers * p.heads * k * k), 0.0);
  for (int64_t l = 0; l < p.layers; ++l)
    for (int64_t h = 0; h < p.heads; ++h)
      for (int64_t k1 = 0; k1 < k; ++k1) {
        const double seen = static_cast<double>(context.unit_begin(k1 + 1));
        for (int64_t k2 = 0; k2 <= k1; ++k2)
          p.beta_at(l, h, k1, k2) = static_cast<double>(context.unit_tokens[static_cast<size_t>(k2)]) / seen;
      }
  return p;
}

void HeadVarianceProfile::check_matches(const PolicyContext& context) const {
  require_model_geometry(context, "HACK head calibration", layers, unit_tokens, heads,
                         "run 'kvstudio-cli calibrate --policy hack --model DIR' again");
}

HeadVarianceProfile HeadVarianceProfile::uniform(const PolicyContext& context) {
  HeadVarianceProfile p;
  p.model = "uniform";
  p.layers = context.n_layer;
  p.heads = context.kv_heads;
  p.unit_tokens = context.unit_tokens;
  p.variance.assign(static_cast<size_t>(p.layers * p.heads * p.scales()), 0.0);
  return p;
}

void LayerSelectivityProfile::check_matches(const PolicyContext& context) const {
  require_model_geometry(context, "attention-selectivity calibration", layers, unit_tokens, std::nullopt,
                         "run 'kvstudio-cli calibrate --policy scalekv --model DIR' again");
}

LayerSelectivityProfile LayerSelectivityProfile::uniform(const PolicyContext& context, int64_t top_k) {
  LayerSelectivityProfile p;
  p.layers = context.n_layer;
  p.unit_tokens = context.unit_tokens;
  p.top_k = top_k;
  const auto n = static_cast<size_t>(p.layers * p.scales());
  p.current_ratio.assign(n, 0.5);
  p.history_top_k.assign(n, 0.5);
  return p;
}

}  // namespace kvs
