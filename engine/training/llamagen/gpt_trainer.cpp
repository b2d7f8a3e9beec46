#include "engine/training/llamagen/gpt_trainer.h"

#include <nlohmann/json.hpp>

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <c10/core/GradMode.h>

#include <filesystem>

#include "engine/core/errors.h"
#include "engine/core/logging.h"
#include "engine/models/llamagen/llamagen_gpt.h"
#include "engine/models/llamagen/llamagen_weights.h"
#include "engine/training/checkpoint.h"
#include "engine/training/llamagen/vq_model.h"
#include "engine/training/token_dataset.h"
#include "engine/training/world_data.h"

namespace kvs::training {

void fit_gpt_to_tokenizer(GptTrainSetup& setup) {
  const auto manifest = read_checkpoint_manifest(setup.vq_run_dir);
  if (!manifest)
    throw FileError("folder " + setup.vq_run_dir + ": no trained tokenizer here (run `kvstudio-train vq` first)");
  const VqModelConfig vq = vq_model_config_from_json(manifest->at("config").at("model"));
  const int64_t grid = manifest->at("config").at("image_size").get<int64_t>() / vq.arch.downsample();
  setup.model.vocab_size = vq.arch.codebook_size;
  setup.model.block_size = grid * grid;
}

ParameterSet init_gpt_parameters(const llamagen::GptConfig& config, uint64_t seed, at::Device device) {
  config.validate();
  return init_parameters(llamagen::gpt_expected_tensors(config), seed, device,
                         [](const std::string& name, const std::vector<int64_t>& shape, at::Generator& gen) {
                           if (name.find("norm") != std::string::npos) return at::Tensor();
                           if (name == "output.weight") return at::zeros(shape);
                           return at::normal(0.0, 0.02, shape, gen);
                         });
}

at::Tensor gpt_loss(const llamagen::LlamaGenGpt& gpt, const at::Tensor& labels, const at::Tensor& codes,
                    double* token_accuracy) {
  const int64_t vocab = gpt.config().vocab_size;
  at::Tensor targets = codes.to(gpt.device(), at::kLong);
  // Input: class token + all but the last image token; the logits at sequence
  // position cls_token_num - 1 + i predict image token i.
  at::Tensor logits = gpt.forward_teacher(labels.to(gpt.device()), targets.narrow(1, 0, targets.size(1) - 1),
                                          llamagen::LlamaGenGpt::TeacherAttention::Fused);
  logits = logits.narrow(1, gpt.config().cls_token_num - 1, targets.size(1)).reshape({-1, vocab});
  targets = targets.reshape({-1});
  if (token_accuracy) *token_accuracy = logits.detach().argmax(1).eq(targets).to(at::kDouble).mean().item<double>();
  return at::cross_entropy_loss(logits, targets);
}

TrainSummary train_gpt(const TrainOptions& options, const GptTrainSetup& setup) {
  const llamagen::GptConfig& cfg = setup.model;
  cfg.validate();
  nlohmann::json vq_manifest;
  auto vq_weights = load_checkpoint_weights(setup.vq_run_dir, &vq_manifest);
  const VqModelConfig vq_cfg = vq_model_config_from_json(vq_manifest.at("config").at("model"));
  const int image_size = vq_manifest.at("config").at("image_size").get<int>();
  if (vq_cfg.arch.codebook_size != cfg.vocab_size)
    throw InvalidArgumentError("GPT vocab_size " + std::to_string(cfg.vocab_size) + " differs from the tokenizer's " +
                               std::to_string(vq_cfg.arch.codebook_size) + " codes");
  const int64_t grid = image_size / vq_cfg.arch.downsample();
  if (grid * grid != cfg.block_size)
    throw InvalidArgumentError("GPT block_size " + std::to_string(cfg.block_size) + " does not fit the tokenizer's " +
                               std::to_string(grid) + "x" + std::to_string(grid) + " token grid");
  if (world_class_count() != cfg.num_classes)
    throw InvalidArgumentError("GPT num_classes " + std::to_string(cfg.num_classes) + " differs from the world's " +
                               std::to_string(world_class_count()) + " classes");

  TokenSet train, held_out;
  {
    VqModel vq(vq_cfg, vq_weights, options.device);
    const std::string tokenizer_id = std::filesystem::absolute(setup.vq_run_dir).string() + "/" +
                                     vq_manifest.value("weights", std::string());
    const std::string dir = run_dir(options, "gpt");
    const ImageTokenizer tokenizer{[&vq](const at::Tensor& input) { return vq.encode_codes(input); }, vq.device()};
    WorldImageSet images = load_world_split(options.work_dir, WorldSplit::Train, setup.train_per_class, image_size,
                                            options.render_threads);
    train = tokenize_images_cached(tokenizer, images,
                                   dir + "/tokens-train-" + std::to_string(setup.train_per_class) + ".safetensors",
                                   tokenizer_id);
    WorldImageSet eval_images = load_world_split(options.work_dir, WorldSplit::HeldOut, setup.eval_per_class,
                                                 image_size, options.render_threads);
    held_out = tokenize_images_cached(tokenizer, eval_images,
                                      dir + "/tokens-heldout-" + std::to_string(setup.eval_per_class) + ".safetensors",
                                      tokenizer_id);
  }

  ParameterSet params = init_gpt_parameters(cfg, options.seed, options.device);
  llamagen::LlamaGenGpt gpt(cfg, params.as_map(), options.device);
  module_logger("train").info("gpt: " + std::to_string(params.numel()) + " parameters, " +
                              std::to_string(train.size()) + " training sequences");

  TrainingTask task;
  task.kind = "gpt";
  task.params = &params;
  task.config = {{"model", llamagen::to_json(cfg)},
                 {"tokenizer", vq_manifest.value("weights", std::string())},
                 {"train_per_class", setup.train_per_class}};
  task.metric_names = {"token_accuracy"};
  task.step = [&](int64_t, at::Generator& gen) {
    const auto i64 = at::TensorOptions().dtype(at::kLong);
    at::Tensor idx = at::randint(train.size(), {options.batch}, gen, i64);
    at::Tensor labels = train.labels.index_select(0, idx);
    if (cfg.has_null_class()) {
      at::Tensor drop = at::rand({options.batch}, gen).lt(cfg.class_dropout_prob);
      labels = at::where(drop, at::full_like(labels, cfg.null_class()), labels);
    }
    double acc = 0;
    at::Tensor loss = gpt_loss(gpt, labels, train.codes.index_select(0, idx), &acc);
    return StepResult{loss, {acc}};
  };
  task.eval_names = {"loss"};
  task.evaluate = [&]() {
    c10::NoGradGuard no_grad;
    double sum = 0;
    const int64_t n = held_out.size(), b = std::max<int64_t>(1, options.batch);
    for (int64_t i = 0; i < n; i += b) {
      const int64_t len = std::min(b, n - i);
      sum += gpt_loss(gpt, held_out.labels.narrow(0, i, len).to(options.device), held_out.codes.narrow(0, i, len))
                 .item<double>() *
             static_cast<double>(len);
    }
    return std::vector<double>{n ? sum / static_cast<double>(n) : 0.0};
  };
  return run_training(options, task);
}

}  // namespace kvs::training
