#pragma once
// The three model families as the window sees them: what one generation unit
// is (a token line, a scale, a decoding step), which registry policies apply,
// and how VAR's flattened multi-scale positions map to scales. Plain values, no
// widgets: the panel, the canvas, the cache map and the compare view all ask here.
#include <QString>
#include <QStringList>

#include <cstdint>
#include <string>
#include <vector>

namespace kvs {
struct PolicyDescription;
}

namespace kvs::ui {

enum class ModelFamily { Raster, Scale, Masked };

// model.json "family" ("llamagen", "var", "mar"); unknown names read as raster.
ModelFamily familyOfModel(const std::string& family);
// StartedEvent::unit_name ("line", "scale", "step").
ModelFamily familyOfUnit(const std::string& unit_name);
// The registry's family names (PolicyInfo::families): "raster", "scale", "masked".
std::string registryFamilyName(ModelFamily family);
QString unitNoun(ModelFamily family);         // "line", "scale", "step"
QString familyDisplayName(ModelFamily family);  // "raster (LlamaGen)", "next-scale (VAR)", "masked (MAR)"

bool policyApplies(const kvs::PolicyDescription& entry, ModelFamily family);
// The registry's policies for the family, in registry order.
QStringList policiesForFamily(ModelFamily family);
// Empty when the spec's policy serves the family (or the name is unknown: the
// registry reports that itself); else a message a person can act on.
QString policyFamilyProblem(const QString& spec, ModelFamily family);
// Example specs offered in the compare view's combo boxes.
QStringList comparePresets(ModelFamily family);

// VAR's sequence: scale s holds sides[s]^2 tokens, scales one after another.
struct ScaleLayout {
  std::vector<int64_t> sides;
  int64_t scales() const { return static_cast<int64_t>(sides.size()); }
  int64_t tokens(int64_t scale) const;
  int64_t begin(int64_t scale) const;  // first flattened position of the scale
  int64_t total() const;
  int64_t scaleOf(int64_t position) const;  // -1 outside the sequence
};

}  // namespace kvs::ui
