#include "engine/training/janus/janus_trainer.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <c10/core/GradMode.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "engine/core/errors.h"
#include "engine/core/logging.h"
#include "engine/models/janus/janus_model.h"
#include "engine/models/janus/janus_prompt.h"
#include "engine/models/janus/janus_weights.h"
#include "engine/text/bpe_tokenizer.h"
#include "engine/training/bundle_start.h"
#include "engine/training/checkpoint.h"
#include "engine/training/janus/caption_data.h"
#include "engine/training/llamagen/vq_model.h"
#include "engine/training/token_dataset.h"
#include "engine/training/world_data.h"

namespace kvs::training {
namespace {

// The tokenizer's identity for the checkpoint config: its tokenizer.json content.
std::string file_fingerprint(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FileError("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return std::to_string(std::hash<std::string>{}(ss.str()));
}

// Prompt rows of one caption set, grouped by token length for batching.
struct PromptSet {
  std::vector<std::vector<int64_t>> cond, uncond;  // example e: caption e % per_image of image e / per_image
  std::map<size_t, std::vector<int64_t>> by_length;
  int64_t per_image = 1;

  static PromptSet build(const text::BpeTokenizer& tokenizer, const janus::JanusConfig& config,
                         const std::vector<std::string>& captions, int64_t per_image) {
    PromptSet s;
    s.per_image = per_image;
    for (size_t e = 0; e < captions.size(); ++e) {
      janus::PromptRows rows = janus::build_prompt_rows(tokenizer, config, captions[e], "");
      s.by_length[rows.cond.size()].push_back(static_cast<int64_t>(e));
      s.cond.push_back(std::move(rows.cond));
      s.uncond.push_back(std::move(rows.uncond));
    }
    return s;
  }
  int64_t size() const { return static_cast<int64_t>(cond.size()); }
};

at::Tensor rows_tensor(const std::vector<const std::vector<int64_t>*>& rows) {
  const int64_t b = static_cast<int64_t>(rows.size()), p = static_cast<int64_t>(rows[0]->size());
  at::Tensor t = at::empty({b, p}, at::TensorOptions().dtype(at::kLong));
  auto acc = t.accessor<int64_t, 2>();
  for (int64_t i = 0; i < b; ++i)
    for (int64_t j = 0; j < p; ++j) acc[i][j] = (*rows[static_cast<size_t>(i)])[static_cast<size_t>(j)];
  return t;
}

}  // namespace

void fit_janus_to_tokenizers(JanusTrainSetup& setup) {
  const auto manifest = read_checkpoint_manifest(setup.vq_run_dir);
  if (!manifest)
    throw FileError("folder " + setup.vq_run_dir + ": no trained tokenizer here (run `kvstudio-train vq` first)");
  const VqModelConfig vq = vq_model_config_from_json(manifest->at("config").at("model"));
  janus::JanusConfig& c = setup.model;
  c.vq = vq.arch;
  c.image_size = manifest->at("config").at("image_size").get<int64_t>();
  c.image_token_size = vq.arch.codebook_size;
  c.gen_embed_dim = vq.arch.codebook_embed_dim;
  c.head_embed = c.language.hidden_size;
  const std::string tokenizer_json = setup.text_tokenizer_dir + "/tokenizer.json";
  if (!std::filesystem::exists(tokenizer_json))
    throw FileError("folder " + setup.text_tokenizer_dir +
                    ": no trained text tokenizer here (run `kvstudio-train text-tokenizer` first)");
  c.language.vocab_size = text::BpeTokenizer::load(setup.text_tokenizer_dir).vocab_size();
}

ParameterSet init_janus_parameters(const janus::JanusConfig& config, uint64_t seed, at::Device device) {
  config.validate();
  return init_parameters(janus::janus_generation_tensors(config), seed, device,
                         [](const std::string& name, const std::vector<int64_t>& shape, at::Generator& gen) {
                           if (name.find("norm") != std::string::npos) return at::Tensor();
                           if (name == "gen_head.vision_head.weight") return at::zeros(shape);
                           if (name == "gen_embed.weight") return at::normal(0.0, 1.0, shape, gen);
                           if (name.starts_with("language_model.")) return at::normal(0.0, 0.02, shape, gen);
                           return at::Tensor();
                         });
}

at::Tensor janus_loss(const janus::JanusModel& model, const at::Tensor& prompt_ids, const at::Tensor& codes,
                      double* token_accuracy) {
  const janus::JanusLanguageModel& lm = *model.language;
  at::Tensor targets = codes.to(lm.device(), at::kLong);
  const int64_t p = prompt_ids.size(1), t = targets.size(1);
  // The prompt's embeddings, then every image token but the last through
  // gen_embed -> gen_aligner; the hidden state at prompt position P-1+i predicts
  // image token i (the image-start tag predicts the first).
  at::Tensor h = at::cat({lm.embed_text(prompt_ids), model.image_embeds(targets.narrow(1, 0, t - 1))}, 1);
  at::Tensor hidden = lm.forward(h, 0, nullptr).narrow(1, p - 1, t);
  at::Tensor logits = model.image_logits(hidden).reshape({-1, model.config.image_token_size});
  targets = targets.reshape({-1});
  if (token_accuracy) *token_accuracy = logits.detach().argmax(1).eq(targets).to(at::kDouble).mean().item<double>();
  return at::cross_entropy_loss(logits, targets);
}

TrainSummary train_janus(const TrainOptions& options, const JanusTrainSetup& setup) {
  const janus::JanusConfig& cfg = setup.model;
  cfg.validate();
  if (setup.captions_per_image < 1) throw InvalidArgumentError("--captions-per-image must be at least 1");
  nlohmann::json vq_manifest;
  auto vq_weights = load_checkpoint_weights(setup.vq_run_dir, &vq_manifest);
  const VqModelConfig vq_cfg = vq_model_config_from_json(vq_manifest.at("config").at("model"));
  const int image_size = vq_manifest.at("config").at("image_size").get<int>();
  if (vq_cfg.arch.codebook_size != cfg.image_token_size || image_size != cfg.image_size)
    throw InvalidArgumentError("the model's image vocabulary or size differs from the tokenizer in " +
                               setup.vq_run_dir);
  const auto tokenizer = text::BpeTokenizer::load(setup.text_tokenizer_dir);
  if (tokenizer.vocab_size() > cfg.language.vocab_size)
    throw InvalidArgumentError("the text tokenizer's " + std::to_string(tokenizer.vocab_size()) +
                               " tokens exceed the model's vocab_size " + std::to_string(cfg.language.vocab_size));

  // A start from a shipped bundle: its generator, and a check that the image
  // tokenizer is an encoder fitted to its decoder (the same codebook).
  std::map<std::string, at::Tensor> start_weights;
  std::string start_id;
  if (!setup.init_from.empty()) {
    nlohmann::json architecture;
    start_weights = read_janus_generator(setup.init_from, &architecture);
    if (architecture != janus::to_json(cfg))
      throw InvalidArgumentError("bundle " + setup.init_from + " has another architecture than this run (" +
                                 architecture.dump() + " vs " + janus::to_json(cfg).dump() +
                                 "); give the bundle's language sizes");
    const BundleVq bundle_vq = read_bundle_vq(setup.init_from);
    if (vq_manifest.at("config").value("decoder_from", std::string()) != bundle_vq.fingerprint)
      throw InvalidArgumentError("the image tokenizer in " + setup.vq_run_dir + " was not fitted to the decoder of " +
                                 bundle_vq.origin + " (run `kvstudio-train vq --decoder-from " + setup.init_from +
                                 "` first)");
    start_id = bundle_vq.fingerprint;
  }

  const std::string dir = run_dir(options, "janus");
  TokenSet train, held_out;
  std::vector<WorldItem> train_items, held_out_items;
  {
    VqModel vq(vq_cfg, vq_weights, options.device);
    const std::string tokenizer_id = std::filesystem::absolute(setup.vq_run_dir).string() + "/" +
                                     vq_manifest.value("weights", std::string());
    const ImageTokenizer image_tokenizer{[&vq](const at::Tensor& input) { return vq.encode_codes(input); },
                                         vq.device()};
    WorldImageSet images = load_world_split(options.work_dir, WorldSplit::Train, setup.train_per_class, image_size,
                                            options.render_threads);
    train_items = images.items();
    train = tokenize_images_cached(image_tokenizer, images,
                                   dir + "/tokens-train-" + std::to_string(setup.train_per_class) + ".safetensors",
                                   tokenizer_id);
    if (setup.mirror) {
      const TokenSet mirrored = tokenize_images_cached(image_tokenizer, images.mirrored(),
                                                       dir + "/tokens-train-mirrored-" +
                                                           std::to_string(setup.train_per_class) + ".safetensors",
                                                       tokenizer_id);
      train.codes = at::cat({train.codes, mirrored.codes});
      train.labels = at::cat({train.labels, mirrored.labels});
    }
    WorldImageSet eval_images = load_world_split(options.work_dir, WorldSplit::HeldOut, setup.eval_per_class,
                                                 image_size, options.render_threads);
    held_out_items = eval_images.items();
    held_out = tokenize_images_cached(image_tokenizer, eval_images,
                                      dir + "/tokens-heldout-" + std::to_string(setup.eval_per_class) + ".safetensors",
                                      tokenizer_id);
  }
  // Caption k of training picture i at i * per_image + k; the mirrored pictures
  // (when on) follow the originals in the same order, as their codes do.
  std::vector<std::string> train_captions = world_item_captions(train_items, setup.captions_per_image,
                                                                world::CaptionSplit::train);
  if (setup.mirror) {
    std::vector<std::string> mirrored = world_item_captions(train_items, setup.captions_per_image,
                                                            world::CaptionSplit::train, true);
    train_captions.insert(train_captions.end(), mirrored.begin(), mirrored.end());
  }
  const PromptSet prompts = PromptSet::build(tokenizer, cfg, train_captions, setup.captions_per_image);
  // Held-out pictures, one caption each in either split: the loss on wordings
  // the model has read and on wordings it has not.
  const PromptSet eval_train_words =
      PromptSet::build(tokenizer, cfg, world_item_captions(held_out_items, 1, world::CaptionSplit::train), 1);
  const PromptSet eval_new_words =
      PromptSet::build(tokenizer, cfg, world_item_captions(held_out_items, 1, world::CaptionSplit::held_out), 1);

  ParameterSet params = init_janus_parameters(cfg, options.seed, options.device);
  if (!start_weights.empty()) params.copy_from(start_weights, "bundle " + setup.init_from);
  const janus::JanusModel model = janus::JanusModel::from_tensors(cfg, params.as_map(), options.device, at::kFloat);
  module_logger("train").info("janus: " + std::to_string(params.numel()) + " parameters, " +
                              std::to_string(prompts.size()) + " captioned training pictures (" +
                              std::to_string(prompts.by_length.size()) + " prompt lengths, " +
                              std::to_string(prompts.by_length.begin()->first) + "-" +
                              std::to_string(prompts.by_length.rbegin()->first) + " tokens)");

  TrainingTask task;
  task.kind = "janus";
  task.params = &params;
  task.config = {{"model", janus::to_json(cfg)},
                 {"tokenizer", vq_manifest.value("weights", std::string())},
                 {"text_tokenizer", file_fingerprint(setup.text_tokenizer_dir + "/tokenizer.json")},
                 {"train_per_class", setup.train_per_class},
                 {"captions_per_image", setup.captions_per_image},
                 {"condition_dropout", setup.condition_dropout}};
  // Only when on, so that runs made before these options existed still resume.
  if (setup.mirror) task.config["mirror"] = true;
  if (!start_id.empty()) task.config["init_from"] = {{"bundle", setup.init_from}, {"decoder", start_id}};
  task.metric_names = {"token_accuracy", "prompt_tokens"};
  task.step = [&](int64_t, at::Generator& gen) {
    const auto i64 = at::TensorOptions().dtype(at::kLong);
    const int64_t anchor = at::randint(prompts.size(), {1}, gen, i64).item<int64_t>();
    const std::vector<int64_t>& bucket = prompts.by_length.at(prompts.cond[static_cast<size_t>(anchor)].size());
    at::Tensor picks = at::randint(static_cast<int64_t>(bucket.size()), {options.batch - 1}, gen, i64);
    at::Tensor drop = at::rand({options.batch}, gen).lt(setup.condition_dropout);
    std::vector<int64_t> examples = {anchor};
    for (int64_t i = 0; i + 1 < options.batch; ++i)
      examples.push_back(bucket[static_cast<size_t>(picks[i].item<int64_t>())]);
    std::vector<const std::vector<int64_t>*> rows;
    std::vector<int64_t> images;
    for (size_t i = 0; i < examples.size(); ++i) {
      const auto e = static_cast<size_t>(examples[i]);
      rows.push_back(drop[static_cast<int64_t>(i)].item<bool>() ? &prompts.uncond[e] : &prompts.cond[e]);
      images.push_back(examples[i] / prompts.per_image);
    }
    double acc = 0;
    at::Tensor codes = train.codes.index_select(0, at::tensor(images, i64));
    at::Tensor loss = janus_loss(model, rows_tensor(rows).to(options.device), codes, &acc);
    return StepResult{loss, {acc, static_cast<double>(rows[0]->size())}};
  };
  task.eval_names = {"loss", "loss_held_out_wording", "loss_unconditional"};
  task.evaluate = [&]() {
    c10::NoGradGuard no_grad;
    auto mean_loss = [&](const PromptSet& set, bool unconditional) {
      double sum = 0;
      for (const auto& [length, examples] : set.by_length) {
        std::vector<const std::vector<int64_t>*> rows;
        for (int64_t e : examples) rows.push_back(unconditional ? &set.uncond[e] : &set.cond[e]);
        at::Tensor codes = held_out.codes.index_select(0, at::tensor(examples, at::TensorOptions().dtype(at::kLong)));
        sum += janus_loss(model, rows_tensor(rows).to(options.device), codes).item<double>() *
               static_cast<double>(examples.size());
      }
      return set.size() ? sum / static_cast<double>(set.size()) : 0.0;
    };
    return std::vector<double>{mean_loss(eval_train_words, false), mean_loss(eval_new_words, false),
                               mean_loss(eval_train_words, true)};
  };
  return run_training(options, task);
}

}  // namespace kvs::training
