#pragma once
// What a bench measured, image by image, before it is summed up into one
// BenchRecord per policy: the form in which a bench's shards are kept on disk
// (bench_output_dir.h) and merged (`kvstudio-cli bench merge`). Torch-free.
//
// Choices:
// - The unit of work is a run: BenchOptions::batch images with seed `seed + r`.
//   Every policy makes run r in the same process, the full cache first, so
//   agreement, PSNR and SSIM compare image i of a policy with image i of the
//   full cache without moving images between machines. A shard owns whole runs
//   (run r belongs to shard r mod N, BenchOptions::shard_index/shard_count).
// - summarize_bench() is the one place BenchRecords come from, for a bench in
//   one process and for merged shards alike, so that a merge gives the table of
//   the unsharded bench: means over the images in image order (agreement, PSNR,
//   SSIM, FLOPs), counts summed (identical images, classes recognised, prompted
//   attributes shown), KV bytes and the device peak the largest over the runs,
//   demo-FID from summed feature statistics (feature_sums.h).
// - Speed: a run's time is its fastest of BenchOptions::rounds rounds; a
//   policy's tokens_per_s is all its image tokens over the summed times of its
//   runs, whichever machines made them (with shards on different machines, the
//   speed is a mixture of theirs: compare speeds within one machine's bench).
// - Process memory belongs to a process: merged, process_peak_bytes is the
//   largest of the shards' and process_rss_delta_bytes their sum.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "engine/bench/attribute_judge.h"
#include "engine/bench/feature_sums.h"
#include "engine/bench/policy_bench.h"

namespace kvs {

// One image of one policy.
struct BenchImageResult {
  int64_t image = 0;      // index in the bench (0 .. images-1)
  int64_t run = 0;        // image / batch
  uint64_t seed = 0;      // the run's seed
  int64_t class_id = -1;  // the class asked for (a class model's, or the class a prompt line names); -1: none
  std::string prompt;     // text families: the run's prompt
  double token_agreement = BenchRecord::kNotJudged;  // vs the full cache's image; NaN for continuous tokens
  double psnr = BenchRecord::kNotJudged;             // vs the full cache's image; +inf when equal
  double ssim = BenchRecord::kNotJudged;
  bool identical = false;                  // tokens (MAR: pixels) equal the full cache's
  int64_t predicted_class = -1;            // the evaluation classifier's answer; -1: not judged
  AttributeScore attributes;               // text families: the prompted attributes asked for and shown
  double flops = BenchRecord::kNotJudged;  // masked models: FLOPs of this image's run, per image
  // The run's, shared by its images:
  int64_t run_images = 0;
  double run_generation_ms = 0;  // the fastest round
  double run_tokens_per_s = 0;   // the run's image tokens over run_generation_ms
  int64_t kv_bytes_logical = 0, kv_bytes_allocated = 0, kv_bytes_peak = 0, kv_bytes_full = 0;
  int64_t device_peak_bytes = -1;
  std::string png;  // with --save-images: the file, relative to the output folder
};

// One policy's images (in image order) and what is summed over them.
struct BenchPolicyResults {
  std::string policy;  // canonical spec
  std::map<std::string, std::string> params;
  std::vector<BenchImageResult> images;
  FeatureSums features;  // the classifier features of the images judged for class
  int64_t process_peak_bytes = 0;
  bool process_peak_is_own = true;
  int64_t process_rss_delta_bytes = 0;
};

struct BenchResults {
  // The bench's settings (every shard has them):
  std::string family;
  int64_t images = 0, batch = 0, rounds = 1, steps = 0;
  bool text = false;  // a text family: the prompted attributes are judged
  bool measures_flops = false;
  // Known once a run is made (empty in a shard that made none):
  std::string model, device, dtype;
  std::string cuda_graphs;  // how the decode steps ran (BenchRecord::cuda_graphs)
  int64_t grid_height = 0, grid_width = 0;
  bool judged = false;                       // the bundle has an evaluation classifier
  FeatureSums reference;                     // its held-out images' features (for demo-FID)
  std::vector<BenchPolicyResults> policies;  // full first
  std::set<int64_t> runs;                    // the runs whose images are here
};

int64_t bench_run_count(int64_t images, int64_t batch);
// With --save-images: "images/000012-linear_rho=1_4.png" (the policy spec with
// ':', ',' and '/' made '_', so that it is one file name).
std::string bench_png_name(int64_t image, const std::string& policy);
// The runs of 0 .. run_count-1 that `results` lacks.
std::vector<int64_t> missing_runs(const BenchResults& results);

// One BenchRecord per policy (see the header). Needs at least one run.
std::vector<BenchRecord> summarize_bench(const BenchResults& results);

// The union of shards of one bench. Throws InvalidArgumentError when a run is in
// two of them (naming it and the two indices into `parts`) or when they disagree
// on the policies or the settings.
BenchResults merge_bench_results(const std::vector<BenchResults>& parts);

// One JSON line of bench --out's image file: the image's fields and its policy.
nlohmann::json to_json(const BenchImageResult& image, const std::string& policy);
// Throws FormatError naming `what` for a malformed line.
BenchImageResult bench_image_from_json(const nlohmann::json& j, const std::string& what);

// Everything but the images (the shard's statistics file), and back: the
// images are read from the image file.
nlohmann::json bench_statistics_json(const BenchResults& results);
BenchResults bench_results_from_statistics(const nlohmann::json& j, const std::string& what);

}  // namespace kvs
