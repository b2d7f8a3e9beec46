#include "ui/viewmodel/model_family.h"

#include <QCoreApplication>

#include <algorithm>

#include "engine/cache/policies/policy_catalog.h"
#include "engine/core/number_parsing.h"
#include "engine/models/family_registry.h"

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
  return !family.policy_family.empty() &&
         std::find(entry.families.begin(), entry.families.end(), family.policy_family) != entry.families.end();
}

QStringList policiesForFamily(const kvs::FamilyDescription& family) {
  QStringList out;
  for (const auto& e : kvs::policy_catalog())
    if (policyApplies(e, family)) out << QString::fromStdString(e.name);
  return out;
}

QString policyFamilyProblem(const QString& spec, const kvs::FamilyDescription& family) {
  kvs::PolicySpecParts parts;
  try {
    parts = kvs::split_policy_spec(spec.trimmed().toStdString());
  } catch (const std::exception&) {
    return {};  // malformed: policy_spec_problem() says how
  }
  const kvs::PolicyDescription* entry = kvs::find_policy_entry(parts.name);
  if (!entry || policyApplies(*entry, family)) return {};
  QStringList servedBy;
  for (const std::string& f : entry->families) servedBy << QString::fromStdString(f);
  return QCoreApplication::translate("kvs::ui", "Policy '%1' works on %2 models only; this %3 model takes: %4")
      .arg(QString::fromStdString(parts.name), servedBy.join(QStringLiteral(" / ")), familyDisplayName(family),
           policiesForFamily(family).join(QStringLiteral(", ")));
}

QStringList comparePresets(const kvs::FamilyDescription& family) {
  QStringList out;
  for (const std::string& spec : family.compare_presets) out << QString::fromStdString(spec);
  return out;
}

const kvs::FamilyDescription::FirstUseCalibration* firstUseCalibration(const QString& spec,
                                                                       const kvs::FamilyDescription& family) {
  std::string name;
  try {
    name = kvs::split_policy_spec(spec.trimmed().toStdString()).name;
  } catch (const std::exception&) {
    return nullptr;
  }
  for (const auto& c : family.calibrated_on_first_use)
    if (c.policy == name) return &c;
  return nullptr;
}

int64_t calibrationImages(const QString& spec, const kvs::FamilyDescription::FirstUseCalibration& calibration) {
  if (calibration.images_param.empty()) return 0;
  try {
    const auto params = kvs::split_policy_spec(spec.trimmed().toStdString()).params;
    const auto it = params.find(calibration.images_param);
    if (it == params.end()) return 0;
    const auto n = kvs::parse_number_text(it->second);
    return n && *n > 0 ? static_cast<int64_t>(*n) : 0;  // the run refuses an impossible value itself
  } catch (const std::exception&) {
    return 0;
  }
}

bool samplesContinuousTokens(const kvs::FamilyDescription& family) { return !family.discrete_tokens; }

int64_t ScaleLayout::tokens(int64_t scale) const {
  if (scale < 0 || scale >= scales()) return 0;
  return sides[static_cast<size_t>(scale)] * sides[static_cast<size_t>(scale)];
}

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
