#include "engine/training/trainable_families.h"

#include "engine/core/errors.h"
#include "engine/io/model_bundle.h"
#include "engine/models/janus/janus_model.h"
#include "engine/models/llamagen/llamagen_model.h"
#include "engine/models/mar/mar_model.h"
#include "engine/models/var/var_model.h"
#include "engine/training/janus/janus_bundle_export.h"
#include "engine/training/llamagen/bundle_export.h"
#include "engine/training/llamagen/tokenizer_psnr.h"
#include "engine/training/mar/kl_vae_trainer.h"
#include "engine/training/mar/mar_bundle_export.h"
#include "engine/training/var/var_bundle_export.h"
#include "engine/training/var/var_vae_trainer.h"
#include "engine/training/world_dataset.h"

namespace kvs::training {
namespace {

// The loaded model stays alive with the functions that use it.
template <typename Model, typename Psnr>
EvaluationModel evaluation_model(std::shared_ptr<Model> model, int64_t classes, Psnr psnr) {
  EvaluationModel e;
  e.classes = classes;
  e.image_size = static_cast<int>(model->image_size());
  e.tokenizer_psnr = [model, psnr](const at::Tensor& pixels) { return psnr(*model, pixels); };
  e.keep_alive = model;
  return e;
}

const nlohmann::json kTokenSampling = {{"cfg_scale", 4.0}, {"temperature", 1.0}, {"top_k", 0}, {"top_p", 1.0}};

}  // namespace

const std::vector<TrainableFamily>& trainable_families() {
  static const std::vector<TrainableFamily> families = {
      {"llamagen",
       kTokenSampling,
       {},
       export_llamagen_bundle,
       [](const io::ModelBundle& bundle, const std::string& work, c10::Device device) {
         auto model = std::make_shared<llamagen::LlamaGenModel>(llamagen::LlamaGenModel::load(bundle, device));
         return evaluation_model(model, model->gpt->config().num_classes,
                                 [work, device](const llamagen::LlamaGenModel& m, const at::Tensor& pixels) {
                                   return llamagen_bundle_tokenizer_psnr(work, m, pixels, device);
                                 });
       }},
      {"var",
       kTokenSampling,
       {},
       export_var_bundle,
       [](const io::ModelBundle& bundle, const std::string& work, c10::Device device) {
         auto model = std::make_shared<var::VarModel>(var::VarModel::load(bundle, device));
         return evaluation_model(model, model->transformer->config().num_classes,
                                 [work, device](const var::VarModel& m, const at::Tensor& pixels) {
                                   return var_bundle_tokenizer_psnr(work, *m.vqvae, pixels, device);
                                 });
       }},
      // MAR's sampler reads steps, cfg (ramped by cfg_schedule) and temperature.
      {"mar",
       {{"cfg_scale", 3.0}, {"cfg_schedule", "linear"}, {"temperature", 1.0}, {"steps", 32}},
       {"--no-ema", "--num-sampling-steps"},
       export_mar_bundle,
       [](const io::ModelBundle& bundle, const std::string& work, c10::Device device) {
         auto model = std::make_shared<mar::MarModel>(mar::MarModel::load(bundle, device));
         return evaluation_model(model, model->config().class_num,
                                 [work, device](const mar::MarModel& m, const at::Tensor& pixels) {
                                   return kl_vae_bundle_tokenizer_psnr(work, *m.vae, pixels, device);
                                 });
       }},
      // The official generation defaults (generation_inference.py): CFG 5,
      // temperature 1, sampling over the whole image vocabulary.
      {"janus-pro",
       {{"cfg_scale", 5.0}, {"temperature", 1.0}, {"top_k", 0}, {"top_p", 1.0}},
       {},
       export_janus_bundle,
       [](const io::ModelBundle& bundle, const std::string& work, c10::Device device) {
         auto model = std::make_shared<janus::JanusModel>(janus::JanusModel::load(bundle, device, at::kFloat));
         EvaluationModel e = evaluation_model(model, world_class_count(),
                                              [work, device](const janus::JanusModel& m, const at::Tensor& pixels) {
                                                return vq_decoder_tokenizer_psnr(work, *m.vq, m.config.grid_size(),
                                                                                 pixels, device);
                                              });
         e.text_conditioned = true;
         return e;
       }},
  };
  return families;
}

const TrainableFamily& find_trainable_family(const std::string& name) {
  std::string names;
  for (const TrainableFamily& f : trainable_families()) {
    if (f.name == name) return f;
    names += (names.empty() ? "" : ", ") + f.name;
  }
  throw InvalidArgumentError("model family '" + name + "' has no demo-model training (trainable: " + names + ")");
}

}  // namespace kvs::training
