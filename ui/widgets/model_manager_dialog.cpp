#include "ui/widgets/model_manager_dialog.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPointer>
#include <QProgressDialog>
#include <QPushButton>
#include <QTableWidget>
#include <QToolButton>
#include <QVBoxLayout>
#include <functional>
#include <map>
#include <vector>

#include "engine/models/family_registry.h"
#include "engine/session/model_family.h"
#include "ui/widgets/memory_panel.h"

namespace kvs::ui {
namespace {

QTableWidgetItem* item(const QString& text, const QString& tooltip = {}) {
  auto* i = new QTableWidgetItem(text);
  i->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable);
  if (!tooltip.isEmpty()) i->setToolTip(tooltip);
  return i;
}

// A path field with a browse button.
// A path with a browse button; `folder` (asked when browsing) picks a folder
// instead of a file.
QWidget* pathField(QWidget* parent, QLineEdit** edit, const QString& filter, std::function<bool()> folder = {}) {
  auto* w = new QWidget(parent);
  auto* h = new QHBoxLayout(w);
  h->setContentsMargins(0, 0, 0, 0);
  *edit = new QLineEdit(w);
  auto* browse = new QToolButton(w);
  browse->setText(QStringLiteral("…"));
  QLineEdit* e = *edit;
  QObject::connect(browse, &QToolButton::clicked, w, [w, e, filter, folder] {
    const QString f = folder && folder()
                          ? QFileDialog::getExistingDirectory(w, QObject::tr("Choose the downloaded model folder"))
                          : QFileDialog::getOpenFileName(w, QObject::tr("Choose a file"), QString(), filter);
    if (!f.isEmpty()) e->setText(f);
  });
  h->addWidget(*edit, 1);
  h->addWidget(browse);
  return w;
}

}  // namespace

ModelManagerDialog::ModelManagerDialog(ModelLocations* locations, QWidget* parent)
    : QDialog(parent), locations_(locations) {
  setWindowTitle(tr("Models"));
  auto* layout = new QVBoxLayout(this);
  table_ = new QTableWidget(0, 7, this);
  table_->setHorizontalHeaderLabels({tr("name"), tr("architecture"), tr("GPT parameters"), tr("weights"),
                                     tr("KV bytes / token"), tr("where"), tr("status")});
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setSectionResizeMode(1, QHeaderView::Stretch);
  table_->verticalHeader()->hide();
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  layout->addWidget(table_, 1);
  status_ = new QLabel(this);
  status_->setWordWrap(true);
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(status_);
  auto* buttons = new QHBoxLayout;
  auto* use = new QPushButton(tr("Use"), this);
  use->setDefault(true);
  auto* add = new QPushButton(tr("Add folder…"), this);
  add->setToolTip(tr("Also look for bundles in a folder (the folder itself or its subfolders)"));
  auto* remove = new QPushButton(tr("Remove folder"), this);
  remove->setToolTip(tr("Stop looking in the selected model's added folder"));
  auto* import = new QPushButton(tr("Import checkpoint…"), this);
  import->setToolTip(
      tr("Convert an official checkpoint into a bundle in your models folder: LlamaGen, VAR or MAR "
         "(checkpoint + tokenizer files), Janus-Pro or Lumina-mGPT (the downloaded Hugging Face folder), "
         "Infinity (the transformer, its BSQ-VAE and the flan-t5-xl folder)"));
  auto* refreshButton = new QPushButton(tr("Refresh"), this);
  auto* close = new QPushButton(tr("Close"), this);
  buttons->addWidget(use);
  buttons->addWidget(add);
  buttons->addWidget(remove);
  buttons->addWidget(import);
  buttons->addStretch(1);
  buttons->addWidget(refreshButton);
  buttons->addWidget(close);
  layout->addLayout(buttons);
  connect(use, &QPushButton::clicked, this, &ModelManagerDialog::useSelected);
  connect(table_, &QTableWidget::cellDoubleClicked, this, &ModelManagerDialog::useSelected);
  connect(add, &QPushButton::clicked, this, &ModelManagerDialog::addFolder);
  connect(remove, &QPushButton::clicked, this, &ModelManagerDialog::removeFolder);
  connect(import, &QPushButton::clicked, this, &ModelManagerDialog::importCheckpoint);
  connect(refreshButton, &QPushButton::clicked, this, &ModelManagerDialog::refresh);
  connect(close, &QPushButton::clicked, this, &QDialog::hide);
  resize(980, 420);
  refresh();
}

ModelManagerDialog::~ModelManagerDialog() {
  // The converter has no cancellation: an import in flight finishes first.
  if (import_thread_.joinable()) import_thread_.join();
}

void ModelManagerDialog::refresh() {
  models_ = kvs::find_model_bundles(locations_->folders());
  table_->setRowCount(static_cast<int>(models_.size()));
  for (int r = 0; r < static_cast<int>(models_.size()); ++r) {
    const kvs::ModelSummary& m = models_[static_cast<size_t>(r)];
    const QString dir = QString::fromStdString(m.dir);
    table_->setItem(r, 0, item(QString::fromStdString(m.name), dir));
    table_->setItem(r, 1, item(QString::fromStdString(m.architecture), QString::fromStdString(m.note)));
    table_->setItem(r, 2, item(m.usable() ? QStringLiteral("%1 M").arg(m.gpt_parameters / 1e6, 0, 'f', 1) : QString()));
    table_->setItem(r, 3, item(m.weights_bytes > 0 ? formatBytes(m.weights_bytes) : QString()));
    table_->setItem(r, 4,
                    item(m.usable() ? QStringLiteral("%1 (f32)").arg(formatBytes(m.kv_bytes_per_token)) : QString(),
                         m.usable()
                             ? tr("Full cache of one image: %1 per sequence (x2 with CFG)")
                                   .arg(formatBytes(m.kv_bytes_per_token * (m.grid * m.grid + m.condition_tokens)))
                             : QString()));
    table_->setItem(r, 5, item(locations_->originOf(dir), dir));
    auto* status = item(m.usable() ? (m.note.empty() ? tr("ok") : QString::fromStdString(m.note))
                                   : QString::fromStdString(m.problem),
                        QString::fromStdString(m.usable() ? m.note : m.problem));
    status->setForeground(m.usable() ? QColor(120, 200, 140) : QColor(248, 81, 73));
    table_->setItem(r, 6, status);
  }
  QStringList folders;
  for (const auto& f : locations_->folders()) folders << QString::fromStdString(f);
  status_->setText(tr("Looking in: %1").arg(folders.join(QStringLiteral(" · "))));
}

void ModelManagerDialog::useSelected() {
  const int row = table_->currentRow();
  if (row < 0 || row >= static_cast<int>(models_.size())) return;
  const kvs::ModelSummary& m = models_[static_cast<size_t>(row)];
  if (!m.usable()) {
    Q_EMIT error(
        tr("Model %1 cannot be used: %2").arg(QString::fromStdString(m.name), QString::fromStdString(m.problem)));
    return;
  }
  Q_EMIT modelChosen(QString::fromStdString(m.dir));
  hide();
}

void ModelManagerDialog::addFolder() {
  const QString dir = QFileDialog::getExistingDirectory(this, tr("Folder with model bundles"));
  if (dir.isEmpty() || locations_->extraFolders.contains(dir)) return;
  locations_->extraFolders << dir;
  Q_EMIT locationsChanged();
  refresh();
}

void ModelManagerDialog::removeFolder() {
  const int row = table_->currentRow();
  if (row < 0 || row >= static_cast<int>(models_.size())) return;
  const QString dir = QString::fromStdString(models_[static_cast<size_t>(row)].dir);
  for (const QString& f : locations_->extraFolders)
    if (dir == f || dir.startsWith(QDir(f).absolutePath() + QLatin1Char('/')) ||
        QFileInfo(dir).canonicalFilePath().startsWith(QFileInfo(f).canonicalFilePath())) {
      locations_->extraFolders.removeAll(f);
      Q_EMIT locationsChanged();
      refresh();
      return;
    }
  status_->setText(tr("%1 is not in an added folder (the demo and your models folder are always searched)").arg(dir));
}

void ModelManagerDialog::importCheckpoint() {
  if (importing_) return;
  QDialog form(this);
  form.setWindowTitle(tr("Import an official checkpoint"));
  auto* fl = new QFormLayout(&form);
  // Every family converts through the one contract (ModelFamily::convert); the
  // form asks for what the family reads: a folder, or a checkpoint + tokenizer.
  auto* family = new QComboBox(&form);
  for (const kvs::ModelFamily* f : kvs::model_families())
    family->addItem(QString::fromStdString(f->description().display_name), QString::fromStdString(f->name()));
  fl->addRow(tr("Family"), family);
  auto description = [family]() -> const kvs::FamilyDescription& {
    return kvs::find_model_family(family->currentData().toString().toStdString()).description();
  };
  QLineEdit *checkpoint = nullptr, *tokenizer = nullptr;
  auto* checkpointLabel = new QLabel(&form);
  fl->addRow(checkpointLabel, pathField(&form, &checkpoint, tr("PyTorch checkpoints (*.pt *.pth *.ckpt)"),
                                        [description] { return description().converts_from_folder; }));
  auto* tokenizerLabel = new QLabel(tr("Tokenizer"), &form);
  QWidget* tokenizerField = pathField(&form, &tokenizer, tr("PyTorch checkpoints (*.pt *.pth *.ckpt)"));
  fl->addRow(tokenizerLabel, tokenizerField);
  // A family converting from several parts (FamilyDescription::convert_inputs)
  // gets one field per part instead of the two above.
  struct PartField {
    std::string family, option;
    QLabel* label;
    QWidget* field;
    QLineEdit* edit;
  };
  std::vector<PartField> parts;
  for (const kvs::ModelFamily* f : kvs::model_families())
    for (const auto& input : f->description().convert_inputs) {
      PartField part{f->name(), input.option, new QLabel(QString::fromStdString(input.label), &form), nullptr, nullptr};
      const bool folder = input.folder;
      part.field = pathField(&form, &part.edit, tr("PyTorch checkpoints (*.pt *.pth *.ckpt *.safetensors)"),
                             [folder] { return folder; });
      part.edit->setPlaceholderText(QString::fromStdString(input.placeholder));
      part.edit->setObjectName(QString::fromStdString("import-" + f->name() + input.option));  // "import-infinity--vae"
      fl->addRow(part.label, part.field);
      parts.push_back(part);
    }
  auto* usage = new QLabel(&form);
  usage->setWordWrap(true);
  usage->setStyleSheet(QStringLiteral("color: gray"));
  fl->addRow(usage);
  auto updateFields = [=] {
    const kvs::FamilyDescription& d = description();
    const bool byParts = !d.convert_inputs.empty();
    checkpointLabel->setText(d.converts_from_folder ? tr("Model folder") : tr("Checkpoint"));
    checkpoint->setPlaceholderText(d.converts_from_folder
                                       ? tr("the downloaded folder (config.json, weights, tokenizer)")
                                       : tr("the official checkpoint file"));
    checkpointLabel->setVisible(!byParts);
    checkpoint->parentWidget()->setVisible(!byParts);
    tokenizerLabel->setVisible(!d.converts_from_folder && !byParts);
    tokenizerField->setVisible(!d.converts_from_folder && !byParts);
    for (const PartField& part : parts) {
      part.label->setVisible(part.family == d.name);
      part.field->setVisible(part.family == d.name);
    }
    usage->setText(QString::fromStdString("convert --family " + d.name + " " + d.convert_usage));
  };
  connect(family, &QComboBox::currentIndexChanged, &form, updateFields);
  updateFields();
  auto* name = new QLineEdit(&form);
  name->setPlaceholderText(tr("default: the checkpoint's name"));
  fl->addRow(tr("Name"), name);
  auto* dtype = new QComboBox(&form);
  dtype->addItems({QStringLiteral("keep"), QStringLiteral("f16"), QStringLiteral("bf16"), QStringLiteral("f32")});
  dtype->setToolTip(tr("Weights precision in the bundle (keep: as in the checkpoint)"));
  fl->addRow(tr("Weights"), dtype);
  auto* box = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &form);
  connect(box, &QDialogButtonBox::accepted, &form, &QDialog::accept);
  connect(box, &QDialogButtonBox::rejected, &form, &QDialog::reject);
  fl->addRow(box);
  form.resize(680, 0);
  if (form.exec() != QDialog::Accepted) return;

  const std::string familyName = family->currentData().toString().toStdString();
  const bool fromFolder = description().converts_from_folder;
  std::map<std::string, std::string> options;
  if (description().convert_inputs.empty()) {
    options["--checkpoint"] = checkpoint->text().toStdString();
    if (!fromFolder) options["--tokenizer"] = tokenizer->text().toStdString();
  } else {
    for (const PartField& part : parts)
      if (part.family == familyName) {
        options[part.option] = part.edit->text().toStdString();
        if (part.option == "--checkpoint") checkpoint->setText(part.edit->text());  // names the bundle
      }
  }
  const QString stem = name->text().trimmed().isEmpty()
                           ? (fromFolder ? QFileInfo(checkpoint->text()).fileName()
                                         : QFileInfo(checkpoint->text()).completeBaseName())
                           : name->text().trimmed();
  if (!name->text().trimmed().isEmpty()) options["--name"] = name->text().trimmed().toStdString();
  options["--dtype"] = dtype->currentText().toStdString();
  QDir().mkpath(locations_->userModels);
  const QString out = QDir(locations_->userModels).filePath(stem.isEmpty() ? QStringLiteral("imported") : stem);
  options["--out"] = out.toStdString();
  startImport(familyName, options, QFileInfo(checkpoint->text()).fileName(), out);
}

void ModelManagerDialog::startImport(const std::string& familyName, const std::map<std::string, std::string>& options,
                                     const QString& what, const QString& out) {
  progress_ = new QProgressDialog(tr("Converting %1…").arg(what), QString(), 0, 100, this);
  progress_->setWindowTitle(tr("Importing"));
  progress_->setCancelButton(nullptr);  // the converter cannot be interrupted safely
  progress_->setMinimumDuration(0);
  progress_->setAutoClose(false);
  progress_->setValue(0);
  progress_->show();
  if (import_thread_.joinable()) import_thread_.join();
  importing_ = true;
  import_thread_ = std::thread([this, familyName, options, out] {
    QString error;
    try {
      kvs::find_model_family(familyName)
          .convert(kvs::FamilyOptions(options), [this](double f, const std::string& stage) {
            const QString s = QString::fromStdString(stage);
            QMetaObject::invokeMethod(
                this,
                [this, f, s] {
                  if (progress_) {
                    progress_->setValue(static_cast<int>(f * 100));
                    progress_->setLabelText(s);
                  }
                },
                Qt::QueuedConnection);
          });
    } catch (const std::exception& e) {
      error = QString::fromStdString(e.what());
    }
    QMetaObject::invokeMethod(
        this, [this, out, error] { onImportDone(out, error); }, Qt::QueuedConnection);
  });
}

void ModelManagerDialog::onImportDone(const QString& outDir, const QString& problem) {
  importing_ = false;
  if (progress_) {
    progress_->close();
    progress_->deleteLater();
    progress_ = nullptr;
  }
  if (!problem.isEmpty()) {
    status_->setText(QStringLiteral("<span style='color:#f85149'>%1</span>")
                         .arg(tr("Import failed: %1").arg(problem).toHtmlEscaped()));
    Q_EMIT error(tr("Import failed: %1").arg(problem));
    return;
  }
  status_->setText(tr("Imported into %1").arg(outDir));
  refresh();
}

}  // namespace kvs::ui
