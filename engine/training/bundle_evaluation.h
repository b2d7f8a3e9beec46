#pragma once
// `kvstudio-train evaluate`: the quality gates of a trained demo bundle (LlamaGen,
// VAR or MAR), measured through the engine's normal code paths and written into the
// bundle's model.json under "quality":
//   tokenizer_psnr_db         encode (training encoder: WORK/vq, WORK/var-vae for VAR,
//                             WORK/kl-vae for MAR: posterior mean x latent_scale) ->
//                             the bundle's own decoder (shipped dtype) on held-out images
//   classifier_accuracy       evaluation classifier on the same held-out images
//   generated_class_accuracy  classifier on images made by GenerationSession with
//                             the bundle's sampling_defaults, classes balanced
//   demo_fid                  Fréchet distance of classifier features, generated vs held-out
//   demo_fid_real_floor       the same between two disjoint held-out sets (what a
//                             perfect generator would score with this many images)
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace kvs::training {

struct BundleEvaluationOptions {
  std::string bundle_dir;
  std::string work_dir;  // WORK/vq, WORK/var-vae or WORK/kl-vae (encoder) and the world-image cache; empty: no PSNR
  std::string classifier_path;  // empty: the bundle's evaluation classifier, else WORK/classifier
  int64_t generated = 1000;     // generated images (balanced over classes)
  int64_t reference = 1000;     // held-out real images (balanced over classes)
  int64_t batch = 100;          // images per GenerationSession run
  uint64_t seed = 0;            // generation seed of the first batch (batch k uses seed + k)
  int threads = 1;
  std::string device = "cpu";
  std::string samples_png;  // optional grid of generated samples: one row per class
  int64_t samples_per_class = 8;
  int samples_scale = 2;  // nearest-neighbour upscaling of the grid
  bool write_manifest = true;
  std::string command;  // recorded with the numbers
};

// Returns the "quality" object (also written into model.json when asked).
nlohmann::json evaluate_bundle(const BundleEvaluationOptions& options);

}  // namespace kvs::training
