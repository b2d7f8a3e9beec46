#include "ui/widgets/help_dialog.h"

#include <QDialogButtonBox>
#include <QLabel>
#include <QVBoxLayout>

namespace kvs::ui {

HelpDialog::HelpDialog(QWidget* parent) : QDialog(parent) {
  setWindowTitle(tr("KV Studio — help"));
  auto* layout = new QVBoxLayout(this);
  auto* text = new QLabel(this);
  text->setTextFormat(Qt::RichText);
  text->setWordWrap(true);
  text->setText(tr(
      "<h3>Keyboard shortcuts</h3>"
      "<table cellspacing='6'>"
      "<tr><td><b>Ctrl+Enter</b></td><td>Generate</td></tr>"
      "<tr><td><b>Esc</b></td><td>Cancel the running generation or comparison</td></tr>"
      "<tr><td><b>Ctrl+Shift+Enter</b></td><td>Run the comparison</td></tr>"
      "<tr><td><b>Ctrl+S</b></td><td>Save the selected (or latest) image as PNG with its parameters</td></tr>"
      "<tr><td><b>Ctrl+O</b></td><td>Open a KV Studio PNG and recall its parameters</td></tr>"
      "<tr><td><b>Ctrl+R</b></td><td>Recall the parameters of the selected history image</td></tr>"
      "<tr><td><b>Ctrl+M</b></td><td>Model manager</td></tr>"
      "<tr><td><b>Ctrl+1 / 2 / 3</b></td><td>Generate / Compare / History tab</td></tr>"
      "<tr><td><b>A, K, G, L</b></td><td>Toggle the attention, retained-token (kept), grid and regions (lines) "
      "overlays</td></tr>"
      "<tr><td><b>F12</b></td><td>Debug overlay (engine internals, Dear ImGui)</td></tr>"
      "<tr><td><b>F1</b></td><td>This help</td></tr>"
      "</table>"
      "<h3>Overlays</h3>"
      "<p><b>Attention</b>: where the last token of the latest line looked (inferno: dark = little, yellow = most), "
      "with the condition token(s) in the strip on the left — LlamaGen's class token is a permanent attention sink.<br>"
      "<b>Retained</b>: image tokens evicted from the KV cache are dimmed (for the chosen layer and head, or the share "
      "of all).<br>"
      "<b>Regions</b>: the current line, and the policy's regions — LineAR's anchors, mid region and recent lines; "
      "StreamingLLM's sinks and recent window.</p>"
      "<p>Changing the policy or its budget while a generation runs applies at the next line and is marked on the "
      "memory chart.</p>"));
  layout->addWidget(text);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  layout->addWidget(buttons);
  resize(560, 560);
}

}  // namespace kvs::ui
