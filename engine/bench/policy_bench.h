#pragma once
// `kvstudio-cli bench`: the same classes and seeds generated under several KV-cache
// policies, compared with the full cache on memory, speed and agreement (tokens,
// PSNR, SSIM). One GenerationSession serves every run, so the model loads once.
// Torch-free header.
//
// Choices:
// - Every run is made by every policy in turn, full first, and judged as soon
//   as it is made; BenchRecords are sums and means over the images
//   (engine/bench/bench_results.h, summarize_bench), so shards of a bench merge
//   into the same records.
// - "full" always runs first (it is the reference), whether listed or not; a spec
//   listed twice runs once.
// - Images are generated in runs of `batch` (the last run may be smaller); run r
//   uses seed `seed + r` and images i = r*batch.. use class classes[i % size]
//   (default: class ids 0, 1, 2, ... cycling over the model's classes). Every
//   policy sees exactly the same runs, so image i of a policy is compared with
//   image i of the full cache. Text families (Janus-Pro) take prompts instead:
//   run r uses prompts[r % size] for all its images.
// - Memory per policy is per run: kv_bytes_* are the maximum over the runs
//   (kv_bytes_logical: retained at the end of a run; kv_bytes_allocated: the
//   largest allocation seen at a line boundary; kv_bytes_peak: the store's peak).
// - dtype is the resolved run-time dtype every run used (BenchOptions::dtype,
//   auto: bf16 on CUDA, f32 on the CPU); the kv_bytes_* fields are at its
//   element size (bf16/f16 half of f32).
// - cuda_graphs says how the decode steps ran (BenchOptions::cuda_graphs asks;
//   GenerationResult::cuda_graphs reports): "on" when every run of every policy
//   replayed CUDA graphs, "off", "n/a" (the CPU, families without them), ...,
//   "partly" when the runs differ. It is the same for every record of a bench.
// - tokens_per_s counts image tokens of every image over generation time only
//   (up to the last token; excludes model loading and VQ decoding), summed over
//   the runs; with rounds, each run's time is its fastest round.
// - psnr is the mean over the images whose pixels differ from the full cache's;
//   identical images (PSNR +inf) are left out of the mean (identical_images counts
//   the images whose tokens equal the full cache's), and psnr is NaN (JSON null)
//   when every image is identical.
// - process_peak_bytes is VmHWM, reset before each policy's runs where Linux
//   allows it (process_peak_is_own), so it is the peak of that policy's runs
//   (the model weights resident since loading included); otherwise it is the
//   peak of the whole process so far. process_rss_delta_bytes is what the
//   policy's runs left resident. ssim and token_agreement
//   are means over all images (see engine/metrics/image_metrics.h).
// - class_accuracy and demo_fid judge each policy's images with the bundle's
//   evaluation classifier (engine/bench/demo_quality_judge.h); NaN (JSON null) for
//   bundles without one (random weights, converted official checkpoints).
//   class_judged counts the images judged: every image of a class-conditional
//   model; for a text family only the images whose prompt names a world class
//   (BenchPrompt::class_id), and demo_fid's held-out set follows those classes.
//   Images whose prompt names no class are not judged for class or demo-FID
//   (there is no class to draw a held-out set from); with none named both are NaN.
// - Text families: time_accuracy, light_side_accuracy, light_height_accuracy,
//   colour_accuracy and clouds_accuracy are the fractions of what the prompts ask
//   for (the time of day, the sun's or moon's side and height, named colours, a
//   clear or cloudy sky; read by
//   engine/world/prompt_attributes.h) that each image shows by the world's pixel
//   measures (engine/bench/attribute_judge.h); attribute_accuracy pools every
//   case. *_judged count the cases; an accuracy is NaN (JSON null) when nothing
//   was asked for. These need no classifier; class-conditional models get NaN.
// - Masked models (MAR: --random mar-demo|mar-B|mar-L|mar-H or a MAR bundle):
//   the policies are feature caches ("full" = full recomputation every step,
//   "lazymar:..."); --steps sets the decoding steps (default: the bundle's
//   sampling_defaults, else 64). flops is the matmul/attention FLOPs per image
//   counted during the run (engine/models/mar/mar_flops.h: transformer and
//   diffusion head, what a cache skipped is not counted; VAE decoding excluded),
//   averaged over the images; flops_vs_full its share of the full run's. The KV
//   fields stay 0 (MAR has no KV cache); MAR's "tokens" are continuous latents,
//   so token_agreement is NaN (JSON null) and identical_images counts images
//   whose pixels equal the full run's. For the other families flops is NaN.
// - Largest batch under a memory cap (BenchOptions::max_memory_bytes > 0): per
//   policy, the largest batch (1..max_batch_limit) whose run stays under the cap,
//   and the image tokens/s of a run at that batch; see MaxBatchResult. It runs
//   before the same-batch comparison (after the warm-up), so that a cap smaller
//   than every policy's batch 1 is refused before the long part. The measure:
//   on a GPU, the device's peak allocated memory over the run (the caching
//   allocator's, weights included; engine/metrics/device_memory.h), and a CUDA
//   out-of-memory error counts as "does not fit", never as a failure. On the CPU,
//   the engine's own accounting: the model's weights at the run dtype (the
//   bundle's tensors, counted) plus the KV store's peak allocation over the run.
//   Activations, the image decoder's buffers and the process's other memory are
//   not in it (process_peak_bytes is reported beside it for that): the CPU has
//   no allocator that counts them, and a resident-memory peak depends on what
//   earlier runs left mapped, so it would not be the same for the same batch.
//   The search doubles the batch (1, 2, 4, ...) while it fits, then bisects
//   between the last batch that fits and the first that does not, so it assumes
//   memory grows with the batch; each probe is one run of `batch` images with
//   the bench's first class (cycled) or prompt and seed. The speed at the
//   largest batch is the fastest of `rounds` runs at it (the probe that found
//   it is the first; the policies take turns, as in the main comparison).
//   ratio_vs_full divides a policy's tokens/s at its largest batch by full's at
//   full's largest batch.
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "engine/bench/bench_prompt_file.h"
#include "engine/sampling/sampling_params.h"

namespace kvs {

struct BenchOptions {
  std::string model_path;             // a bundle folder, or
  std::string random_arch;            // "llamagen-B@384", "llamagen-XL@256", "llamagen-demo", "var-d16", "var-demo",
                                      // "mar-demo", "mar-B", "mar-L", "mar-H": seeded random
                                      // weights written (f16) to a temporary bundle, removed afterwards
  std::vector<std::string> policies;  // specs, e.g. "linear:rho=1/6,n_init=4"
  int64_t batch = 1;                  // images per generation run
  int64_t images = 1;                 // images per policy
  uint64_t seed = 0;
  std::vector<int64_t> classes;  // class-conditional families: cycled over the images; empty: 0, 1, 2, ...
  // Text families (Janus-Pro): one prompt per run (its `batch` images are that
  // prompt's parallel images), cycled over the runs; empty: default_bench_prompts().
  std::vector<BenchPrompt> prompts;
  // Unset: the model's sampling_defaults, else CFG 4, temperature 1, no top-k/top-p.
  std::optional<double> cfg, temperature, top_p;
  std::optional<int64_t> top_k;
  SamplerRng sampler_rng = SamplerRng::Auto;  // where sampling draws (see sampling_params.h)
  bool warmup = true;                         // one untimed full-cache run first (thread pools,
                                              // allocator and caches warm up; else the first policy
                                              // measured, full, would pay for them)
  // Timing rounds: every round runs each policy once, in turn, and a policy's
  // speed is its fastest round. Interleaving spreads a busy machine's noise
  // evenly over the policies instead of charging it to whichever ran then;
  // tokens, images and memory come from the first round (runs are seeded).
  int64_t rounds = 1;
  std::string device = "auto";
  int threads = 0;
  std::string dtype = "auto";  // run-time dtype of weights and KV cache: auto | f32 | bf16 | f16
  int64_t steps = 0;           // masked models (MAR): decoding steps; 0 = the bundle's default, else 64
  // on | off: CUDA graphs for the decode step (GenerationRequest::cuda_graphs).
  std::string cuda_graphs = "on";
  // > 0: also find each policy's largest batch under this many bytes (see above).
  int64_t max_memory_bytes = 0;
  int64_t max_batch_limit = 256;  // the largest batch the search tries (1..256)
  // Shards (bench_shard.h): run r belongs to shard r mod shard_count.
  // run_policy_bench makes every run (shard_count 1).
  int64_t shard_index = 0, shard_count = 1;
  bool save_images = false;  // name a PNG per image in the results (bench --out DIR --save-images)
};

// One run of the largest-batch search.
struct MaxBatchProbe {
  int64_t batch = 0;
  bool fits = false;
  bool out_of_memory = false;  // the device ran out of memory (GPU): does not fit
  int64_t peak_bytes = -1;     // the measure (see above); -1 when the run ran out of memory
  double tokens_per_s = 0;     // image tokens of the run / its generation time; 0 when out of memory
};

// A policy's largest batch under the cap (see above).
struct MaxBatchResult {
  int64_t cap_bytes = 0;
  std::string measure;                // "device peak" (GPU) | "weights + KV peak" (CPU)
  int64_t max_batch = 0;              // 0: not even batch 1 fits
  int64_t batch_limit = 0;            // the search's upper end (BenchOptions::max_batch_limit)
  bool at_limit = false;              // fits at batch_limit: the largest batch may be larger
  double tokens_per_s = 0;            // at max_batch: the fastest of BenchOptions::rounds runs
  int64_t peak_bytes = 0;             // the measure at max_batch
  int64_t weights_bytes = 0;          // CPU: the weights part of the measure; GPU: 0 (inside the device peak)
  int64_t kv_bytes_peak = 0;          // the KV store's peak at max_batch
  int64_t process_peak_bytes = 0;     // VmHWM over the run at max_batch (for information)
  double ratio_vs_full = 0;           // tokens_per_s / full's at its max_batch; NaN when full fits no batch
  std::vector<MaxBatchProbe> probes;  // in the order they ran
};

// The search on its own: the largest batch in [1, limit] for which `fits` holds,
// doubling from 1 while it does, then bisecting; 0 when batch 1 does not fit.
// `fits` is called at most once per batch. Throws InvalidArgumentError for
// limit < 1.
int64_t largest_fitting_batch(int64_t limit, const std::function<bool(int64_t)>& fits);

struct BenchRecord {
  static constexpr double kNotJudged = std::numeric_limits<double>::quiet_NaN();
  std::string policy;                         // canonical spec
  std::map<std::string, std::string> params;  // the spec's parameters as written
  int64_t kv_bytes_logical = 0;
  int64_t kv_bytes_allocated = 0;
  int64_t kv_bytes_peak = 0;
  int64_t kv_bytes_full = 0;
  int64_t process_peak_bytes = 0;       // VmHWM after the policy's runs (see above)
  bool process_peak_is_own = false;     // VmHWM was reset before the policy's runs
  int64_t device_peak_bytes = -1;       // GPU: the caching allocator's peak over the policy's
                                        // runs (weights included); -1 (JSON null) on the CPU
  int64_t process_rss_delta_bytes = 0;  // RSS after minus before the policy's runs
  double generation_ms = 0;             // summed over runs (the fastest round)
  int64_t rounds = 1;                   // timing rounds (BenchOptions::rounds)
  double tokens_per_s = 0;              // image tokens of all images / generation time
  double speedup_vs_full = 0;
  double token_agreement = 0;
  double psnr = 0;  // NaN when every image equals the full cache's
  double ssim = 0;
  int64_t identical_images = 0;          // images whose tokens equal the full cache's
  double class_accuracy = 0;             // fraction; NaN without an evaluation classifier
  double demo_fid = 0;                   // NaN without an evaluation classifier or < 2 images
  int64_t quality_reference_images = 0;  // held-out images demo_fid is measured against
  int64_t class_judged = 0;              // images judged for class and demo-FID
  // Text families: fractions of the prompted attributes shown (see above); NaN
  // when none was asked for. The counts are cases judged.
  double time_accuracy = kNotJudged, light_side_accuracy = kNotJudged, light_height_accuracy = kNotJudged,
         colour_accuracy = kNotJudged, clouds_accuracy = kNotJudged, attribute_accuracy = kNotJudged;
  int64_t time_judged = 0, light_side_judged = 0, light_height_judged = 0, colour_judged = 0, clouds_judged = 0,
          attribute_judged = 0;
  double flops = 0;          // masked models: FLOPs per image (see above); NaN otherwise
  double flops_vs_full = 0;  // flops / the full run's flops; NaN when not counted
  int64_t steps = 0;         // masked models: decoding steps; 0 otherwise
  std::string family;        // "llamagen" | "var" | "mar" | "janus-pro"
  int64_t images = 0, batch = 0;
  std::string model, device;
  std::string dtype;  // the resolved run-time dtype ("f32", "bf16", "f16"): KV bytes scale with it
  // How the runs' decode steps ran (engine/core/cuda_graphs.h: on, off, n/a, ...;
  // "partly" when runs differed); empty for results written before it was recorded.
  std::string cuda_graphs;
  int64_t grid_height = 0, grid_width = 0;
  std::optional<MaxBatchResult> max_memory;  // with BenchOptions::max_memory_bytes > 0
};

nlohmann::json to_json(const MaxBatchResult& result);
nlohmann::json to_json(const BenchRecord& record);
nlohmann::json to_json(const std::vector<BenchRecord>& records);

struct BenchProgress {
  std::string policy;
  int64_t policy_index = 0, policy_count = 0;
  int64_t run_index = 0, run_count = 0;
  int64_t round = 0, rounds = 1;
  int64_t tokens_done = 0, tokens_total = 0;  // within the current run (per image)
  bool run_finished = false;
  double run_elapsed_ms = 0;
  // With run_finished: the run's image tokens per second (generation only),
  // its KV bytes allocated at the peak, and its device peak (-1 on the CPU).
  double run_tokens_per_s = 0;
  int64_t run_kv_bytes_allocated = 0;
  int64_t run_device_peak_bytes = -1;
  int64_t probe_batch = 0;  // > 0: a run of the largest-batch search at this batch
  bool probe_fits = false;  // with run_finished: whether that run stayed under the cap
};
using BenchProgressFn = std::function<void(const BenchProgress&)>;

// The prompts a text-family bench uses when none are given: short scene
// descriptions of the kind Janus-Pro's examples use (no class).
const std::vector<BenchPrompt>& default_bench_prompts();

// Reads `--prompts FILE` (bench_prompt_file.h) with the world's classes
// (scene_classes()'s names, e.g. "forest"). Throws FileError, and
// InvalidArgumentError naming the line for an unknown class or a class without
// a prompt, and for a file without a prompt.
std::vector<BenchPrompt> read_prompt_file(const std::string& path);

// Runs the benchmark; records are in run order (full first). Throws kvs::Error
// subclasses before any generation for unknown policies, impossible budgets,
// bad --random architectures or classes; CancelledError when `cancelled`
// returns true (polled every token). A temporary random bundle is always removed.
std::vector<BenchRecord> run_policy_bench(const BenchOptions& options, const BenchProgressFn& progress = {},
                                          const std::function<bool()>& cancelled = {});

}  // namespace kvs
