#pragma once
// The compare tab: 2-4 policy configurations run on the same class and seed
// (the full cache added as the reference), one pane each streaming its image with
// a KV gauge, a difference heatmap against the full-cache pane, a table of KV
// bytes, tokens/s, token agreement, PSNR and SSIM, and a split/flip view.
#include <QWidget>

#include "engine/session/generation_request.h"
#include "ui/viewmodel/model_family.h"

class QCheckBox;
class QComboBox;
class QGridLayout;
class QLabel;
class QPushButton;
class QStackedLayout;
class QTableWidget;

namespace kvs::ui {

class CompareViewModel;
class GenerationCanvas;
class ImageView;
class MemoryGauge;
class SplitView;

class CompareView : public QWidget {
  Q_OBJECT

 public:
  CompareView(CompareViewModel* model, QWidget* parent = nullptr);

  QStringList configs() const;
  void setConfigs(const QStringList& specs);
  // Offers the family's compare presets and labels the table for what it
  // measures (KV bytes, or FLOPs for a family without a KV cache).
  void setFamily(const kvs::FamilyDescription& family);
  const kvs::FamilyDescription& family() const { return *family_; }
  QTableWidget* table() const { return table_; }

 Q_SIGNALS:
  void runRequested(const QStringList& specs);
  void cancelRequested();

 private:
  void rebuildPanes();
  void refreshTable();
  void refreshDifferences();
  void refreshSplit();

  CompareViewModel* model_;
  const kvs::FamilyDescription* family_ = &familyDescription("");
  bool showsFlops() const { return !family_->measures_kv_bytes && family_->measures_flops; }
  QVector<QComboBox*> config_edits_;
  QPushButton* run_;
  QPushButton* cancel_;
  QCheckBox* show_difference_;
  QGridLayout* panes_layout_;
  QWidget* panes_host_;
  struct Pane {
    QWidget* frame = nullptr;
    QLabel* title = nullptr;
    GenerationCanvas* canvas = nullptr;
    ImageView* difference = nullptr;
    QStackedLayout* stack = nullptr;
    MemoryGauge* gauge = nullptr;
    QLabel* stats = nullptr;
  };
  QVector<Pane> panes_;
  QTableWidget* table_;
  SplitView* split_;
  QComboBox* split_a_;
  QComboBox* split_b_;
  QLabel* status_;
};

}  // namespace kvs::ui
