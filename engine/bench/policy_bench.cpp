#include "engine/bench/policy_bench.h"

#include <nlohmann/json.hpp>

#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <system_error>

#include "engine/bench/attribute_judge.h"
#include "engine/bench/bench_shard.h"
#include "engine/bench/demo_quality_judge.h"
#include "engine/cache/policies/policy_registry.h"
#include "engine/core/cuda_graphs.h"
#include "engine/core/device.h"
#include "engine/core/errors.h"
#include "engine/io/bundle_file_path.h"
#include "engine/io/model_bundle.h"
#include "engine/io/safetensors_reader.h"
#include "engine/metrics/device_memory.h"
#include "engine/metrics/image_metrics.h"
#include "engine/metrics/process_memory.h"
#include "engine/models/family_registry.h"
#include "engine/models/generation_session.h"
#include "engine/models/model_catalog.h"
#include "engine/world/prompt_attributes.h"
#include "engine/world/scene_world.h"

namespace kvs {
namespace {
namespace fs = std::filesystem;

// The family of a `--random` architecture: the one whose name prefixes it.
const ModelFamily& family_of_architecture(const std::string& text) {
  std::string examples;
  for (const ModelFamily* f : model_families()) {
    if (text.rfind(f->name() + "-", 0) == 0) return *f;
    const auto& presets = f->description().random_presets;
    const bool has_demo = std::find(presets.begin(), presets.end(), "demo") != presets.end();
    examples += (examples.empty() ? "" : ", ") + (has_demo || presets.empty() ? f->name() + "-demo" : presets.front());
  }
  throw InvalidArgumentError("--random: unknown architecture '" + text + "' (expected <family>-<size>, e.g. " +
                             examples + "; families: " + supported_family_names() + ")");
}

// A temporary bundle folder, removed when the benchmark ends (also on errors).
struct TemporaryDir {
  fs::path path;
  TemporaryDir() {
    std::random_device rd;
    path = fs::temp_directory_path() /
           ("kvstudio-bench-" + std::to_string(::getpid()) + "-" + std::to_string(rd() % 1000000));
  }
  ~TemporaryDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  TemporaryDir(const TemporaryDir&) = delete;
  TemporaryDir& operator=(const TemporaryDir&) = delete;
};

// Collects what GenerationResult does not carry: the largest allocation and the
// generation time up to the last token (VQ decoding excluded).
class RunSink : public EventSink {
 public:
  RunSink(GenerationSession& session, BenchProgress base, const BenchProgressFn& progress,
          const std::function<bool()>& cancelled)
      : session_(session), base_(std::move(base)), progress_(progress), cancelled_(cancelled) {}

  void on_event(const GenerationEvent& event) override {
    if (const auto* t = std::get_if<TokenProgressEvent>(&event)) {
      generation_ms = t->elapsed_ms;
      if (cancelled_ && cancelled_()) session_.cancel();
      if (progress_) {
        BenchProgress p = base_;
        p.tokens_done = t->tokens_done;
        p.tokens_total = t->tokens_total;
        p.run_elapsed_ms = t->elapsed_ms;
        progress_(p);
      }
    } else if (const auto* u = std::get_if<UnitDoneEvent>(&event)) {
      allocated_peak = std::max(allocated_peak, u->kv_bytes_allocated);
      if (u->device_memory && u->device_memory->available)
        device_peak = std::max(device_peak, u->device_memory->peak_allocated_bytes);
    }
  }

  double generation_ms = 0;
  int64_t allocated_peak = 0;
  int64_t device_peak = -1;  // GPU runs: the allocator's peak (each run resets it)

 private:
  GenerationSession& session_;
  BenchProgress base_;
  const BenchProgressFn& progress_;
  const std::function<bool()>& cancelled_;
};

nlohmann::json number_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

// The CUDA device a bench runs on (-1: the CPU), as choose_device resolves it.
int bench_cuda_index(const std::string& device) {
  const DeviceSpec spec = parse_device(device);
  if (spec.kind == DeviceKind::Cpu) return -1;
  if (spec.kind == DeviceKind::Auto && !cuda_available()) return -1;
  return std::max(0, spec.cuda_index);
}

// The weights at the run dtype: every floating-point tensor of the bundle's
// safetensors files at `element_bytes`, the others as stored.
int64_t weights_bytes_at(const io::ModelBundle& bundle, int64_t element_bytes) {
  std::vector<std::string> files;
  for (const auto& [key, value] : bundle.manifest.at("files").items()) {
    const std::string name = value.is_string() ? value.get<std::string>() : value.value("shared", std::string());
    if (name.size() > 12 && name.rfind(".safetensors") == name.size() - 12)
      files.push_back(*io::bundle_file_path(bundle, key));
  }
  int64_t bytes = 0;
  for (const std::string& file : files) {
    const auto reader = io::SafetensorsReader::open(file);
    for (const io::TensorEntry& t : reader->index().tensors) {
      bytes += t.decodes_to_float() ? static_cast<int64_t>(t.numel()) * element_bytes
                                    : static_cast<int64_t>(t.nbytes());
    }
  }
  return bytes;
}

std::string mebibytes(int64_t bytes) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.1f MiB", static_cast<double>(bytes) / 1048576.0);
  return buffer;
}

}  // namespace

int64_t largest_fitting_batch(int64_t limit, const std::function<bool(int64_t)>& fits) {
  if (limit < 1) throw InvalidArgumentError("the largest batch to try must be at least 1");
  if (!fits(1)) return 0;
  int64_t good = 1, bad = 0;  // bad = 0: no batch found too large yet
  while (good < limit) {
    const int64_t next = std::min(limit, good * 2);
    if (fits(next)) {
      good = next;
    } else {
      bad = next;
      break;
    }
  }
  if (bad == 0) return good;  // fits at the limit
  while (bad - good > 1) {
    const int64_t mid = good + (bad - good) / 2;
    (fits(mid) ? good : bad) = mid;
  }
  return good;
}

nlohmann::json to_json(const MaxBatchResult& m) {
  nlohmann::json probes = nlohmann::json::array();
  for (const MaxBatchProbe& p : m.probes)
    probes.push_back({{"batch", p.batch},
                      {"fits", p.fits},
                      {"out_of_memory", p.out_of_memory},
                      {"peak_bytes", p.peak_bytes >= 0 ? nlohmann::json(p.peak_bytes) : nlohmann::json(nullptr)},
                      {"tokens_per_s", p.tokens_per_s}});
  return {{"cap_bytes", m.cap_bytes},
          {"measure", m.measure},
          {"max_batch", m.max_batch},
          {"batch_limit", m.batch_limit},
          {"at_limit", m.at_limit},
          {"tokens_per_s", m.tokens_per_s},
          {"peak_bytes", m.peak_bytes},
          {"weights_bytes", m.weights_bytes},
          {"kv_bytes_peak", m.kv_bytes_peak},
          {"process_peak_bytes", m.process_peak_bytes},
          {"ratio_vs_full", number_or_null(m.ratio_vs_full)},
          {"probes", probes}};
}

nlohmann::json to_json(const BenchRecord& r) {
  nlohmann::json params = nlohmann::json::object();
  for (const auto& [k, v] : r.params) params[k] = v;
  return {{"policy", r.policy},
          {"params", params},
          {"kv_bytes_logical", r.kv_bytes_logical},
          {"kv_bytes_allocated", r.kv_bytes_allocated},
          {"kv_bytes_peak", r.kv_bytes_peak},
          {"kv_bytes_full", r.kv_bytes_full},
          {"process_peak_bytes", r.process_peak_bytes},
          {"process_peak_is_own", r.process_peak_is_own},
          {"device_peak_bytes",
           r.device_peak_bytes >= 0 ? nlohmann::json(r.device_peak_bytes) : nlohmann::json(nullptr)},
          {"rounds", r.rounds},
          {"process_rss_delta_bytes", r.process_rss_delta_bytes},
          {"generation_ms", r.generation_ms},
          {"tokens_per_s", r.tokens_per_s},
          {"speedup_vs_full", r.speedup_vs_full},
          {"token_agreement", r.token_agreement},
          {"psnr", number_or_null(r.psnr)},
          {"ssim", number_or_null(r.ssim)},
          {"identical_images", r.identical_images},
          {"class_accuracy", number_or_null(r.class_accuracy)},
          {"demo_fid", number_or_null(r.demo_fid)},
          {"quality_reference_images", r.quality_reference_images},
          {"class_judged", r.class_judged},
          {"time_accuracy", number_or_null(r.time_accuracy)},
          {"time_judged", r.time_judged},
          {"light_side_accuracy", number_or_null(r.light_side_accuracy)},
          {"light_side_judged", r.light_side_judged},
          {"light_height_accuracy", number_or_null(r.light_height_accuracy)},
          {"light_height_judged", r.light_height_judged},
          {"colour_accuracy", number_or_null(r.colour_accuracy)},
          {"colour_judged", r.colour_judged},
          {"clouds_accuracy", number_or_null(r.clouds_accuracy)},
          {"clouds_judged", r.clouds_judged},
          {"attribute_accuracy", number_or_null(r.attribute_accuracy)},
          {"attribute_judged", r.attribute_judged},
          {"images", r.images},
          {"batch", r.batch},
          {"model", r.model},
          {"device", r.device},
          {"dtype", r.dtype},
          {"cuda_graphs", r.cuda_graphs},
          {"grid", {r.grid_height, r.grid_width}},
          {"family", r.family},
          {"steps", r.steps > 0 ? nlohmann::json(r.steps) : nlohmann::json(nullptr)},
          {"flops", number_or_null(r.flops)},
          {"flops_vs_full", number_or_null(r.flops_vs_full)},
          {"max_memory", r.max_memory ? to_json(*r.max_memory) : nlohmann::json(nullptr)}};
}

nlohmann::json to_json(const std::vector<BenchRecord>& records) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : records) out.push_back(to_json(r));
  return out;
}

const std::vector<BenchPrompt>& default_bench_prompts() {
  static const std::vector<BenchPrompt> prompts = {
      {"A close-up photo of a red fox in fresh snow, soft morning light", std::nullopt},
      {"An astronaut riding a horse on the moon, oil painting", std::nullopt},
      {"A watercolor of a lighthouse on a cliff at dawn", std::nullopt},
      {"A bowl of ramen with a soft-boiled egg, studio lighting, highly detailed", std::nullopt},
  };
  return prompts;
}

std::vector<BenchPrompt> read_prompt_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FileError("prompt file " + path + ": cannot read it");
  std::ostringstream text;
  text << in.rdbuf();
  std::vector<std::string> class_names;
  for (const auto& c : world::scene_classes()) class_names.push_back(c.name);
  return parse_prompt_file(text.str(), path, class_names);
}

namespace {

// The bench: validation, the optional largest-batch search, then the runs of
// options' shard that `results` lacks and `skip` does not name, added to
// `results` one run at a time. Returns the search's results (empty without one).
// The options' own ranges, before anything is opened.
void check_bench_options(const BenchOptions& options) {
  if (options.shard_count < 1 || options.shard_index < 0 || options.shard_index >= options.shard_count)
    throw InvalidArgumentError("bench: shard " + std::to_string(options.shard_index) + " of " +
                               std::to_string(options.shard_count) + " does not exist (shards 0.." +
                               std::to_string(options.shard_count - 1) + ")");
  if (options.model_path.empty() == options.random_arch.empty())
    throw InvalidArgumentError("bench needs exactly one of a model folder or a random architecture");
  if (options.batch < 1 || options.batch > 256) throw InvalidArgumentError("bench: batch must be between 1 and 256");
  if (options.images < 1) throw InvalidArgumentError("bench: images must be at least 1");
  if (options.rounds < 1 || options.rounds > 100) throw InvalidArgumentError("bench: rounds must be between 1 and 100");
  if (options.max_memory_bytes < 0) throw InvalidArgumentError("bench: the memory cap must be positive");
  if (options.max_memory_bytes > 0 && (options.max_batch_limit < 1 || options.max_batch_limit > 256))
    throw InvalidArgumentError("bench: the largest batch to try must be between 1 and 256");
  parse_device(options.device);  // a malformed device name fails before any work
}

// Policies: canonical specs, "full" first, duplicates once.
std::vector<PolicySpec> canonical_specs(const BenchOptions& options) {
  std::vector<PolicySpec> specs{parse_policy_spec("full")};
  for (const auto& text : options.policies) {
    PolicySpec spec = parse_policy_spec(text);
    find_policy(spec.name);
    const bool seen = std::any_of(specs.begin(), specs.end(),
                                  [&](const PolicySpec& s) { return s.text() == spec.text(); });
    if (!seen) specs.push_back(spec);
  }
  return specs;
}

// A bench once its options are checked against the model: the policies, the
// model (a bundle, or a random architecture whose weights are written only
// when a run needs them), the request every run starts from, and what
// conditions each image.
struct BenchPlan {
  explicit BenchPlan(const BenchOptions& o) : options(o) {}

  const BenchOptions& options;
  std::vector<PolicySpec> specs;
  std::optional<RandomArchitecture> random;
  const ModelFamily* family = nullptr;
  io::ModelBundle bundle;
  ModelSummary summary;
  GenerationRequest base;
  std::string dtype_name;
  bool takes_steps = false;
  bool text = false;    // prompts condition the images (else classes)
  bool search = false;  // --max-memory: the largest batch under the cap
  int cuda_index = -1;
  std::vector<int64_t> classes;      // per image (class families)
  std::vector<BenchPrompt> prompts;  // per run, cycled (text families)

  const FamilyDescription& described() const { return family->description(); }
  int64_t runs() const { return bench_run_count(options.images, options.batch); }

  // Run r under `policy`: its seed, and its images' classes or its prompt.
  GenerationRequest run_request(int64_t r, const PolicySpec& policy) const {
    GenerationRequest req = base;
    req.policy = policy;
    req.seed = options.seed + static_cast<uint64_t>(r);
    const int64_t first = r * options.batch, last = std::min(options.images, first + options.batch);
    if (text) {
      req.prompt = prompts[static_cast<size_t>(r) % prompts.size()].text;
      req.images = last - first;
    } else {
      req.class_ids.assign(classes.begin() + first, classes.begin() + last);
    }
    return req;
  }
  // A --max-memory probe at `batch` images under `policy` (the first run's seed and condition).
  GenerationRequest probe_request(int64_t batch, const PolicySpec& policy) const {
    GenerationRequest req = base;
    req.policy = policy;
    req.seed = options.seed;
    if (text) {
      req.prompt = prompts.front().text;
      req.images = batch;
    } else {
      for (int64_t i = 0; i < batch; ++i)
        req.class_ids.push_back(options.classes.empty()
                                    ? i % summary.num_classes
                                    : options.classes[static_cast<size_t>(i) % options.classes.size()]);
    }
    return req;
  }
  const BenchPrompt& prompt_of(int64_t image) const {
    return prompts[static_cast<size_t>(image / options.batch) % prompts.size()];
  }
  // Each image's class (judged for class accuracy and demo-FID when the bundle
  // ships a classifier; -1: none).
  int64_t label_of(int64_t image) const {
    if (!text) return classes[static_cast<size_t>(image)];
    const BenchPrompt& prompt = prompt_of(image);
    return prompt.class_id ? *prompt.class_id : -1;
  }
  // What a text family's image's prompt asks that the measures can judge (on
  // its class, when the prompt names one).
  world::PromptAttributes asked_of(int64_t image) const {
    const BenchPrompt& prompt = prompt_of(image);
    std::optional<int> asked_class;
    if (prompt.class_id) asked_class = static_cast<int>(*prompt.class_id);
    return world::measurable_attributes(world::read_prompt_attributes(prompt.text), asked_class);
  }
};

// The request every run starts from: the options over the bundle's sampling defaults.
GenerationRequest base_request(const BenchOptions& options, const ModelSamplingDefaults& defaults, bool takes_steps) {
  GenerationRequest base;
  base.cfg_scale = options.cfg.value_or(defaults.cfg_scale.value_or(4.0));
  base.sampling.temperature = options.temperature.value_or(defaults.temperature.value_or(1.0));
  base.sampling.top_k = options.top_k.value_or(defaults.top_k.value_or(0));
  base.sampling.top_p = options.top_p.value_or(defaults.top_p.value_or(1.0));
  base.sampling.rng = options.sampler_rng;
  base.device = options.device;
  base.threads = options.threads;
  base.dtype = options.dtype;
  base.cuda_graphs = options.cuda_graphs;
  if (takes_steps) {
    base.steps = options.steps > 0 ? options.steps : defaults.steps.value_or(64);
    base.cfg_schedule = defaults.cfg_schedule.value_or("linear");
  }
  return base;
}

// What conditions each image: classes checked against the model, or prompts
// for a text family.
void plan_conditions(BenchPlan& plan) {
  const BenchOptions& options = plan.options;
  const FamilyDescription& described = plan.described();
  plan.prompts = options.prompts;
  if (plan.text) {
    if (!options.classes.empty())
      throw InvalidArgumentError("bench: --classes does not apply to " + described.display_name +
                                 " models; give prompts with --prompts FILE");
    if (plan.prompts.empty()) plan.prompts = default_bench_prompts();
    const int64_t world_classes = static_cast<int64_t>(world::scene_classes().size());
    for (const BenchPrompt& p : plan.prompts)
      if (p.class_id && (*p.class_id < 0 || *p.class_id >= world_classes))
        throw InvalidArgumentError("bench: prompt class " + std::to_string(*p.class_id) +
                                   " is not a class of the procedural world (0.." + std::to_string(world_classes - 1) +
                                   ")");
    return;
  }
  if (!plan.prompts.empty())
    throw InvalidArgumentError("bench: --prompts applies to text-to-image models; this model is " +
                               described.display_name + " (use --classes)");
  const int64_t num_classes = plan.summary.num_classes;
  plan.classes.resize(static_cast<size_t>(options.images));
  for (int64_t i = 0; i < options.images; ++i)
    plan.classes[static_cast<size_t>(i)] = options.classes.empty()
                                               ? i % num_classes
                                               : options.classes[static_cast<size_t>(i) % options.classes.size()];
  for (int64_t c : plan.classes)
    if (c < 0 || c >= num_classes)
      throw InvalidArgumentError("class " + std::to_string(c) + " does not exist: the model has " +
                                 std::to_string(num_classes) + " classes (0.." + std::to_string(num_classes - 1) + ")");
}

// Everything a bench can refuse before its first (possibly long) run: the
// model, --steps, the conditions, every policy built on the real geometry (both
// batch sizes the runs use), the memory search's measure and the request.
BenchPlan plan_bench(const BenchOptions& options) {
  check_bench_options(options);
  BenchPlan plan(options);
  plan.specs = canonical_specs(options);
  // The architecture, known before any weights are written or loaded.
  if (!options.random_arch.empty()) {
    plan.family = &family_of_architecture(options.random_arch);
    plan.random = plan.family->random_architecture(options.random_arch);
    plan.bundle.manifest = plan.random->manifest;
  } else {
    plan.bundle = io::ModelBundle::open(options.model_path);
    plan.family = &find_model_family(plan.bundle.family());
  }
  const FamilyDescription& described = plan.described();
  plan.family->summarize(plan.bundle, plan.summary);
  plan.takes_steps = described.has_request_option("steps");
  if (options.steps < 0 || options.steps > 4096) throw InvalidArgumentError("bench: steps must be between 1 and 4096");
  if (options.steps != 0 && !plan.takes_steps) {
    std::string with_steps;
    for (const ModelFamily* f : model_families())
      if (f->description().has_request_option("steps"))
        with_steps += (with_steps.empty() ? "" : ", ") + f->description().display_name;
    throw InvalidArgumentError("bench: --steps applies to " + with_steps + " models only; this model is of family '" +
                               plan.family->name() + "'");
  }
  plan.base = base_request(options, read_sampling_defaults(plan.bundle.manifest), plan.takes_steps);
  plan.dtype_name = run_dtype_name(
      resolve_run_dtype(parse_run_dtype(options.dtype), parse_device_kind(options.device)));
  plan.text = described.conditioning == Conditioning::Text;
  plan_conditions(plan);

  plan.search = options.max_memory_bytes > 0;
  std::vector<int64_t> checked_batches{options.batch, (options.images - 1) % options.batch + 1};
  if (plan.search) checked_batches.insert(checked_batches.end(), {int64_t{1}, options.max_batch_limit});
  for (int64_t b : checked_batches)
    for (const auto& spec : plan.specs)
      plan.family->check_policy(plan.bundle, spec, PolicyCheck{b, plan.base.cfg_scale, options.seed});
  plan.cuda_index = bench_cuda_index(options.device);
  if (plan.search && plan.cuda_index < 0 && !described.measures_kv_bytes)
    throw InvalidArgumentError("bench --max-memory: on the CPU the measure is the weights plus the KV cache, and " +
                               described.display_name +
                               " models keep no KV cache; run it on a GPU, where the device's peak is measured");
  GenerationRequest check = plan.base;
  check.model_path = ".";
  if (plan.text) {
    check.prompt = plan.prompts.front().text;
    check.images = options.batch;
  } else {
    check.class_ids = {0};
  }
  check.validate();
  return plan;
}

// The results' settings (even when this shard has no run, so that it merges
// like any other); resumed results must have been made with the same policies.
void start_results(BenchResults& results, const BenchPlan& plan) {
  if (results.policies.empty()) {
    for (const PolicySpec& spec : plan.specs)
      results.policies.push_back({spec.text(), spec.params, {}, {}, 0, true, 0});
  } else {
    bool same = results.policies.size() == plan.specs.size();
    for (size_t pi = 0; same && pi < plan.specs.size(); ++pi)
      same = results.policies[pi].policy == plan.specs[pi].text();
    if (!same) throw InvalidArgumentError("bench: the results to resume were made with other policies");
  }
  results.family = plan.family->name();
  results.images = plan.options.images;
  results.batch = plan.options.batch;
  results.rounds = plan.options.rounds;
  results.steps = plan.takes_steps ? plan.base.steps : 0;
  results.text = plan.text;
  results.measures_flops = plan.described().measures_flops;
}

// The largest batch under the memory cap, per policy (see the header), then
// the speed at each: the fastest of `rounds` runs (the probe that found it is
// the first), the policies interleaved as in the main bench. `weights`: what
// the weights count on the CPU.
std::vector<std::optional<MaxBatchResult>> search_max_batches(const BenchPlan& plan, GenerationSession& session,
                                                              int64_t weights, const BenchProgressFn& progress,
                                                              const std::function<bool()>& cancelled) {
  const BenchOptions& options = plan.options;
  const std::vector<PolicySpec>& specs = plan.specs;
  const int64_t cap = options.max_memory_bytes;
  std::vector<std::optional<MaxBatchResult>> max_batches(specs.size());
  for (size_t pi = 0; pi < specs.size(); ++pi) {
    const std::string policy = specs[pi].text();
    MaxBatchResult m;
    m.cap_bytes = cap;
    m.measure = plan.cuda_index >= 0 ? "device peak" : "weights + KV peak";
    m.batch_limit = options.max_batch_limit;
    m.weights_bytes = weights;
    struct Extra {
      int64_t kv_bytes_peak = 0, process_peak_bytes = 0;
    };
    std::map<int64_t, Extra> extras;
    auto fits = [&](int64_t batch) {
      MaxBatchProbe probe;
      probe.batch = batch;
      BenchProgress p{policy, static_cast<int64_t>(pi), static_cast<int64_t>(specs.size()),
                      static_cast<int64_t>(m.probes.size()), 0};
      p.probe_batch = batch;
      RunSink sink(session, p, progress, cancelled);
      reset_process_peak_resident();
      try {
        const GenerationResult result = session.run(plan.bundle, plan.probe_request(batch, specs[pi]), &sink);
        const double ms = sink.generation_ms > 0 ? sink.generation_ms : result.elapsed_ms;
        const double tokens = static_cast<double>(batch * result.grid_height * result.grid_width);
        probe.tokens_per_s = ms > 0 ? tokens * 1000.0 / ms : 0;
        if (plan.cuda_index >= 0) {
          // The allocator's peak since the run began (the session resets it),
          // image decoding included.
          const DeviceMemoryStats stats = device_memory_stats(plan.cuda_index);
          probe.peak_bytes = stats.available ? stats.peak_allocated_bytes : sink.device_peak;
        } else {
          probe.peak_bytes = weights + result.kv_bytes_peak;
        }
        probe.fits = probe.peak_bytes <= cap;
        extras[batch] = {result.kv_bytes_peak, process_peak_resident_bytes()};
      } catch (const OutOfMemoryError&) {
        probe.out_of_memory = true;  // does not fit
      }
      m.probes.push_back(probe);
      if (progress) {
        p.run_finished = true;
        p.probe_fits = probe.fits;
        p.run_elapsed_ms = sink.generation_ms;
        progress(p);
      }
      return probe.fits;
    };
    m.max_batch = largest_fitting_batch(options.max_batch_limit, fits);
    m.at_limit = m.max_batch == options.max_batch_limit;
    for (const MaxBatchProbe& probe : m.probes)
      if (probe.batch == m.max_batch && probe.fits) {
        m.tokens_per_s = probe.tokens_per_s;
        m.peak_bytes = probe.peak_bytes;
        m.kv_bytes_peak = extras[probe.batch].kv_bytes_peak;
        m.process_peak_bytes = extras[probe.batch].process_peak_bytes;
      }
    max_batches[pi] = std::move(m);
  }
  const bool any = std::any_of(max_batches.begin(), max_batches.end(),
                               [](const std::optional<MaxBatchResult>& m) { return m->max_batch > 0; });
  if (!any) {
    std::string needs;
    for (size_t pi = 0; pi < specs.size(); ++pi) {
      const MaxBatchProbe& first = max_batches[pi]->probes.front();
      needs += (needs.empty() ? "" : ", ") + specs[pi].text() + " " +
               (first.out_of_memory ? std::string("ran out of device memory") : mebibytes(first.peak_bytes));
    }
    throw InvalidArgumentError("bench --max-memory: the cap of " + mebibytes(cap) +
                               " is smaller than batch 1 needs under every policy (" + max_batches[0]->measure +
                               " at batch 1: " + needs + ")");
  }
  for (int64_t round = 1; round < options.rounds; ++round) {
    for (size_t pi = 0; pi < specs.size(); ++pi) {
      MaxBatchResult& m = *max_batches[pi];
      if (m.max_batch == 0) continue;
      BenchProgress p{specs[pi].text(), static_cast<int64_t>(pi), static_cast<int64_t>(specs.size()), 0, 1};
      p.round = round;
      p.rounds = options.rounds;
      p.probe_batch = m.max_batch;
      RunSink sink(session, p, progress, cancelled);
      try {
        const GenerationResult result = session.run(plan.bundle, plan.probe_request(m.max_batch, specs[pi]), &sink);
        const double ms = sink.generation_ms > 0 ? sink.generation_ms : result.elapsed_ms;
        const double tokens = static_cast<double>(m.max_batch * result.grid_height * result.grid_width);
        if (ms > 0) m.tokens_per_s = std::max(m.tokens_per_s, tokens * 1000.0 / ms);
      } catch (const OutOfMemoryError&) {
        // The same batch fitted before; this round does not count.
      }
      if (progress) {
        p.run_finished = true;
        p.probe_fits = true;
        p.run_elapsed_ms = sink.generation_ms;
        progress(p);
      }
    }
  }
  const double full_speed = max_batches[0]->max_batch > 0 ? max_batches[0]->tokens_per_s : 0;
  for (auto& m : max_batches)
    m->ratio_vs_full = full_speed > 0 ? m->tokens_per_s / full_speed : std::numeric_limits<double>::quiet_NaN();
  return max_batches;
}

// One policy's share of a run: its first round's request and result, and its
// fastest round's time.
struct PolicyRun {
  GenerationRequest request;
  GenerationResult result;
  double best_ms = 0;
  int64_t allocated_peak = 0, device_peak = -1;
};

// Run r under every policy in turn (full first), `rounds` times: a run's time
// is its fastest round; its images and memory come from the first round (runs
// are seeded). Each policy's process peak is its own.
std::vector<PolicyRun> make_run(const BenchPlan& plan, int64_t r, GenerationSession& session, BenchResults& results,
                                const BenchProgressFn& progress, const std::function<bool()>& cancelled) {
  const std::vector<PolicySpec>& specs = plan.specs;
  std::vector<PolicyRun> made(specs.size());
  for (int64_t round = 0; round < plan.options.rounds; ++round) {
    for (size_t pi = 0; pi < specs.size(); ++pi) {
      const std::string policy = specs[pi].text();
      BenchPolicyResults& pr = results.policies[pi];
      PolicyRun& m = made[pi];
      const bool first_round = round == 0;
      pr.process_peak_is_own = reset_process_peak_resident() && pr.process_peak_is_own;
      const int64_t rss_before = process_resident_bytes();
      BenchProgress p{policy, static_cast<int64_t>(pi), static_cast<int64_t>(specs.size()), r, plan.runs()};
      p.round = round;
      p.rounds = plan.options.rounds;
      RunSink sink(session, p, progress, cancelled);
      GenerationRequest request = plan.run_request(r, specs[pi]);
      GenerationResult result = session.run(plan.bundle, request, &sink);
      const double ms = sink.generation_ms > 0 ? sink.generation_ms : result.elapsed_ms;
      m.best_ms = first_round ? ms : std::min(m.best_ms, ms);
      pr.process_peak_bytes = std::max(pr.process_peak_bytes, process_peak_resident_bytes());
      if (progress) {
        p.run_finished = true;
        p.tokens_done = p.tokens_total = result.grid_height * result.grid_width;
        p.run_elapsed_ms = sink.generation_ms;
        const double run_tokens = static_cast<double>(result.images.size() * p.tokens_total);
        p.run_tokens_per_s = sink.generation_ms > 0 ? run_tokens * 1000.0 / sink.generation_ms : 0;
        p.run_kv_bytes_allocated = sink.allocated_peak;
        p.run_device_peak_bytes = sink.device_peak;
        progress(p);
      }
      if (first_round) {
        pr.process_rss_delta_bytes += process_resident_bytes() - rss_before;
        m.request = std::move(request);
        m.result = std::move(result);
        m.allocated_peak = sink.allocated_peak;
        m.device_peak = sink.device_peak;
      }
    }
  }
  return made;
}

// One policy's images of run r against full's (made[0]): agreement, PSNR,
// SSIM, what a text prompt asked, speed and memory, and the judge's class
// (one classifier call per run and policy, the same in every shard).
void record_policy_images(const BenchPlan& plan, int64_t r, const PolicyRun& m, const GenerationResult& ref,
                          const DemoQualityJudge* judge, BenchPolicyResults& pr) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const FamilyDescription& described = plan.described();
  const GenerationResult& res = m.result;
  const int64_t first = r * plan.options.batch;
  std::vector<BenchImageResult> lines(res.images.size());
  std::vector<RgbImage> to_judge;
  std::vector<size_t> judged_at;
  const double run_tokens = static_cast<double>(res.images.size() * res.grid_height * res.grid_width);
  for (size_t k = 0; k < res.images.size(); ++k) {
    BenchImageResult& im = lines[k];
    im.image = first + static_cast<int64_t>(k);
    im.run = r;
    im.seed = m.request.seed;
    im.class_id = plan.label_of(im.image);
    if (plan.text) im.prompt = m.request.prompt;
    const double p = psnr(res.images[k], ref.images[k]);
    if (!described.discrete_tokens) {
      // Continuous tokens (MAR): compare pixels (the "tokens" are the generation orders).
      im.identical = !std::isfinite(p);
    } else {
      im.token_agreement = token_agreement(res.tokens[k], ref.tokens[k]);
      im.identical = res.tokens[k] == ref.tokens[k];
    }
    im.psnr = p;
    im.ssim = ssim(res.images[k], ref.images[k]);
    if (plan.text) im.attributes = judge_attributes({res.images[k]}, {plan.asked_of(im.image)});
    im.flops = described.measures_flops ? res.flops : nan;
    im.run_images = static_cast<int64_t>(res.images.size());
    im.run_generation_ms = m.best_ms;
    im.run_tokens_per_s = m.best_ms > 0 ? run_tokens * 1000.0 / m.best_ms : 0;
    im.kv_bytes_logical = res.kv_bytes_logical_final;
    im.kv_bytes_allocated = m.allocated_peak;
    im.kv_bytes_peak = res.kv_bytes_peak;
    im.kv_bytes_full = res.kv_bytes_full;
    im.device_peak_bytes = m.device_peak;
    if (plan.options.save_images) im.png = bench_png_name(im.image, pr.policy);
    if (judge && im.class_id >= 0) {
      to_judge.push_back(res.images[k]);
      judged_at.push_back(k);
    }
  }
  if (!to_judge.empty()) {
    const DemoQualityJudge::Judgement j = judge->judge(to_judge);
    for (size_t t = 0; t < judged_at.size(); ++t) lines[judged_at[t]].predicted_class = j.predicted[t];
    pr.features.add_rows(j.features.data(), static_cast<int64_t>(to_judge.size()), j.feature_dim);
  }
  pr.images.insert(pr.images.end(), lines.begin(), lines.end());
}

// The judge of the bench's images: the bundle's classifier against the
// held-out set for the whole bench's labels (the same in every shard), made
// at the first run that has images; null without a classifier or labels.
class BenchJudge {
 public:
  const DemoQualityJudge* get(const BenchPlan& plan, const GenerationResult& ref, BenchResults& results) {
    if (checked_ || ref.images.empty()) return judge_.get();
    checked_ = true;
    std::vector<int64_t> labels;
    for (int64_t i = 0; i < plan.options.images; ++i)
      if (plan.label_of(i) >= 0) labels.push_back(plan.label_of(i));
    if (!labels.empty()) judge_ = DemoQualityJudge::for_bundle(plan.bundle, labels, ref.images[0].width);
    results.judged = judge_ != nullptr;
    results.reference = judge_ ? judge_->reference_sums() : FeatureSums{};
    return judge_.get();
  }

 private:
  bool checked_ = false;
  std::unique_ptr<DemoQualityJudge> judge_;
};

std::vector<std::optional<MaxBatchResult>> run_bench(const BenchOptions& options, BenchResults& results,
                                                     const std::set<int64_t>& skip, const BenchRunFn& on_run,
                                                     const BenchProgressFn& progress,
                                                     const std::function<bool()>& cancelled) {
  BenchPlan plan = plan_bench(options);
  // What this process makes: the shard's runs (run r belongs to shard r mod N)
  // that are not done yet.
  std::vector<int64_t> todo;
  for (int64_t r = options.shard_index; r < plan.runs(); r += options.shard_count)
    if (!results.runs.count(r) && !skip.count(r)) todo.push_back(r);
  start_results(results, plan);
  if (todo.empty() && !plan.search) return {};

  std::optional<TemporaryDir> temp;
  if (plan.random) {
    temp.emplace();
    plan.random->write(temp->path.string(), options.seed, "f16");
    plan.bundle = io::ModelBundle::open(temp->path.string());
  }
  plan.base.model_path = plan.random ? temp->path.string() : options.model_path;
  // CPU memory caps count the weights at the run dtype (see the header); a cap
  // below them is refused before any run.
  const int64_t weights = plan.search && plan.cuda_index < 0
                              ? weights_bytes_at(plan.bundle, run_dtype_bytes(parse_run_dtype(plan.dtype_name)))
                              : 0;
  if (plan.search && weights > options.max_memory_bytes)
    throw InvalidArgumentError("bench --max-memory: the cap of " + mebibytes(options.max_memory_bytes) +
                               " is smaller than the model's weights alone (" + mebibytes(weights) + " at " +
                               plan.dtype_name + "), so no batch fits");

  GenerationSession session;
  if (options.warmup && !todo.empty()) {
    BenchProgress p{"full (warm-up)", 0, static_cast<int64_t>(plan.specs.size()), 0, 1};
    RunSink sink(session, p, progress, cancelled);
    session.run(plan.bundle, plan.run_request(0, PolicySpec{}), &sink);
  }
  std::vector<std::optional<MaxBatchResult>> max_batches(plan.specs.size());
  if (plan.search) max_batches = search_max_batches(plan, session, weights, progress, cancelled);

  // Run by run: the run's images are judged at once and dropped, so a long
  // bench keeps one run's images, and a shard's results are complete per run.
  BenchJudge judge;
  for (const int64_t r : todo) {
    const std::vector<PolicyRun> made = make_run(plan, r, session, results, progress, cancelled);
    const GenerationResult& ref = made[0].result;
    results.model = ref.model_name;
    results.device = ref.device;
    results.dtype = plan.dtype_name;
    for (const PolicyRun& m : made)
      results.cuda_graphs = combine_cuda_graphs_reports(results.cuda_graphs, m.result.cuda_graphs);
    results.grid_height = ref.grid_height;
    results.grid_width = ref.grid_width;
    const DemoQualityJudge* judged_by = judge.get(plan, ref, results);
    for (size_t pi = 0; pi < plan.specs.size(); ++pi)
      record_policy_images(plan, r, made[pi], ref, judged_by, results.policies[pi]);
    results.runs.insert(r);
    if (on_run) {
      BenchRunOutput out;
      out.run = r;
      out.class_names = plan.summary.class_names;
      for (const PolicyRun& m : made) out.policies.push_back({&m.request, &m.result});
      on_run(out, results);
    }
  }
  return max_batches;
}

}  // namespace

std::vector<BenchRecord> run_policy_bench(const BenchOptions& options, const BenchProgressFn& progress,
                                          const std::function<bool()>& cancelled) {
  if (options.shard_count != 1)
    throw InvalidArgumentError("bench: a shard's results are kept with an output folder (run_bench_shard)");
  BenchResults results;
  const auto max_batches = run_bench(options, results, {}, {}, progress, cancelled);
  std::vector<BenchRecord> records = summarize_bench(results);
  for (size_t pi = 0; pi < records.size() && pi < max_batches.size(); ++pi) records[pi].max_memory = max_batches[pi];
  return records;
}

void run_bench_shard(const BenchOptions& options, BenchResults& results, const std::set<int64_t>& skip,
                     const BenchRunFn& on_run, const BenchProgressFn& progress,
                     const std::function<bool()>& cancelled) {
  if (options.max_memory_bytes > 0)
    throw InvalidArgumentError("bench: --max-memory runs in one process; it does not apply with --out or --shard");
  run_bench(options, results, skip, on_run, progress, cancelled);
}

}  // namespace kvs
