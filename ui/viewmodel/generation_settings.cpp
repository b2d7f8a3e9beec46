#include "ui/viewmodel/generation_settings.h"

#include <QSettings>

#include <algorithm>

namespace kvs::ui {

kvs::GenerationRequest GenerationSettings::toRequest() const {
  kvs::GenerationRequest r;
  r.model_path = modelDir.toStdString();
  if (text) {
    r.prompt = prompt.toStdString();
    r.negative_prompt = negativePromptEnabled ? negativePrompt.toStdString() : std::string();
    r.images = std::max(1, batch);
    r.image_size = imageSize.toStdString();
  } else {
    r.class_ids.assign(static_cast<size_t>(std::max(1, batch)), classId);
  }
  if (!finishFrom.isEmpty()) {
    r.from_image = finishFrom.toStdString();
    r.keep_rows = keepRows;
  }
  r.seed = seed;
  r.cfg_scale = cfgScale;
  r.sampling.temperature = temperature;
  r.sampling.top_k = topK;
  r.sampling.top_p = topP;
  r.device = device.toStdString();
  r.dtype = dtype.toStdString();
  r.steps = steps;
  r.cfg_schedule = cfgSchedule.toStdString();
  r.threads = threads;
  r.policy = kvs::parse_policy_spec(policy.toStdString());  // the policy form is where the spec comes in
  r.preview_every_units = 1;
  r.preview_max_share = kPreviewMaxShare;
  r.emit_retained_masks = true;
  r.emit_attention_map = true;
  r.attention_layer = attentionLayer;
  r.attention_head = attentionHead;
  return r;
}

GenerationSettings GenerationSettings::fromRequest(const kvs::GenerationRequest& r) {
  GenerationSettings s;
  s.modelDir = QString::fromStdString(r.model_path);
  s.text = r.is_text();
  s.classId = r.class_ids.empty() ? 0 : r.class_ids.front();
  s.prompt = QString::fromStdString(r.prompt);
  s.negativePrompt = QString::fromStdString(r.negative_prompt);
  s.negativePromptEnabled = !r.negative_prompt.empty();
  s.imageSize = QString::fromStdString(r.image_size);
  s.finishFrom = QString::fromStdString(r.from_image);
  s.keepRows = r.keep_rows;
  s.batch = 1;
  s.seed = r.seed;
  s.seedMode = SeedMode::Fixed;
  s.cfgScale = r.cfg_scale;
  s.temperature = r.sampling.temperature;
  s.topK = r.sampling.top_k;
  s.topP = r.sampling.top_p;
  s.device = QString::fromStdString(r.device);
  s.dtype = QString::fromStdString(r.dtype);
  s.steps = r.steps;
  s.cfgSchedule = QString::fromStdString(r.cfg_schedule);
  s.threads = r.threads;
  s.policy = QString::fromStdString(r.policy.text());
  s.attentionLayer = r.attention_layer;
  s.attentionHead = r.attention_head;
  return s;
}

void GenerationSettings::rememberPrompt(const QString& p) {
  const QString trimmed = p.trimmed();
  if (trimmed.isEmpty()) return;
  promptHistory.removeAll(trimmed);
  promptHistory.prepend(trimmed);
  while (promptHistory.size() > kMaxPromptHistory) promptHistory.removeLast();
}

void GenerationSettings::save(QSettings& q) const {
  q.beginGroup(QStringLiteral("generation"));
  q.setValue("model", modelDir);
  q.setValue("class", static_cast<qlonglong>(classId));
  q.setValue("seed", static_cast<qulonglong>(seed));
  q.setValue("seedMode", seedMode == SeedMode::RandomEachRun ? "random" : "fixed");
  q.setValue("cfg", cfgScale);
  q.setValue("temperature", temperature);
  q.setValue("topK", static_cast<qlonglong>(topK));
  q.setValue("topP", topP);
  q.setValue("batch", batch);
  q.setValue("steps", static_cast<qlonglong>(steps));
  q.setValue("device", device);
  q.setValue("dtype", dtype);
  q.setValue("prompt", prompt);
  q.setValue("negativePrompt", negativePrompt);
  q.setValue("negativePromptEnabled", negativePromptEnabled);
  q.setValue("imageSize", imageSize);
  q.setValue("promptHistory", promptHistory);
  q.setValue("threads", threads);
  q.setValue("policy", policy);
  q.setValue("attentionLayer", static_cast<qlonglong>(attentionLayer));
  q.setValue("attentionHead", static_cast<qlonglong>(attentionHead));
  q.endGroup();
}

GenerationSettings GenerationSettings::load(QSettings& q, const GenerationSettings& d) {
  GenerationSettings s;
  q.beginGroup(QStringLiteral("generation"));
  s.modelDir = q.value("model", d.modelDir).toString();
  s.classId = q.value("class", static_cast<qlonglong>(d.classId)).toLongLong();
  s.seed = q.value("seed", static_cast<qulonglong>(d.seed)).toULongLong();
  s.seedMode = q.value("seedMode", "fixed").toString() == "random" ? SeedMode::RandomEachRun : SeedMode::Fixed;
  s.cfgScale = q.value("cfg", d.cfgScale).toDouble();
  s.temperature = q.value("temperature", d.temperature).toDouble();
  s.topK = q.value("topK", static_cast<qlonglong>(d.topK)).toLongLong();
  s.topP = q.value("topP", d.topP).toDouble();
  s.batch = q.value("batch", d.batch).toInt();
  s.steps = q.value("steps", static_cast<qlonglong>(d.steps)).toLongLong();
  s.device = q.value("device", d.device).toString();
  s.dtype = q.value("dtype", d.dtype).toString();
  s.text = d.text;  // the open model decides, not the settings file
  s.prompt = q.value("prompt", d.prompt).toString();
  s.negativePrompt = q.value("negativePrompt", d.negativePrompt).toString();
  s.negativePromptEnabled = q.value("negativePromptEnabled", d.negativePromptEnabled).toBool();
  s.imageSize = q.value("imageSize", d.imageSize).toString();
  s.promptHistory = q.value("promptHistory", d.promptHistory).toStringList();
  s.threads = q.value("threads", d.threads).toInt();
  s.policy = q.value("policy", d.policy).toString();
  s.attentionLayer = q.value("attentionLayer", static_cast<qlonglong>(d.attentionLayer)).toLongLong();
  s.attentionHead = q.value("attentionHead", static_cast<qlonglong>(d.attentionHead)).toLongLong();
  q.endGroup();
  return s;
}

}  // namespace kvs::ui
