#include "ui/viewmodel/model_family.h"

#include <algorithm>

#include "engine/models/family_registry.h"
#include "engine/session/family_policies.h"

namespace kvs::ui {

namespace {

const kvs::FamilyDescription& unknownFamily() {
  static const kvs::FamilyDescription d = [] {
    kvs::FamilyDescription f;
    f.display_name = "unknown family";
    f.unit = kvs::GenerationUnit::Line;
    f.measures_kv_bytes = true;
    return f;
  }();
  return d;
}

}  // namespace

const kvs::FamilyDescription& familyDescription(const std::string& name) {
  const kvs::FamilyDescription* d = name.empty() ? nullptr : kvs::find_family_description(name);
  return d ? *d : unknownFamily();
}

bool knownFamily(const std::string& name) { return !name.empty() && kvs::find_family_description(name) != nullptr; }

QString unitNoun(const kvs::FamilyDescription& family) { return QString::fromStdString(family.unit_name()); }

QString familyDisplayName(const kvs::FamilyDescription& family) { return QString::fromStdString(family.display_name); }

bool policyApplies(const kvs::PolicyDescription& entry, const kvs::FamilyDescription& family) {
  return kvs::policy_serves(entry, family);
}

QStringList policiesForFamily(const kvs::FamilyDescription& family) {
  QStringList out;
  for (const std::string& name : kvs::policies_for(family)) out << QString::fromStdString(name);
  return out;
}

QString policyFamilyProblem(const QString& spec, const kvs::FamilyDescription& family) {
  return QString::fromStdString(kvs::policy_family_problem(spec.trimmed().toStdString(), family));
}

QStringList comparePresets(const kvs::FamilyDescription& family) {
  QStringList out;
  for (const std::string& spec : family.compare_presets) out << QString::fromStdString(spec);
  return out;
}

const kvs::FamilyDescription::FirstUseCalibration* firstUseCalibration(const QString& spec,
                                                                       const kvs::FamilyDescription& family) {
  return kvs::first_use_calibration(spec.trimmed().toStdString(), family);
}

int64_t calibrationImages(const QString& spec, const kvs::FamilyDescription::FirstUseCalibration& calibration) {
  return kvs::calibration_images(spec.trimmed().toStdString(), calibration);
}

bool samplesContinuousTokens(const kvs::FamilyDescription& family) { return !family.discrete_tokens; }

int64_t ScaleLayout::height(int64_t scale) const {
  return scale < 0 || scale >= scales() ? 0 : sides[static_cast<size_t>(scale)];
}

int64_t ScaleLayout::width(int64_t scale) const {
  if (scale < 0 || scale >= scales()) return 0;
  return widths.size() == sides.size() ? widths[static_cast<size_t>(scale)] : sides[static_cast<size_t>(scale)];
}

int64_t ScaleLayout::tokens(int64_t scale) const { return height(scale) * width(scale); }

int64_t ScaleLayout::begin(int64_t scale) const {
  int64_t b = 0;
  for (int64_t s = 0; s < std::min(scale, scales()); ++s) b += tokens(s);
  return b;
}

int64_t ScaleLayout::total() const { return begin(scales()); }

int64_t ScaleLayout::scaleOf(int64_t position) const {
  if (position < 0) return -1;
  int64_t b = 0;
  for (int64_t s = 0; s < scales(); ++s) {
    b += tokens(s);
    if (position < b) return s;
  }
  return -1;
}

}  // namespace kvs::ui
