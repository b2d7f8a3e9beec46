#include "ui/widgets/policy_form.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>
#include <QSpinBox>

#include <cmath>

#include "engine/cache/policies/policy_catalog.h"
#include "engine/core/number_parsing.h"

namespace kvs::ui {
namespace {

bool isBudgetParam(const std::string& name) { return name == "rho" || name == "budget"; }

QString numberText(double v) { return QString::number(v, 'g', 6); }

}  // namespace

PolicyForm::PolicyForm(QWidget* parent) : QWidget(parent), form_(new QFormLayout(this)) {
  form_->setContentsMargins(0, 0, 0, 0);
  form_->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
}

void PolicyForm::setPolicy(const QString& name) {
  if (name == name_ && !fields_.empty()) return;
  name_ = name;
  while (form_->rowCount() > 0) form_->removeRow(0);
  fields_.clear();
  const kvs::PolicyDescription* entry = kvs::find_policy_entry(name.toStdString());
  if (!entry) return;
  for (const kvs::PolicyParamSpec& p : entry->params) {
    if (isBudgetParam(p.name)) continue;
    Field f;
    f.name = p.name;
    f.default_value = p.default_value;
    f.kind = static_cast<int>(p.kind);
    const QString help = QString::fromStdString(p.help);
    if (p.kind == kvs::PolicyParamKind::Choice) {
      auto* combo = new QComboBox(this);
      for (const auto& c : p.choices) combo->addItem(QString::fromStdString(c));
      combo->setCurrentText(QString::fromStdString(p.default_value));
      connect(combo, &QComboBox::currentTextChanged, this, &PolicyForm::changed);
      f.editor = combo;
    } else if (p.kind == kvs::PolicyParamKind::Integer) {
      auto* spin = new QSpinBox(this);
      spin->setRange(static_cast<int>(p.minimum), static_cast<int>(std::min(p.maximum, 1e9)));
      spin->setValue(static_cast<int>(kvs::parse_number_text(p.default_value).value_or(0)));
      connect(spin, &QSpinBox::valueChanged, this, &PolicyForm::changed);
      f.editor = spin;
    } else {
      auto* spin = new QDoubleSpinBox(this);
      spin->setDecimals(4);
      spin->setRange(p.minimum, p.maximum);
      spin->setSingleStep(p.maximum <= 1 ? 0.05 : 1.0);
      spin->setValue(kvs::parse_number_text(p.default_value).value_or(0));
      connect(spin, &QDoubleSpinBox::valueChanged, this, &PolicyForm::changed);
      f.editor = spin;
    }
    f.editor->setToolTip(help);
    f.editor->setObjectName(QStringLiteral("param_") + QString::fromStdString(p.name));
    auto* label = new QLabel(QString::fromStdString(p.name), this);
    label->setToolTip(help);
    form_->addRow(label, f.editor);
    fields_.push_back(f);
  }
}

std::string PolicyForm::valueOf(const Field& f) const {
  if (auto* combo = qobject_cast<QComboBox*>(f.editor)) return combo->currentText().toStdString();
  if (auto* spin = qobject_cast<QSpinBox*>(f.editor)) return std::to_string(spin->value());
  if (auto* spin = qobject_cast<QDoubleSpinBox*>(f.editor)) return numberText(spin->value()).toStdString();
  return {};
}

void PolicyForm::setValue(Field& f, const std::string& value) {
  const QSignalBlocker block(f.editor);
  if (auto* combo = qobject_cast<QComboBox*>(f.editor)) combo->setCurrentText(QString::fromStdString(value));
  else if (auto* spin = qobject_cast<QSpinBox*>(f.editor))
    spin->setValue(static_cast<int>(kvs::parse_number_text(value).value_or(0)));
  else if (auto* spin = qobject_cast<QDoubleSpinBox*>(f.editor))
    spin->setValue(kvs::parse_number_text(value).value_or(0));
}

std::map<std::string, std::string> PolicyForm::changedValues() const {
  std::map<std::string, std::string> out;
  for (const Field& f : fields_) {
    const std::string v = valueOf(f);
    const auto def = kvs::parse_number_text(f.default_value), now = kvs::parse_number_text(v);
    const bool same = (def && now) ? std::abs(*def - *now) < 1e-9 : v == f.default_value;
    if (!same) out[f.name] = v;
  }
  return out;
}

void PolicyForm::setValues(const std::map<std::string, std::string>& values) {
  for (Field& f : fields_) {
    auto it = values.find(f.name);
    setValue(f, it != values.end() ? it->second : f.default_value);
  }
  Q_EMIT changed();
}

}  // namespace kvs::ui
