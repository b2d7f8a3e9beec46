#include "ui/viewmodel/model_family.h"

#include <QCoreApplication>

#include <algorithm>

#include "engine/cache/policies/policy_catalog.h"

namespace kvs::ui {

ModelFamily familyOfModel(const std::string& family) {
  if (family == "var") return ModelFamily::Scale;
  if (family == "mar") return ModelFamily::Masked;
  return ModelFamily::Raster;
}

ModelFamily familyOfUnit(const std::string& unit_name) {
  if (unit_name == "scale") return ModelFamily::Scale;
  if (unit_name == "step") return ModelFamily::Masked;
  return ModelFamily::Raster;
}

std::string registryFamilyName(ModelFamily family) {
  switch (family) {
    case ModelFamily::Raster: return "raster";
    case ModelFamily::Scale: return "scale";
    case ModelFamily::Masked: return "masked";
  }
  return "raster";
}

QString unitNoun(ModelFamily family) {
  switch (family) {
    case ModelFamily::Raster: return QStringLiteral("line");
    case ModelFamily::Scale: return QStringLiteral("scale");
    case ModelFamily::Masked: return QStringLiteral("step");
  }
  return QStringLiteral("line");
}

QString familyDisplayName(ModelFamily family) {
  switch (family) {
    case ModelFamily::Raster: return QStringLiteral("raster (LlamaGen)");
    case ModelFamily::Scale: return QStringLiteral("next-scale (VAR)");
    case ModelFamily::Masked: return QStringLiteral("masked (MAR)");
  }
  return {};
}

bool policyApplies(const kvs::PolicyDescription& entry, ModelFamily family) {
  return std::find(entry.families.begin(), entry.families.end(), registryFamilyName(family)) != entry.families.end();
}

QStringList policiesForFamily(ModelFamily family) {
  QStringList out;
  for (const auto& e : kvs::policy_catalog())
    if (policyApplies(e, family)) out << QString::fromStdString(e.name);
  return out;
}

QString policyFamilyProblem(const QString& spec, ModelFamily family) {
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

QStringList comparePresets(ModelFamily family) {
  switch (family) {
    case ModelFamily::Raster:
      return {QString(), QStringLiteral("full"), QStringLiteral("linear:rho=0.25"), QStringLiteral("streaming:rho=0.25"),
              QStringLiteral("headkv:rho=0.25"), QStringLiteral("h2o:rho=0.25"), QStringLiteral("snapkv:rho=0.25"),
              QStringLiteral("rkv:rho=0.25"), QStringLiteral("random:rho=0.25"), QStringLiteral("linear:rho=0.125")};
    case ModelFamily::Scale:
      return {QString(), QStringLiteral("full"), QStringLiteral("heatkv:budget=0.1"), QStringLiteral("heatkv:budget=0.25"),
              QStringLiteral("amskv"), QStringLiteral("streaming:rho=0.25"), QStringLiteral("heatkv:budget=0.1,variant=binary")};
    case ModelFamily::Masked:
      return {QString(), QStringLiteral("full"), QStringLiteral("lazymar"), QStringLiteral("lazymar:interval=4"),
              QStringLiteral("lazymar:retention=constant,ratio=0.25"), QStringLiteral("lazymar:condition_cache=off")};
  }
  return {};
}

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
