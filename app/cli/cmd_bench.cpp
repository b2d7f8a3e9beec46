// kvstudio-cli bench: a thin shell over run_policy_bench (engine/bench/policy_bench.h).
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

#include "app/cli/arg_parser.h"
#include "app/cli/bench_table.h"
#include "app/cli/commands.h"
#include "app/cli/default_paths.h"
#include "engine/bench/bench_output_dir.h"
#include "engine/bench/bench_shard.h"
#include "engine/bench/bench_sweep.h"
#include "engine/bench/policy_bench.h"
#include "engine/bench/sweep_chart.h"
#include "engine/cache/policies/policy_list.h"
#include "engine/core/cuda_graphs.h"
#include "engine/core/device.h"
#include "engine/core/errors.h"
#include "engine/image/png_file.h"
#include "engine/models/family_registry.h"

namespace kvs::cli {
namespace {
namespace fs = std::filesystem;

const char* kHelp = R"(usage: kvstudio-cli bench --policies SPEC[,SPEC...] [options]

Generates the same classes (or prompts) and seeds under each policy and compares it with the
full cache: KV memory, speed, token agreement, PSNR and SSIM. "full" always runs
first as the reference. Masked (MAR) models take feature caches instead
(full,lazymar:...): FLOPs per image (counted), speed-up, PSNR and SSIM vs full.
On a trained demo model (one that ships its evaluation
classifier) each policy's images are also judged: class accuracy and demo-FID
against held-out procedural-world images of the same classes. Text-to-image
models are judged on what their prompts ask for: the time of day, the sun's or
moon's side and height and named colours, by pixel measures of the procedural
world, and on class where a prompt line names one.

  --model DIR         model bundle (default: the bundled demo model; with --prompts,
                      the bundled text-to-image demo, resources/models/janus-pro-demo)
  --random ARCH       an official architecture with seeded random weights instead of --model:
                      llamagen-demo, llamagen-B@256, llamagen-L@384, llamagen-XL@384, ...,
                      var-demo, var-d16, var-d20, var-d24, var-d30, var-d36 (512 px), var-d16@512,
                      mar-demo, mar-B, mar-L, mar-H,
                      janus-pro-1b, janus-pro-7b, janus-pro-tiny (text-to-image; byte-level tokenizer)
                      (written to a temporary folder in f16 and removed afterwards)
  --policies LIST     comma-separated specs; a comma before KEY= continues a spec:
                      full,streaming:rho=1/4,sink=4,linear:rho=1/6,n_init=4
  --steps N           masked (MAR) models: decoding steps (default: the model's, else 64)
  --batch N           images per generation run (default 1)
  --images M          images per policy (default: --batch); runs of --batch, the last may be smaller
  --seed S            run r uses seed S + r (default 0)
  --classes IDS       class ids cycled over the images (default 0, 1, 2, ...)
  --prompts FILE      text-to-image models: one prompt a line, one prompt per run (its --batch
                      images), cycled over the runs (default: four built-in scene prompts);
                      '#' lines are comments. A line CLASS<TAB>PROMPT names the procedural-world
                      class the picture should show (judged for class accuracy and demo-FID on a
                      demo model); `kvstudio-cli world --prompt-file FILE` writes such files
  --cfg F             classifier-free guidance scale (default: the model's, else 4.0)
  --temperature F, --top-k N, --top-p F   sampling (default: the model's)
  --sampler-rng R     auto (default: draw on the compute device) | cpu (draw on the CPU on
                      every device: a GPU run then gives the CPU run's tokens)
  --no-warmup         skip the untimed full-cache run made before measuring
  --rounds R          timing rounds: each round runs every policy once, in turn; speed is each
                      policy's fastest round (default 1; use 3+ on a busy machine)
  --device D          auto|cpu|cuda|cuda:N (default auto: the first GPU, else the CPU;
                      cuda is cuda:0, cuda:N picks GPU N)
  --threads N         CPU threads (default: all cores)
  --dtype T           weights and KV cache: auto|f32|bf16|f16 (default auto: bf16 on CUDA, f32 on the CPU)
  --cuda-graphs on|off
                      LlamaGen models on a GPU: the decode step's fixed-shape work as CUDA graphs
                      (default on; KVSTUDIO_CUDA_GRAPHS=0 turns them off too). The table and the
                      JSON's "cuda_graphs" say which path ran: on, off, partly, failed, not built
                      (a build without them), n/a (the CPU, other families)
  --max-memory GiB    also find, per policy, the largest batch whose run stays under this cap, and
                      the image tokens/s at it (beside the same-batch comparison): the batch is
                      doubled from 1 while it fits, then bisected; each probe is one run of that
                      many images, and --rounds R times the largest batch R times (the
                      fastest counts). On a GPU the measure is the device's peak allocated memory
                      (weights included), and running out of device memory counts as not
                      fitting. On the CPU it is the engine's accounting: the weights at the run
                      dtype plus the KV cache's peak allocation (activations and the rest of the
                      process are not counted; the process peak is shown beside it)
  --max-batch N       the largest batch --max-memory tries (1..256, default 256)
  --json FILE         write the records as a JSON array (with --max-memory, each record's
                      "max_memory" holds its search)
  --chart FILE.png    write a bar chart (KV share of full, tokens/s)
  --out DIR           keep the results in DIR as they are made: one JSON line per image
                      (DIR/shard-I-of-N.jsonl), the shard's statistics (DIR/shard-I-of-N.json,
                      with the summed classifier features demo-FID merges from) and the settings
                      (DIR/settings.json). Run again with the same DIR, a stopped bench resumes after
                      its last finished run; other settings are refused, naming the one that differs
  --shard I/N         with --out: make only shard I (0..N-1) of N: the runs r (of --batch images,
                      seed S + r) with r mod N = I, every policy of each; merge the shards with
                      `kvstudio-cli bench merge DIR...`
  --save-images       with --out: every image as DIR/images/NNNNNN-POLICY.png, with the usual metadata
  --sweep KEY=V1,V2,...   every policy of --policies (but full) at every value of its parameter KEY
                      (e.g. rho=1/2,1/4,1/8): the specs are policies x values; --chart then draws
                      quality (class accuracy, else token agreement) and KV memory against KEY
  --grid FILE.png     with --sweep: the first image (seed S, the first class or prompt) of every
                      spec, a row per policy and a column per value, the full cache's at the left
                      (with --out it is drawn from DIR's images: add --save-images)
  --quiet             no progress output

usage: kvstudio-cli bench merge DIR... [--json FILE] [--chart FILE.png] [--grid FILE.png]

Merges the shards in the folders (of one bench: the same settings, every run once) and prints
the table of the unsharded bench; the JSON goes to --json FILE (default DIR/bench.json, the first
folder). Speed is each policy's image tokens over the summed time of its runs. A sweep's chart
and grid (from the saved images) are drawn as by the bench itself.
)";

// "I/N" of --shard: 0 <= I < N.
std::pair<int64_t, int64_t> parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  if (slash == std::string::npos)
    throw InvalidArgumentError("option --shard expects I/N (shard I of N, 0 <= I < N), got '" + text + "'");
  const int64_t index = parse_int("--shard", text.substr(0, slash));
  const int64_t count = parse_int("--shard", text.substr(slash + 1));
  if (count < 1 || count > 100000 || index < 0 || index >= count)
    throw InvalidArgumentError("option --shard expects I/N with 0 <= I < N, got '" + text + "'");
  return {index, count};
}

volatile std::sig_atomic_t g_interrupted = 0;
void on_sigint(int) { g_interrupted = 1; }

std::vector<int64_t> parse_id_list(const std::string& option, const std::string& text) {
  std::vector<int64_t> ids;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) ids.push_back(parse_int(option, item));
  if (ids.empty()) throw InvalidArgumentError("option " + option + " needs at least one id");
  return ids;
}

std::string format_mib(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", bytes / (1024.0 * 1024.0));
  return text;
}

}  // namespace

// What `bench` was asked: the options checked one by one (each refusal names
// its option) before any model is opened.
struct BenchCommand {
  BenchOptions options;
  std::optional<BenchSweep> sweep;
  std::string out_dir, grid_path, json_path, chart_path;
  bool quiet = false;
};

BenchCommand parse_bench_command(const ArgParser& p) {
  if (p.has("--model") && p.has("--random"))
    throw InvalidArgumentError("options --model and --random exclude each other");
  BenchCommand c;
  BenchOptions& options = c.options;
  if (p.has("--random")) options.random_arch = p.get("--random", "");
  else options.model_path = p.get("--model", p.has("--prompts") ? default_text_model_path() : default_model_path());
  options.policies = split_policy_list(p.require("--policies"));
  std::optional<BenchSweep>& sweep = c.sweep;
  if (p.has("--sweep")) {
    sweep = make_bench_sweep(options.policies, p.get("--sweep", ""));
    options.policies = sweep->bench_policies();
  }
  c.grid_path = p.get("--grid", "");
  const std::string& grid_path = c.grid_path;
  if (!grid_path.empty() && !sweep) throw InvalidArgumentError("option --grid applies with --sweep");
  options.batch = p.get_int("--batch", 1);
  if (options.batch < 1 || options.batch > 256) throw InvalidArgumentError("option --batch must be between 1 and 256");
  options.images = p.get_int("--images", options.batch);
  if (options.images < 1 || options.images > 100000)
    throw InvalidArgumentError("option --images must be between 1 and 100000");
  options.seed = p.get_u64("--seed", 0);
  if (p.has("--classes")) options.classes = parse_id_list("--classes", p.get("--classes", ""));
  if (p.has("--prompts")) options.prompts = read_prompt_file(p.get("--prompts", ""));
  if (p.has("--cfg")) options.cfg = p.get_double("--cfg", 0);
  if (p.has("--temperature")) options.temperature = p.get_double("--temperature", 0);
  if (p.has("--top-k")) options.top_k = p.get_int("--top-k", 0);
  if (p.has("--top-p")) options.top_p = p.get_double("--top-p", 0);
  options.sampler_rng = parse_sampler_rng(p.get("--sampler-rng", "auto"));
  if (p.has("--steps")) {
    options.steps = p.get_int("--steps", 0);
    if (options.steps < 1 || options.steps > 4096)
      throw InvalidArgumentError("option --steps must be between 1 and 4096");
  }
  options.warmup = !p.flag("--no-warmup");
  options.rounds = p.get_int("--rounds", 1);
  if (options.rounds < 1 || options.rounds > 100)
    throw InvalidArgumentError("option --rounds must be between 1 and 100");
  options.device = p.get("--device", "auto");
  parse_device(options.device);  // a malformed device name fails before any work
  if (p.has("--max-memory")) {
    const double gib = p.get_double("--max-memory", 0);
    if (!(gib > 0) || gib > 1024 * 1024)
      throw InvalidArgumentError("option --max-memory must be a positive number of GiB, e.g. 24 or 0.5");
    options.max_memory_bytes = static_cast<int64_t>(gib * 1024.0 * 1024.0 * 1024.0);
  }
  if (p.has("--max-batch")) {
    if (!p.has("--max-memory")) throw InvalidArgumentError("option --max-batch applies with --max-memory");
    options.max_batch_limit = p.get_int("--max-batch", 256);
    if (options.max_batch_limit < 1 || options.max_batch_limit > 256)
      throw InvalidArgumentError("option --max-batch must be between 1 and 256");
  }
  options.threads = static_cast<int>(p.get_int("--threads", 0));
  options.dtype = p.get("--dtype", "auto");
  parse_run_dtype(options.dtype);  // an unknown name fails before any work
  options.cuda_graphs = p.get("--cuda-graphs", "on");
  parse_cuda_graphs(options.cuda_graphs);
  c.out_dir = p.get("--out", "");
  const std::string& out_dir = c.out_dir;
  if (p.has("--shard")) {
    if (out_dir.empty()) throw InvalidArgumentError("option --shard needs --out DIR (where the shard's results go)");
    std::tie(options.shard_index, options.shard_count) = parse_shard(p.get("--shard", ""));
  }
  options.save_images = p.flag("--save-images");
  if (options.save_images && out_dir.empty())
    throw InvalidArgumentError("option --save-images needs --out DIR (where the images go)");
  if (!out_dir.empty() && options.max_memory_bytes > 0)
    throw InvalidArgumentError("option --max-memory runs in one process; it does not apply with --out");
  const bool sharded = options.shard_count > 1;
  if (sharded && (p.has("--json") || p.has("--chart") || p.has("--grid")))
    throw InvalidArgumentError(
        "options --json, --chart and --grid apply to the whole bench: give them to `bench merge`");
  if (!grid_path.empty()) {
    check_bench_output("--grid", grid_path, ".png");
    if (options.max_memory_bytes > 0) throw InvalidArgumentError("option --grid does not apply with --max-memory");
    if (!out_dir.empty() && !options.save_images)
      throw InvalidArgumentError("option --grid with --out draws the images saved in DIR: add --save-images");
  }
  c.json_path = p.get("--json", "");
  c.chart_path = p.get("--chart", "");
  if (!c.json_path.empty()) check_bench_output("--json", c.json_path, "");
  if (!c.chart_path.empty()) check_bench_output("--chart", c.chart_path, ".png");
  c.quiet = p.flag("--quiet");
  return c;
}

// One line per finished run (its speed and memory, so that a long bench says
// what it measured as it goes) and, on a terminal, the token count in place.
void print_bench_progress(const BenchProgress& b, bool tty) {
  if (b.probe_batch > 0) {
    // A run of the largest-batch search.
    if (b.run_finished)
      std::fprintf(stderr, "%s[%lld/%lld] %-28s batch %lld %s (%.2f s)\n", tty ? "\r\033[K" : "",
                   static_cast<long long>(b.policy_index + 1), static_cast<long long>(b.policy_count), b.policy.c_str(),
                   static_cast<long long>(b.probe_batch),
                   b.round > 0    ? ("timed again, round " + std::to_string(b.round + 1)).c_str()
                   : b.probe_fits ? "fits under the cap"
                                  : "does not fit",
                   b.run_elapsed_ms / 1000.0);
    else if (tty && (b.tokens_done % 16 == 0 || b.tokens_done == b.tokens_total))
      std::fprintf(stderr, "\r\033[K[%lld/%lld] %-28s batch %lld  token %lld/%lld",
                   static_cast<long long>(b.policy_index + 1), static_cast<long long>(b.policy_count), b.policy.c_str(),
                   static_cast<long long>(b.probe_batch), static_cast<long long>(b.tokens_done),
                   static_cast<long long>(b.tokens_total));
    std::fflush(stderr);
    return;
  }
  if (b.run_finished) {
    const std::string round = b.rounds > 1
                                  ? " (round " + std::to_string(b.round + 1) + "/" + std::to_string(b.rounds) + ")"
                                  : std::string();
    // Each run's own speed and memory, so that a long bench says what it
    // measured as it goes (and a run that is stopped still reported its runs).
    const std::string device_peak = b.run_device_peak_bytes >= 0
                                        ? ", device peak " + format_mib(static_cast<double>(b.run_device_peak_bytes)) +
                                              " MiB"
                                        : std::string();
    std::fprintf(stderr, "%s[%lld/%lld] %-28s run %lld/%lld%s done in %.2f s (%.1f tok/s, KV %s MiB%s)\n",
                 tty ? "\r\033[K" : "", static_cast<long long>(b.policy_index + 1),
                 static_cast<long long>(b.policy_count), b.policy.c_str(), static_cast<long long>(b.run_index + 1),
                 static_cast<long long>(b.run_count), round.c_str(), b.run_elapsed_ms / 1000.0, b.run_tokens_per_s,
                 format_mib(static_cast<double>(b.run_kv_bytes_allocated)).c_str(), device_peak.c_str());
  } else if (tty && (b.tokens_done % 16 == 0 || b.tokens_done == b.tokens_total)) {
    std::fprintf(stderr, "\r\033[K[%lld/%lld] %-28s run %lld/%lld  token %lld/%lld",
                 static_cast<long long>(b.policy_index + 1), static_cast<long long>(b.policy_count), b.policy.c_str(),
                 static_cast<long long>(b.run_index + 1), static_cast<long long>(b.run_count),
                 static_cast<long long>(b.tokens_done), static_cast<long long>(b.tokens_total));
  }
  std::fflush(stderr);
}

int cmd_bench(const std::vector<std::string>& args) {
  if (!args.empty() && args[0] == "merge") return cmd_bench_merge({args.begin() + 1, args.end()});
  ArgParser p(args, {"--model",       "--random", "--policies",    "--batch", "--images", "--seed",       "--classes",
                     "--prompts",     "--cfg",    "--temperature", "--top-k", "--top-p",  "--device",     "--threads",
                     "--json",        "--chart",  "--rounds",      "--steps", "--dtype",  "--max-memory", "--max-batch",
                     "--sampler-rng", "--out",    "--shard",       "--sweep", "--grid",   "--cuda-graphs"},
              {"--quiet", "--no-warmup", "--help", "--save-images"}, 0);
  if (p.flag("--help")) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  const BenchCommand command = parse_bench_command(p);
  const BenchOptions& options = command.options;
  const std::optional<BenchSweep>& sweep = command.sweep;
  const std::string &out_dir = command.out_dir, &grid_path = command.grid_path;
  const bool quiet = command.quiet, sharded = options.shard_count > 1;
  const bool tty = ::isatty(STDERR_FILENO) != 0;
  auto progress = [&](const BenchProgress& b) {
    if (!quiet) print_bench_progress(b, tty);
  };

  g_interrupted = 0;
  auto previous = std::signal(SIGINT, on_sigint);
  std::vector<BenchRecord> records;
  std::optional<BenchOutputDir> folder;
  size_t resumed = 0;                 // runs of this shard done before
  std::vector<RgbImage> grid_images;  // a sweep's grid without --out: run 0's first images, full first
  try {
    if (out_dir.empty() && grid_path.empty()) {
      records = run_policy_bench(options, progress, [] { return g_interrupted != 0; });
    } else if (out_dir.empty()) {
      // A sweep's grid: the first image of every spec, kept as run 0 is made.
      BenchResults results;
      run_bench_shard(
          options, results, {},
          [&](const BenchRunOutput& run, const BenchResults&) {
            if (run.run != 0) return;
            for (const auto& made : run.policies) grid_images.push_back(made.result->images.at(0));
          },
          progress, [] { return g_interrupted != 0; });
      records = summarize_bench(results);
    } else {
      nlohmann::json settings = bench_settings(options, KVSTUDIO_VERSION);
      if (sweep) settings["sweep"] = to_json(*sweep);
      folder.emplace(out_dir, settings, options.shard_index, options.shard_count, KVSTUDIO_VERSION);
      BenchResults& results = folder->results();
      resumed = results.runs.size();
      const std::set<int64_t> elsewhere = folder->done_elsewhere();
      if (!quiet && (resumed > 0 || !elsewhere.empty()))
        std::fprintf(stderr, "%s: %zu runs of this shard already done%s; making the rest\n", out_dir.c_str(), resumed,
                     elsewhere.empty() ? "" : (", " + std::to_string(elsewhere.size()) + " by other shards").c_str());
      run_bench_shard(
          options, results, elsewhere,
          [&](const BenchRunOutput& run, const BenchResults& r) { folder->record_run(run, r); }, progress,
          [] { return g_interrupted != 0; });
      folder->write_statistics(results);
      if (!sharded && missing_runs(results).empty()) records = summarize_bench(results);
    }
  } catch (...) {
    std::signal(SIGINT, previous);
    if (!quiet && tty) std::fputs("\r\033[K", stderr);
    throw;
  }
  std::signal(SIGINT, previous);

  if (records.empty()) {
    // A shard (or a bench whose other runs were made by other shards in DIR).
    const BenchResults& results = folder->results();
    const int64_t runs = bench_run_count(options.images, options.batch);
    int64_t owned = 0;
    for (int64_t r = options.shard_index; r < runs; r += options.shard_count) ++owned;
    std::printf(
        "shard %lld/%lld: %zu of its %lld runs done in %s (%zu made now); the bench has %lld runs of %lld "
        "images\n",
        static_cast<long long>(options.shard_index), static_cast<long long>(options.shard_count), results.runs.size(),
        static_cast<long long>(owned), out_dir.c_str(), results.runs.size() - resumed, static_cast<long long>(runs),
        static_cast<long long>(options.batch));
    std::printf("when every shard has finished: kvstudio-cli bench merge %s\n", out_dir.c_str());
    return 0;
  }
  print_bench_table(records);
  if (options.max_memory_bytes > 0) print_max_batch_table(records);
  write_bench_files(records, command.json_path, command.chart_path, sweep ? &*sweep : nullptr);
  if (!grid_path.empty() && folder) {
    write_sweep_grid_from_folders(*sweep, {out_dir}, grid_path);
  } else if (!grid_path.empty()) {
    // grid_images follow BenchOptions::policies: full, then the sweep's specs row by row.
    std::vector<std::vector<RgbImage>> rows(sweep->specs.size());
    size_t next = 1;
    for (size_t row = 0; row < sweep->specs.size(); ++row)
      for (size_t v = 0; v < sweep->specs[row].size(); ++v) rows[row].push_back(grid_images.at(next++));
    write_png(grid_path, draw_sweep_grid(*sweep, grid_images.at(0), rows));
  }
  return 0;
}

}  // namespace kvs::cli
