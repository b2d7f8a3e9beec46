// kvstudio-cli bench: a thin shell over run_policy_bench (engine/bench/policy_bench.h).
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/cli/arg_parser.h"
#include "app/cli/commands.h"
#include "app/cli/default_paths.h"
#include "engine/bench/bench_chart.h"
#include "engine/bench/policy_bench.h"
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
  --quiet             no progress output
)";

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

void check_output(const std::string& option, const std::string& path, const std::string& extension) {
  if (!extension.empty() && fs::path(path).extension() != extension)
    throw InvalidArgumentError(option + " must name a " + extension + " file, got '" + path + "'");
  const fs::path dir = fs::path(path).parent_path();
  std::error_code ec;
  if (!dir.empty() && !fs::is_directory(dir, ec)) throw FileError("output folder " + dir.string() + " does not exist");
}

std::string fixed(double v, int digits) {
  if (std::isnan(v)) return "-";
  if (std::isinf(v)) return "inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// The prompted attributes a text-family bench judged: column name, accuracy, cases.
struct AttributeColumn {
  const char* header;
  double BenchRecord::*accuracy;
  int64_t BenchRecord::*judged;
};
constexpr AttributeColumn kAttributeColumns[] = {
    {"time %", &BenchRecord::time_accuracy, &BenchRecord::time_judged},
    {"sun side %", &BenchRecord::light_side_accuracy, &BenchRecord::light_side_judged},
    {"sun height %", &BenchRecord::light_height_accuracy, &BenchRecord::light_height_judged},
    {"colour %", &BenchRecord::colour_accuracy, &BenchRecord::colour_judged},
    {"attr %", &BenchRecord::attribute_accuracy, &BenchRecord::attribute_judged},
};

// Rows of cells as aligned columns: the first (the policy) left-aligned, the
// numbers right-aligned.
void print_columns(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    width.resize(std::max(width.size(), row.size()), 0);
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      const std::string pad(width[c] - row[c].size(), ' ');
      line += c == 0 ? row[c] + pad : "  " + pad + row[c];
    }
    std::printf("%s\n", line.c_str());
  }
}

void print_table(const std::vector<BenchRecord>& records) {
  // Demo bundles (with an evaluation classifier) add class accuracy and demo-FID;
  // text models, the attributes their prompts asked for (every policy ran the
  // same prompts, so the first record's counts stand for all).
  const bool judged = !records.empty() && !std::isnan(records[0].class_accuracy);
  std::vector<const AttributeColumn*> attributes;
  for (const AttributeColumn& a : kAttributeColumns)
    if (!records.empty() && records[0].*a.judged > 0) attributes.push_back(&a);
  const FamilyDescription* family = records.empty() ? nullptr : find_family_description(records[0].family);
  // Families without a KV cache (MAR): FLOPs and time instead.
  const bool masked = family && family->measures_flops && !family->measures_kv_bytes;
  // Scale units (VAR): a whole scale passes through every layer's cache, so the
  // peak within a unit matters as much as what is kept at the end.
  const bool scales = family && family->unit == GenerationUnit::Scale;
  std::vector<std::string> header{"policy", "KV MiB",  "% full",  "alloc MiB", "alloc/log",
                                  "tok/s",  "speedup", "agree %", "PSNR dB",   "SSIM"};
  if (scales) header.insert(header.begin() + 3, {"peak MiB", "peak % full"});
  if (masked) header = {"policy", "GFLOPs/img", "% full FLOPs", "s/img", "speedup", "PSNR dB", "SSIM"};
  if (judged) header.insert(header.end(), {"class acc %", "demo-FID"});
  for (const AttributeColumn* a : attributes) header.push_back(a->header);
  std::vector<std::vector<std::string>> rows{header};
  for (const auto& r : records) {
    const double mib = 1048576.0;
    if (masked) {
      rows.push_back({r.policy, fixed(r.flops / 1e9, 2), fixed(100.0 * r.flops_vs_full, 1),
                      fixed(r.images > 0 ? r.generation_ms / 1000.0 / r.images : NAN, 2), fixed(r.speedup_vs_full, 2),
                      r.identical_images == r.images ? "inf" : fixed(r.psnr, 2), fixed(r.ssim, 4)});
      if (judged) rows.back().insert(rows.back().end(), {fixed(100.0 * r.class_accuracy, 1), fixed(r.demo_fid, 2)});
      continue;
    }
    rows.push_back(
        {r.policy, fixed(r.kv_bytes_logical / mib, 2),
         fixed(r.kv_bytes_full > 0 ? 100.0 * r.kv_bytes_logical / r.kv_bytes_full : NAN, 1),
         fixed(r.kv_bytes_allocated / mib, 2),
         fixed(r.kv_bytes_logical > 0 ? static_cast<double>(r.kv_bytes_allocated) / r.kv_bytes_logical : NAN, 2),
         fixed(r.tokens_per_s, 1), fixed(r.speedup_vs_full, 2), fixed(100.0 * r.token_agreement, 1),
         // every image equal to the reference: PSNR is infinite
         r.identical_images == r.images ? "inf" : fixed(r.psnr, 2), fixed(r.ssim, 4)});
    if (scales)
      rows.back().insert(rows.back().begin() + 3,
                         {fixed(r.kv_bytes_peak / mib, 2),
                          fixed(r.kv_bytes_full > 0 ? 100.0 * r.kv_bytes_peak / r.kv_bytes_full : NAN, 1)});
    if (judged) rows.back().insert(rows.back().end(), {fixed(100.0 * r.class_accuracy, 1), fixed(r.demo_fid, 2)});
    for (const AttributeColumn* a : attributes) rows.back().push_back(fixed(100.0 * (r.*a->accuracy), 1));
  }
  print_columns(rows);
  if (records.empty()) return;
  // The device description names a dtype other than f32; the line always names it.
  std::string where = records[0].device;
  if (where.find(records[0].dtype) == std::string::npos) where += ", " + records[0].dtype;
  std::printf("model %s on %s, %dx%d tokens%s, %lld images per policy in runs of %lld%s\n", records[0].model.c_str(),
              where.c_str(), static_cast<int>(records[0].grid_height), static_cast<int>(records[0].grid_width),
              records[0].steps > 0 ? (", " + std::to_string(records[0].steps) + " decoding steps").c_str() : "",
              static_cast<long long>(records[0].images), static_cast<long long>(records[0].batch),
              records[0].rounds > 1
                  ? (", speed: fastest of " + std::to_string(records[0].rounds) + " interleaved rounds").c_str()
                  : "");
  const BenchRecord& r = records[0];
  if (judged && r.class_judged != r.images)  // prompts of which only some name a class
    std::printf("class accuracy and demo-FID on %lld images (demo-FID against %lld held-out images)\n",
                static_cast<long long>(r.class_judged), static_cast<long long>(r.quality_reference_images));
  if (!attributes.empty())
    std::printf("prompted attributes judged: time %lld, sun side %lld, sun height %lld, colour %lld cases\n",
                static_cast<long long>(r.time_judged), static_cast<long long>(r.light_side_judged),
                static_cast<long long>(r.light_height_judged), static_cast<long long>(r.colour_judged));
}

std::string format_mib(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", bytes / (1024.0 * 1024.0));
  return text;
}

// The largest batch under --max-memory, per policy.
void print_max_batch_table(const std::vector<BenchRecord>& records) {
  if (records.empty() || !records[0].max_memory) return;
  const MaxBatchResult& first = *records[0].max_memory;
  const double mib = 1048576.0;
  const double cap = static_cast<double>(first.cap_bytes);
  const std::string cap_text = cap >= mib * 1024.0 ? fixed(cap / (mib * 1024.0), 2) + " GiB"
                                                   : fixed(cap / mib, 1) + " MiB";
  std::printf("\nlargest batch under %s (%s; search up to batch %lld)\n", cap_text.c_str(), first.measure.c_str(),
              static_cast<long long>(first.batch_limit));
  std::vector<std::vector<std::string>> rows{
      {"policy", "max batch", "tok/s", "peak MiB", "vs full", "process peak MiB", "probes"}};
  for (const auto& r : records) {
    if (!r.max_memory) continue;
    const MaxBatchResult& m = *r.max_memory;
    const bool fits = m.max_batch > 0;
    rows.push_back({r.policy, fits ? std::to_string(m.max_batch) + (m.at_limit ? "+" : "") : "none",
                    fits ? fixed(m.tokens_per_s, 1) : "-", fits ? fixed(m.peak_bytes / mib, 1) : "-",
                    fixed(m.ratio_vs_full, 2), fits ? fixed(m.process_peak_bytes / mib, 1) : "-",
                    std::to_string(m.probes.size())});
  }
  print_columns(rows);
  if (std::any_of(records.begin(), records.end(),
                  [](const BenchRecord& r) { return r.max_memory && r.max_memory->at_limit; }))
    std::printf("+: fits at the largest batch tried (--max-batch); the largest that fits may be larger\n");
  if (first.weights_bytes > 0)
    std::printf("peak = weights %s MiB + the KV cache's peak; vs full: tokens/s over full's at full's largest batch\n",
                fixed(first.weights_bytes / mib, 1).c_str());
  else std::printf("vs full: tokens/s over full's at full's largest batch\n");
}

}  // namespace

int cmd_bench(const std::vector<std::string>& args) {
  ArgParser p(args, {"--model",   "--random",     "--policies",  "--batch",       "--images", "--seed",
                     "--classes", "--prompts",    "--cfg",       "--temperature", "--top-k",  "--top-p",
                     "--device",  "--threads",    "--json",      "--chart",       "--rounds", "--steps",
                     "--dtype",   "--max-memory", "--max-batch", "--sampler-rng"},
              {"--quiet", "--no-warmup", "--help"}, 0);
  if (p.flag("--help")) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  if (p.has("--model") && p.has("--random"))
    throw InvalidArgumentError("options --model and --random exclude each other");
  BenchOptions options;
  if (p.has("--random")) options.random_arch = p.get("--random", "");
  else options.model_path = p.get("--model", p.has("--prompts") ? default_text_model_path() : default_model_path());
  options.policies = split_policy_list(p.require("--policies"));
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
  const std::string json_path = p.get("--json", "");
  const std::string chart_path = p.get("--chart", "");
  if (!json_path.empty()) check_output("--json", json_path, "");
  if (!chart_path.empty()) check_output("--chart", chart_path, ".png");

  const bool quiet = p.flag("--quiet");
  const bool tty = ::isatty(STDERR_FILENO) != 0;
  auto progress = [&](const BenchProgress& b) {
    if (quiet) return;
    if (b.probe_batch > 0) {
      // A run of the largest-batch search.
      if (b.run_finished)
        std::fprintf(stderr, "%s[%lld/%lld] %-28s batch %lld %s (%.2f s)\n", tty ? "\r\033[K" : "",
                     static_cast<long long>(b.policy_index + 1), static_cast<long long>(b.policy_count),
                     b.policy.c_str(), static_cast<long long>(b.probe_batch),
                     b.round > 0    ? ("timed again, round " + std::to_string(b.round + 1)).c_str()
                     : b.probe_fits ? "fits under the cap"
                                    : "does not fit",
                     b.run_elapsed_ms / 1000.0);
      else if (tty && (b.tokens_done % 16 == 0 || b.tokens_done == b.tokens_total))
        std::fprintf(stderr, "\r\033[K[%lld/%lld] %-28s batch %lld  token %lld/%lld",
                     static_cast<long long>(b.policy_index + 1), static_cast<long long>(b.policy_count),
                     b.policy.c_str(), static_cast<long long>(b.probe_batch), static_cast<long long>(b.tokens_done),
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
                                          ? ", device peak " +
                                                format_mib(static_cast<double>(b.run_device_peak_bytes)) + " MiB"
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
  };

  g_interrupted = 0;
  auto previous = std::signal(SIGINT, on_sigint);
  std::vector<BenchRecord> records;
  try {
    records = run_policy_bench(options, progress, [] { return g_interrupted != 0; });
  } catch (...) {
    std::signal(SIGINT, previous);
    if (!quiet && tty) std::fputs("\r\033[K", stderr);
    throw;
  }
  std::signal(SIGINT, previous);

  print_table(records);
  if (options.max_memory_bytes > 0) print_max_batch_table(records);
  if (!json_path.empty()) {
    std::ofstream out(json_path);
    out << to_json(records).dump(2) << "\n";
    if (!out) throw FileError("cannot write " + json_path);
  }
  if (!chart_path.empty()) write_png(chart_path, draw_bench_chart(records));
  return 0;
}

}  // namespace kvs::cli
