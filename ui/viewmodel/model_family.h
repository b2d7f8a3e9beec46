#pragma once
// The model family as the window sees it: the engine's FamilyDescription, looked
// up by name through the family registry (what one generation unit is, which
// overlays its unit events carry, whether it measures KV bytes or FLOPs, its
// policy family and compare presets), with the Qt-side wording the widgets
// share (which policies serve it, what a policy calibrates first: the engine's
// answers, engine/session/family_policies.h, in Qt's words); and the drawing
// geometry of a next-scale model's flattened positions.
// The widgets decide what to show from these facts, never from a family's name,
// so a new family shows up without changes here.
#include <QString>
#include <QStringList>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/session/family_description.h"

namespace kvs {
struct PolicyDescription;
}

namespace kvs::ui {

// The registered family called `name` (model.json "family", StartedEvent::family).
// An empty or unknown name (a summary made by hand, nothing loaded yet) reads
// as a line-by-line KV-cache model without policies of its own.
const kvs::FamilyDescription& familyDescription(const std::string& name);
// Whether `name` is a registered family.
bool knownFamily(const std::string& name);

QString unitNoun(const kvs::FamilyDescription& family);           // "line", "scale", "step"
QString familyDisplayName(const kvs::FamilyDescription& family);  // "raster (LlamaGen)"

bool policyApplies(const kvs::PolicyDescription& entry, const kvs::FamilyDescription& family);
// The registry's policies for the family, in registry order.
QStringList policiesForFamily(const kvs::FamilyDescription& family);
// Empty when the spec's policy serves the family (or the name is unknown: the
// registry reports that itself); else a message a person can act on.
QString policyFamilyProblem(const QString& spec, const kvs::FamilyDescription& family);
// Example specs offered in the compare view's combo boxes ("" = the pane is off).
QStringList comparePresets(const kvs::FamilyDescription& family);
// The calibration the family's runs of `spec` may make first (a policy the
// family calibrates on first use: HeatKV, ScaleKV; AMS-KV's calibration is only
// read), or null.
const kvs::FamilyDescription::FirstUseCalibration* firstUseCalibration(const QString& spec,
                                                                       const kvs::FamilyDescription& family);
// The N of the calibration's images_param in `spec` (HeatKV's
// calibration_images=N: its own calibration set); 0 when the spec leaves it out
// or the calibration has no such parameter (the default calibration).
int64_t calibrationImages(const QString& spec, const kvs::FamilyDescription::FirstUseCalibration& calibration);

// Whether the family samples continuous tokens (no token ids: top-k / top-p do
// not apply, and GenerationResult::tokens holds the generation order).
bool samplesContinuousTokens(const kvs::FamilyDescription& family);

// A next-scale sequence: scale s holds sides[s] x widths[s] tokens (square
// scales, VAR's, leave widths empty), scales one after another.
struct ScaleLayout {
  std::vector<int64_t> sides;   // heights
  std::vector<int64_t> widths;  // empty: square scales
  int64_t scales() const { return static_cast<int64_t>(sides.size()); }
  int64_t height(int64_t scale) const;
  int64_t width(int64_t scale) const;
  int64_t tokens(int64_t scale) const;
  int64_t begin(int64_t scale) const;  // first flattened position of the scale
  int64_t total() const;
  int64_t scaleOf(int64_t position) const;  // -1 outside the sequence
};

}  // namespace kvs::ui
