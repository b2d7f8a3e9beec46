#include "engine/training/bundle_evaluation.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <c10/core/GradMode.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>

#include "engine/core/device.h"
#include "engine/core/errors.h"
#include "engine/core/logging.h"
#include "engine/core/torch_device.h"
#include "engine/image/png_file.h"
#include "engine/io/model_bundle.h"
#include "engine/metrics/frechet_distance.h"
#include "engine/metrics/image_tensors.h"
#include "engine/metrics/scene_classifier.h"
#include "engine/models/generation_session.h"
#include "engine/training/checkpoint.h"
#include "engine/training/classifier_trainer.h"
#include "engine/training/janus/prompted_evaluation.h"
#include "engine/training/trainable_families.h"
#include "engine/training/world_data.h"

namespace kvs::training {
namespace fs = std::filesystem;
namespace {

const ModuleLog& log() {
  static const ModuleLog logger = module_logger("train");
  return logger;
}

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

WorldImageSet held_out_images(const std::string& work_dir, int64_t per_class, int size, int threads,
                              uint64_t first_index) {
  if (!work_dir.empty() && first_index == 0)
    return load_world_split(work_dir, WorldSplit::HeldOut, per_class, size, threads);
  return WorldImageSet::render(world_items(WorldSplit::HeldOut, per_class, world_class_count(), first_index), size,
                               threads);
}

// Grid of uint8 [N, H, W, 3] images: row r holds images[r * cols .. r * cols + cols).
RgbImage image_grid(const at::Tensor& images, int64_t rows, int64_t cols, int scale) {
  const int64_t h = images.size(1) * scale, w = images.size(2) * scale, gap = 2;
  at::Tensor grid = at::full({rows * (h + gap) + gap, cols * (w + gap) + gap, 3}, 255,
                             at::TensorOptions().dtype(at::kByte));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      at::Tensor img = images[r * cols + c];
      if (scale > 1) img = img.repeat_interleave(scale, 0).repeat_interleave(scale, 1);
      grid.narrow(0, gap + r * (h + gap), h).narrow(1, gap + c * (w + gap), w).copy_(img);
    }
  return tensor_to_rgb_image(grid);
}

}  // namespace

nlohmann::json evaluate_bundle(const BundleEvaluationOptions& o) {
  const auto t_start = Clock::now();
  const io::ModelBundle bundle = io::ModelBundle::open(o.bundle_dir);
  const DeviceChoice device_choice = choose_device(parse_device(o.device), o.threads);
  const at::Device device = torch_device(device_choice);
  const EvaluationModel model = find_trainable_family(bundle.family()).load_for_evaluation(bundle, o.work_dir, device);
  const int64_t classes = model.classes;
  const int size = model.image_size;
  if (classes != world_class_count())
    throw ModelMismatchError("model " + bundle.dir + " has " + std::to_string(classes) + " classes, the world " +
                             std::to_string(world_class_count()));

  std::string classifier_path = o.classifier_path;
  if (classifier_path.empty()) classifier_path = evaluation_classifier_path(bundle).value_or("");
  if (classifier_path.empty() && !o.work_dir.empty()) classifier_path = classifier_file(o.work_dir);
  if (classifier_path.empty())
    throw InvalidArgumentError("no evaluation classifier: the bundle has none; pass --classifier FILE or --work DIR");
  const SceneClassifier classifier = SceneClassifier::load(classifier_path, device);

  nlohmann::json q;
  const int64_t ref_per_class = std::max<int64_t>(1, o.reference / classes);
  const WorldImageSet reference = held_out_images(o.work_dir, ref_per_class, size, o.threads, 0);
  const SceneClassifier::Output real = classifier.classify_u8(reference.pixels());
  q["classifier_accuracy"] = accuracy(real.logits, reference.labels());
  q["reference_images"] = reference.size();
  log().info("evaluate: classifier accuracy on " + std::to_string(reference.size()) +
             " held-out images: " + std::to_string(q["classifier_accuracy"].get<double>()));

  // Tokenizer: the training encoder's codes through the bundle's own decoder.
  if (!o.work_dir.empty()) {
    q["tokenizer_psnr_db"] = model.tokenizer_psnr(reference.pixels());
    log().info("evaluate: tokenizer PSNR " + std::to_string(q["tokenizer_psnr_db"].get<double>()) + " dB");
  } else if (bundle.manifest.contains("quality") && bundle.manifest["quality"].contains("tokenizer_psnr_db")) {
    // Without the training encoder the PSNR cannot be measured again; the earlier
    // measurement is kept, naming the command that made it (it still holds while
    // the decoder's tensors are unchanged, as after `compact` of the generator).
    const nlohmann::json& before = bundle.manifest["quality"];
    q["tokenizer_psnr_db"] = before["tokenizer_psnr_db"];
    q["tokenizer_psnr_measured_by"] = before.value("tokenizer_psnr_measured_by",
                                                   before.value("command", std::string()));
    log().info("evaluate: tokenizer PSNR kept from the earlier measurement (no --work)");
  }

  // Generation through the engine's session, with the bundle's default sampler.
  const nlohmann::json defaults = bundle.manifest.value("sampling_defaults", nlohmann::json::object());
  GenerationRequest request;
  request.model_path = bundle.dir;
  request.cfg_scale = defaults.value("cfg_scale", 4.0);
  request.sampling.temperature = defaults.value("temperature", 1.0);
  request.sampling.top_k = defaults.value("top_k", 0);
  request.sampling.top_p = defaults.value("top_p", 1.0);
  request.steps = defaults.value("steps", int64_t{0});                   // MAR decoding steps
  request.cfg_schedule = defaults.value("cfg_schedule", std::string());  // MAR guidance ramp
  request.device = o.device;
  request.threads = o.threads;
  // The quality gates are measured in float32 on any device, like training: a
  // bf16 run (auto's choice on CUDA) would move the gates with the device.
  request.dtype = "f32";
  const int64_t per_class = std::max<int64_t>(1, o.generated / classes);
  std::vector<int64_t> labels;
  std::vector<RgbImage> generated;
  std::optional<PromptedImages> prompted;
  const auto t_gen = Clock::now();
  if (model.text_conditioned) {
    request.seed = o.seed;
    prompted = generate_from_held_out_captions(request, per_class, classes, [&](int64_t done, int64_t total) {
      if (done % 50 == 0 || done == total)
        log().info("evaluate: generated " + std::to_string(done) + "/" + std::to_string(total) + " images (" +
                   std::to_string(seconds_since(t_gen)) + " s)");
    });
    labels = prompted->labels;
    generated = prompted->images;
  } else {
    for (int64_t i = 0; i < per_class; ++i)
      for (int64_t c = 0; c < classes; ++c) labels.push_back(c);
    GenerationSession session;
    const int64_t batch = std::clamp<int64_t>(o.batch, 1, 256);
    for (size_t first = 0, k = 0; first < labels.size(); first += batch, ++k) {
      request.class_ids.assign(labels.begin() + static_cast<long>(first),
                               labels.begin() + static_cast<long>(std::min(labels.size(), first + batch)));
      request.seed = o.seed + k;
      GenerationResult r = session.run(request);
      for (auto& img : r.images) generated.push_back(std::move(img));
      log().info("evaluate: generated " + std::to_string(generated.size()) + "/" + std::to_string(labels.size()) +
                 " images (" + std::to_string(seconds_since(t_gen)) + " s)");
    }
  }
  const double generation_seconds = seconds_since(t_gen);
  const at::Tensor generated_u8 = rgb_images_to_tensor(generated);
  const at::Tensor generated_labels = at::tensor(labels, at::TensorOptions().dtype(at::kLong));
  const SceneClassifier::Output fake = classifier.classify_u8(generated_u8);
  q["generated_class_accuracy"] = accuracy(fake.logits, generated_labels);
  nlohmann::json per_class_acc = nlohmann::json::object();
  const at::Tensor hits = fake.logits.argmax(1).eq(generated_labels).to(at::kDouble);
  const std::vector<std::string> names = world_class_names();
  for (int64_t c = 0; c < classes; ++c)
    per_class_acc[names[c]] = hits.masked_select(generated_labels.eq(c)).mean().item<double>();
  q["generated_class_accuracy_per_class"] = per_class_acc;
  if (prompted) {
    // Captions in the wording the model read in training, and in the held-out one.
    for (const auto wording : {world::CaptionSplit::train, world::CaptionSplit::held_out}) {
      std::vector<bool> pick;
      for (const auto w : prompted->wording) pick.push_back(w == wording);
      const at::Tensor mask = at::tensor(std::vector<int64_t>(pick.begin(), pick.end())).to(at::kBool);
      q[std::string("generated_class_accuracy_") + (wording == world::CaptionSplit::train ? "train" : "held_out") +
        "_wording"] = hits.masked_select(mask).mean().item<double>();
    }
    q["attributes"] = judge_prompt_attributes(*prompted);
    q["prompts"] = "captions of held-out pictures, train and held-out wording alternating per round of classes";
    log().info("evaluate: attributes " + q["attributes"].dump());
  }
  q["generated_images"] = static_cast<int64_t>(generated.size());
  q["demo_fid"] = frechet_distance(fake.features, real.features);
  const WorldImageSet second = held_out_images("", ref_per_class, size, o.threads, 500000);
  q["demo_fid_real_floor"] = frechet_distance(classifier.classify_u8(second.pixels()).features, real.features);
  q["sampler"] = {{"cfg_scale", request.cfg_scale},
                  {"temperature", request.sampling.temperature},
                  {"top_k", request.sampling.top_k},
                  {"top_p", request.sampling.top_p},
                  {"steps", request.steps},
                  {"cfg_schedule", request.cfg_schedule},
                  {"policy", "full"},
                  {"seed", o.seed}};
  q["held_out_seeds_per_class"] = seed_range_text(kHeldOutSeedBase, kHeldOutSeedBase + ref_per_class);
  q["classifier"] = fs::path(classifier_path).filename().string();
  q["generation_seconds"] = generation_seconds;
  q["device"] = device_choice.description;
  if (!o.command.empty()) q["command"] = o.command;
  log().info("evaluate: generated-image class accuracy " + std::to_string(q["generated_class_accuracy"].get<double>()) +
             ", demo-FID " + std::to_string(q["demo_fid"].get<double>()) + " (real floor " +
             std::to_string(q["demo_fid_real_floor"].get<double>()) + "), " + std::to_string(seconds_since(t_start)) +
             " s in all");

  if (!o.samples_png.empty()) {
    const int64_t cols = std::min<int64_t>(o.samples_per_class, per_class);
    std::vector<at::Tensor> rows;
    for (int64_t c = 0; c < classes; ++c)
      for (int64_t j = 0; j < cols; ++j) rows.push_back(generated_u8[j * classes + c]);
    write_png(o.samples_png, image_grid(at::stack(rows), classes, cols, std::max(1, o.samples_scale)),
              {{"parameters", "kvstudio-train evaluate: generated samples of " + bundle.name() +
                                  ", one row per class in label order"}});
  }
  if (o.write_manifest) {
    nlohmann::json manifest = bundle.manifest;
    manifest["quality"] = q;
    io::write_bundle_manifest(bundle.dir, manifest);
  }
  return q;
}

}  // namespace kvs::training
