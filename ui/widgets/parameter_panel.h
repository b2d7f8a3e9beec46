#pragma once
// Everything a person sets before pressing Generate: class (searchable by name)
// or, for a text model, the prompt (multi-line, with a history of recent
// prompts and an optional negative prompt), seed (fixed, new random, reuse last, or random each run), CFG, temperature,
// top-k/top-p, batch (a text model's image count), precision, KV-cache policy with its generated parameter form and the
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
class QFormLayout;
class QGroupBox;
class QLineEdit;
class QPlainTextEdit;
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

  // The model whose classes, defaults and grid the panel offers; its family's
  // description (looked up by name, or given: a family the registry does not
  // list yet) says whether it takes a class or a prompt.
  void setModel(const kvs::ModelSummary& model);
  void setModel(const kvs::ModelSummary& model, const kvs::FamilyDescription& family);
  const kvs::ModelSummary& model() const { return model_; }
  const kvs::FamilyDescription& family() const { return family_; }
  bool takesPrompt() const { return family_.conditioning == kvs::Conditioning::Text; }
  // Puts `prompt` first in the recent prompts (what a generation was made with).
  void rememberPrompt(const QString& prompt);
  QStringList promptHistory() const { return prompt_history_; }
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

 protected:
  // Ctrl+Enter / Ctrl+Return in the prompt boxes generates instead of adding a
  // line; Ctrl+Up / Ctrl+Down in the prompt box step through the recent prompts.
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void applyConditioning();
  void applyFinishing();
  void refillPromptHistory();
  void onPolicyChosen();
  void onBudgetModeChanged();
  void refillPolicies();
  void showBudgetRowFor(const kvs::PolicyDescription* entry);
  void applyFamilyToSampling();
  void updateBudgetLabel();
  void emitSpec();

  kvs::ModelSummary model_;
  kvs::FamilyDescription family_;
  quint64 last_seed_ = 0;
  QStringList prompt_history_;
  int history_cursor_ = -1;  // the recent prompt shown by Ctrl+Up, -1: the draft
  QString draft_;            // what was in the box before Ctrl+Up
  QLabel* model_label_;
  QFormLayout* image_form_;
  QComboBox* class_combo_;
  QWidget* prompt_box_;
  QPlainTextEdit* prompt_edit_;
  QComboBox* prompt_history_combo_;
  QGroupBox* negative_box_;
  QPlainTextEdit* negative_edit_;
  QLabel* batch_label_;
  QComboBox* dtype_;
  QLineEdit* seed_edit_;
  QCheckBox* seed_random_each_;
  QDoubleSpinBox* cfg_;
  QDoubleSpinBox* temperature_;
  QSpinBox* top_k_;
  QDoubleSpinBox* top_p_;
  QSpinBox* batch_;
  QSpinBox* steps_;
  QLabel* steps_label_;
  QComboBox* size_combo_;  // models that write several sizes (ModelSummary::image_sizes)
  // Raster models with an encoder (ModelSummary::finishes_pictures): a picture
  // whose top rows are given, the model drawing the rest.
  QGroupBox* finish_box_;
  QLineEdit* finish_path_;
  QSpinBox* keep_rows_;
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
