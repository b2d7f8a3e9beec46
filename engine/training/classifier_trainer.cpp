#include "engine/training/classifier_trainer.h"

#include <nlohmann/json.hpp>

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <ATen/core/Reduction.h>

#include <filesystem>

#include "engine/core/logging.h"
#include "engine/training/world_data.h"

namespace kvs::training {

std::string classifier_file(const std::string& work_dir) {
  return (std::filesystem::path(work_dir) / "classifier" / "classifier.safetensors").string();
}

TrainSummary train_classifier(const TrainOptions& options, const ClassifierTrainSetup& setup) {
  ClassifierConfig cfg = setup.model;
  cfg.num_classes = world_class_count();
  cfg.validate();
  const int size = static_cast<int>(cfg.image_size);
  WorldImageSet train = load_world_split(options.work_dir, WorldSplit::Train, setup.train_per_class, size,
                                         options.render_threads);
  WorldImageSet held_out = load_world_split(options.work_dir, WorldSplit::HeldOut, setup.eval_per_class, size,
                                            options.render_threads);
  const at::Tensor train_labels = train.labels(), held_out_labels = held_out.labels();

  ParameterSet params = init_parameters(classifier_expected_tensors(cfg), options.seed, options.device);
  SceneClassifier model(cfg, params.as_map(), options.device);
  module_logger("train").info("classifier: " + std::to_string(params.numel()) + " parameters, " +
                              std::to_string(train.size()) + " training images");

  TrainingTask task;
  task.kind = "classifier";
  task.params = &params;
  task.config = {{"model", to_json(cfg)}, {"train_per_class", setup.train_per_class}, {"augment", setup.augment}};
  task.metric_names = {"accuracy"};
  task.step = [&](int64_t, at::Generator& gen) {
    const auto i64 = at::TensorOptions().dtype(at::kLong);
    at::Tensor idx = at::randint(train.size(), {options.batch}, gen, i64);
    at::Tensor flip, x;
    if (setup.augment) flip = at::randint(2, {options.batch}, gen, i64);
    x = train.batch(idx, options.device, flip);
    if (setup.augment) {
      // 0: as is, 1: 3x3 box blur, 2: Gaussian noise (sigma 0.04 of the [-1, 1] range).
      at::Tensor kind = at::randint(3, {options.batch, 1, 1, 1}, gen, i64).to(options.device);
      at::Tensor blurred = at::avg_pool2d(x, {3, 3}, {1, 1}, {1, 1}, false, false);
      at::Tensor noise = at::normal(0.0, 0.04, x.sizes(), gen).to(options.device);
      x = at::where(kind.eq(1), blurred, at::where(kind.eq(2), x + noise, x));
    }
    at::Tensor labels = train_labels.index_select(0, idx).to(options.device);
    SceneClassifier::Output out = model.forward(x);
    at::Tensor loss = at::cross_entropy_loss(out.logits, labels);
    return StepResult{loss, {accuracy(out.logits.detach(), labels)}};
  };
  task.eval_names = {"accuracy"};
  task.evaluate = [&]() {
    return std::vector<double>{accuracy(model.classify_u8(held_out.pixels()).logits, held_out_labels)};
  };
  task.on_checkpoint = [&](const std::string&) {
    save_classifier(classifier_file(options.work_dir), cfg, params.as_map(), at::kFloat);
  };
  return run_training(options, task);
}

}  // namespace kvs::training
