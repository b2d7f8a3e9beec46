#include "engine/training/janus/janus_bundle_export.h"

#include <filesystem>
#include <fstream>

#include "engine/core/errors.h"
#include "engine/io/model_bundle.h"
#include "engine/io/safetensors_writer.h"
#include "engine/models/janus/janus_model.h"
#include "engine/models/janus/janus_weights.h"
#include "engine/models/llamagen/llamagen_weights.h"
#include "engine/training/bundle_start.h"
#include "engine/training/checkpoint.h"
#include "engine/training/janus/caption_data.h"
#include "engine/training/janus/text_tokenizer_trainer.h"
#include "engine/training/llamagen/vq_model.h"
#include "engine/training/world_dataset.h"
#include "engine/world/scene_world.h"

namespace kvs::training {
namespace fs = std::filesystem;

nlohmann::json export_janus_bundle(const BundleExportOptions& options) {
  const at::ScalarType dtype = parse_weights_dtype(options.dtype);
  const std::string vq_dir = (fs::path(options.work_dir) / "vq").string();
  const std::string janus_dir = (fs::path(options.work_dir) / "janus").string();
  const std::string text_dir = text_tokenizer_dir(options.work_dir);
  nlohmann::json vq_manifest, janus_manifest_json;
  const auto vq_weights = load_checkpoint_weights(vq_dir, &vq_manifest);
  const auto janus_weights = load_checkpoint_weights(janus_dir, &janus_manifest_json);
  const VqModelConfig vq_cfg = vq_model_config_from_json(vq_manifest.at("config").at("model"));
  const janus::JanusConfig cfg = janus::janus_config_from_json(janus_manifest_json.at("config").at("model"));
  require_trained_on_tokenizer(janus_manifest_json.at("config").value("tokenizer", std::string()), vq_manifest,
                               janus_dir, vq_dir, "the model", "tokenizer", "tokenizer");

  io::NamedTensors tensors;
  add_prefixed(tensors, janus_weights, janus::janus_generation_tensors(cfg), "", dtype, janus_dir);
  add_prefixed(tensors, vq_weights, llamagen::vq_decoder_expected_tensors(vq_cfg.arch), "gen_vision_model.", dtype,
               vq_dir);

  // The encoder half of the image tokenizer, beside the weights: generation never
  // reads it, training on from the bundle does (bundle_start.h).
  io::NamedTensors encoder;
  add_prefixed(encoder, vq_weights, llamagen::vq_encoder_expected_tensors(vq_cfg.arch, vq_cfg.encoder_levels()), "",
               dtype, vq_dir);

  const int image_size = vq_manifest.at("config").at("image_size").get<int>();
  nlohmann::json provenance = trained_provenance(options, "kvstudio-train export --family janus-pro", image_size,
                                                 vq_manifest, "janus_training", janus_manifest_json);
  // A run that started from a shipped bundle: that bundle's own training history
  // (read before the export may overwrite it).
  const nlohmann::json janus_run_config = janus_manifest_json.at("config");
  if (janus_run_config.contains("init_from")) {
    const std::string start = janus_run_config["init_from"].value("bundle", std::string());
    const io::ModelBundle start_bundle = io::ModelBundle::open(start);
    provenance["janus_training"]["started_from"] = {
        {"bundle", start}, {"provenance", start_bundle.manifest.value("provenance", nlohmann::json::object())}};
  }
  std::ifstream text_manifest(fs::path(text_dir) / "manifest.json");
  if (text_manifest) provenance["text_tokenizer_training"] = nlohmann::json::parse(text_manifest, nullptr, false);
  nlohmann::json manifest = janus::janus_manifest(options.name, cfg, provenance);
  // Prompts the window and the docs suggest: the train-wording captions of one
  // held-out picture of a few classes (what the model learned to draw, on pictures
  // it never saw).
  nlohmann::json examples = nlohmann::json::array();
  for (const char* name : {"sunset_sea", "night_sky", "forest", "lake", "desert", "tiling"}) {
    const WorldItem item{world::scene_class_id(name), kHeldOutSeedBase};
    examples.push_back(world_item_caption(item, 0, world::CaptionSplit::train));
  }
  manifest["example_prompts"] = examples;
  manifest["files"]["vq_encoder"] = kVqEncoderFile;
  write_trained_bundle(options, dtype, tensors, world_class_names(), manifest);
  io::write_safetensors((fs::path(options.out_dir) / kVqEncoderFile).string(), encoder,
                        {{"format", "kvstudio"}, {"content", "vq-encoder"}});

  // The tokenizer folder a converted checkpoint carries, as `tokenizer/`.
  const fs::path tokenizer_out = fs::path(options.out_dir) / "tokenizer";
  std::error_code ec;
  fs::create_directories(tokenizer_out, ec);
  for (const char* file : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"}) {
    fs::copy_file(fs::path(text_dir) / file, tokenizer_out / file, fs::copy_options::overwrite_existing, ec);
    if (ec) throw FileError("cannot copy " + (fs::path(text_dir) / file).string() + ": " + ec.message());
  }
  // The bundle must load through the engine's strict loader, as every bundle does.
  janus::JanusModel::load(io::ModelBundle::open(options.out_dir), at::kCPU, at::kFloat);
  return manifest;
}

}  // namespace kvs::training
