#pragma once
// Everything a person sets before pressing Generate: class (searchable by name),
// seed (fixed, new random, reuse last, or random each run), CFG, temperature,
// top-k/top-p, batch, KV-cache policy with its generated parameter form and the
// budget slider (rho or tokens; HeatKV: the kept share of the cache). Follows the
// model's family description: only the registry's policies for its policy family
// are offered, the decoding steps appear where the family takes them (its request
// options) and top-k/top-p go where its tokens are continuous. Emits the
// resulting policy spec as it changes, so a running generation can switch at its
// next unit.
#include <QWidget>

#include "engine/models/model_catalog.h"
#include "ui/viewmodel/generation_settings.h"
#include "ui/viewmodel/model_family.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSlider;
class QSpinBox;

namespace kvs {
struct PolicyDescription;
}

namespace kvs::ui {

class PolicyForm;

class ParameterPanel : public QWidget {
  Q_OBJECT

 public:
  explicit ParameterPanel(QWidget* parent = nullptr);

  // The model whose classes, defaults and grid the panel offers.
  void setModel(const kvs::ModelSummary& model);
  const kvs::ModelSummary& model() const { return model_; }
  const kvs::FamilyDescription& family() const { return familyDescription(model_.family); }
  QStringList offeredPolicies() const;  // the policy combo's names, in order

  GenerationSettings settings() const;
  void setSettings(const GenerationSettings& settings);  // recall: everything but the model
  QString policySpec() const;
  void setPolicySpec(const QString& spec);
  SeedMode seedMode() const;
  void rollSeed();                 // a new random seed in the seed field
  void setLastSeed(quint64 seed);  // what "Reuse" puts back
  void setRunning(bool running);

 Q_SIGNALS:
  void generateRequested();
  void cancelRequested();
  void policySpecChanged(const QString& spec);
  void modelsRequested();

 private:
  void onPolicyChosen();
  void onBudgetModeChanged();
  void refillPolicies();
  void showBudgetRowFor(const kvs::PolicyDescription* entry);
  void applyFamilyToSampling();
  void updateBudgetLabel();
  void emitSpec();

  kvs::ModelSummary model_;
  quint64 last_seed_ = 0;
  QLabel* model_label_;
  QComboBox* class_combo_;
  QLineEdit* seed_edit_;
  QCheckBox* seed_random_each_;
  QDoubleSpinBox* cfg_;
  QDoubleSpinBox* temperature_;
  QSpinBox* top_k_;
  QDoubleSpinBox* top_p_;
  QSpinBox* batch_;
  QSpinBox* steps_;
  QLabel* steps_label_;
  QLabel* budget_caption_;
  QComboBox* device_;
  QComboBox* policy_combo_;
  QLabel* policy_summary_;
  QWidget* budget_row_;
  QComboBox* budget_mode_;
  QSlider* budget_slider_;
  QLabel* budget_label_;
  PolicyForm* form_;
  QLabel* spec_label_;
  QPushButton* generate_;
  QPushButton* cancel_;
  QString last_spec_;
};

}  // namespace kvs::ui
