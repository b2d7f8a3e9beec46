#include <nlohmann/json.hpp>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "app/cli/arg_parser.h"
#include "app/cli/commands.h"
#include "app/cli/default_paths.h"
#include "app/cli/gallery_recording.h"
#include "app/cli/progress_bar.h"
#include "engine/core/errors.h"
#include "engine/image/png_file.h"
#include "engine/io/model_bundle.h"
#include "engine/models/family_registry.h"
#include "engine/models/generation_session.h"
#include "engine/models/model_catalog.h"
#include "engine/session/generation_metadata.h"
#include "engine/session/request_checks.h"

namespace kvs::cli {
namespace {
namespace fs = std::filesystem;

const char* kHelp = R"(usage: kvstudio-cli generate --class <id>[,<id>...] [options]      (class-conditional models)
       kvstudio-cli generate --prompt "TEXT" [options]               (text-to-image models)

  --model DIR         model bundle (default: the bundled demo model; with --prompt,
                      the bundled text-to-image demo, resources/models/janus-pro-demo)
  --class IDS         class id, or a comma-separated list (one image each)
  --batch N           images per class id (default 1)
  --prompt TEXT       text models: what to draw (class models refuse it, text models need it)
  --prompt-file FILE  text models: the prompt is the whole file (trailing blank lines dropped)
  --negative-prompt TEXT
                      text models: replaces the unconditional CFG row (default: the model's own,
                      the prompt with its text replaced by pad tokens)
  --images N          text models: images the prompt makes together (default 1)
  --size WxH          Lumina-mGPT models: the image size the prompt asks for, in pixels, multiples
                      of 32 (default: the model's own, e.g. 768x768; `kvstudio-cli info` lists the sizes)
  --from IMAGE        raster models whose bundle ships the VQ encoder (LlamaGen, Janus-Pro): finish
                      this PNG; it is scaled to cover the model's image size and its middle kept
  --keep-rows K       with --from: the picture's top K token rows are given, the model draws the rest
                      (1 to the image's token rows - 1; `kvstudio-cli info` shows the grid)
  --seed N|random     sampling seed (default 0); the same seed gives the same tokens
  --cfg F             classifier-free guidance scale (default: the model's, else 4.0; <= 1 disables).
                      VAR models ramp it over the scales, t = F * scale / (scales - 1); 0 disables
  --cfg-interval N    stop CFG after decode step N (default -1: always; raster models only)
  --steps N           MAR models: decoding steps (default: the model's, else 64)
  --cfg-schedule S    MAR models: linear (default) | constant; MAR guides whenever --cfg is not 1
  --temperature F     default 1.0
  --top-k N           default 0 (off)
  --top-p F           default 1.0 (off); VAR models filter as upstream VAR does
  --greedy            arg-max instead of sampling
  --sampler-rng R     auto (default: draw on the compute device) | cpu (draw on the CPU on
                      every device: a GPU run then gives the CPU run's tokens)
  --out PATH          output PNG (default kvstudio_c<class>_s<seed>.png, kvstudio_prompt_s<seed>.png
                      for a prompt); with several
                      images an index is appended: NAME_<i>.png
  --policy SPEC       KV-cache policy, e.g. full (default), linear:rho=1/6, streaming:rho=1/4,sink=4
                      (`kvstudio-cli policies` lists them with their parameters)
  --device D          auto|cpu|cuda|cuda:N (default auto: the first GPU, else the CPU;
                      cuda is cuda:0, cuda:N picks GPU N)
  --threads N         CPU threads (default: all cores)
  --dtype T           weights and KV cache: auto|f32|bf16|f16 (default auto: bf16 on CUDA, f32 on the CPU)
  --cuda-graphs on|off
                      LlamaGen models on a GPU: replay each decode step's fixed-shape work as CUDA
                      graphs, attention eager between them (default on; the same tokens either way;
                      KVSTUDIO_CUDA_GRAPHS=0 turns them off too). The CPU ignores it
  --quiet             no progress output
  --no-gallery        do not keep the images in the gallery (`kvstudio-cli gallery`); by default
                      every PNG written is recorded there, where it is (KVSTUDIO_GALLERY=off: never)
)";

volatile std::sig_atomic_t g_interrupted = 0;
GenerationSession* g_session = nullptr;
void on_sigint(int) {
  g_interrupted = 1;
  if (g_session) g_session->cancel();
}

std::vector<int64_t> parse_class_list(const std::string& text) {
  std::vector<int64_t> ids;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) ids.push_back(parse_int("--class", item));
  if (ids.empty()) throw InvalidArgumentError("option --class needs at least one id");
  return ids;
}

// The whole file is the prompt; the final newline(s) an editor adds are not part of it.
std::string read_prompt_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FileError("prompt file " + path + " cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  std::string prompt = text.str();
  while (!prompt.empty() &&
         (prompt.back() == '\n' || prompt.back() == '\r' || prompt.back() == ' ' || prompt.back() == '\t'))
    prompt.pop_back();
  if (prompt.empty()) throw InvalidArgumentError("prompt file " + path + " is empty");
  return prompt;
}

// Fills the request's conditioning: class ids (with --batch copies each), or a
// prompt with its image count. Which of the two the model takes is checked
// against its family afterwards.
void read_conditioning(const ArgParser& p, bool text_model, GenerationRequest* request) {
  if (p.has("--prompt") && p.has("--prompt-file"))
    throw InvalidArgumentError("give --prompt or --prompt-file, not both");
  if (p.has("--prompt")) {
    request->prompt = p.get("--prompt", "");
    if (request->prompt.empty()) throw InvalidArgumentError("option --prompt needs text");
  }
  if (p.has("--prompt-file")) request->prompt = read_prompt_file(p.get("--prompt-file", ""));
  request->negative_prompt = p.get("--negative-prompt", "");
  if (p.has("--negative-prompt") && request->negative_prompt.empty())
    throw InvalidArgumentError("option --negative-prompt needs text (leave it out for the model's own)");
  if (request->is_text()) {
    if (p.has("--batch")) throw InvalidArgumentError("option --batch applies to --class; a prompt takes --images N");
    request->images = p.get_int("--images", 1);
  } else if (p.has("--images")) {
    throw InvalidArgumentError("option --images applies to a prompt; classes take --batch N");
  }
  // A text model without a prompt gets check_conditioning's message, not "missing --class".
  if (!p.has("--class") && (request->is_text() || text_model)) return;
  const std::vector<int64_t> classes = parse_class_list(p.require("--class"));
  const int64_t batch = p.get_int("--batch", 1);
  if (batch < 1 || batch > 256) throw InvalidArgumentError("option --batch must be between 1 and 256");
  for (int64_t c : classes)
    for (int64_t i = 0; i < batch; ++i) request->class_ids.push_back(c);
}

}  // namespace

int cmd_generate(const std::vector<std::string>& args) {
  ArgParser p(args,
              {"--model", "--class", "--batch", "--seed", "--cfg", "--cfg-interval", "--temperature", "--top-k",
               "--top-p", "--out", "--device", "--threads", "--policy", "--steps", "--cfg-schedule", "--dtype",
               "--sampler-rng", "--cuda-graphs",
               // Text models' conditioning.
               "--prompt", "--prompt-file", "--negative-prompt", "--images", "--size",
               // Finishing a picture.
               "--from", "--keep-rows"},
              {"--quiet", "--greedy", "--no-gallery", "--help"}, 0);
  if (p.flag("--help")) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  GenerationRequest request;
  // A prompt without a model: the bundled text-to-image demo.
  const bool prompted = p.has("--prompt") || p.has("--prompt-file");
  request.model_path = p.get("--model", prompted ? default_text_model_path() : default_model_path());
  const io::ModelBundle bundle = io::ModelBundle::open(request.model_path);
  const ModelSummary model = summarize_model_bundle(bundle);
  const ModelSamplingDefaults& defaults = model.sampling_defaults;
  const FamilyDescription& family = find_model_family(model.family).description();

  const bool text_model = family.conditioning == Conditioning::Text;
  read_conditioning(p, text_model, &request);
  // Before anything loads: the message the session would give after loading.
  check_conditioning(request, text_model, model.name);
  if (p.get("--seed", "") == "random") request.seed = std::random_device{}();
  else request.seed = p.get_u64("--seed", 0);
  request.cfg_scale = p.get_double("--cfg", defaults.cfg_scale.value_or(4.0));
  request.cfg_interval = p.get_int("--cfg-interval", -1);
  request.steps = p.get_int("--steps", defaults.steps.value_or(0));
  request.cfg_schedule = p.get("--cfg-schedule", defaults.cfg_schedule.value_or(std::string()));
  request.image_size = p.get("--size", "");
  request.from_image = p.get("--from", "");
  request.keep_rows = p.get_int("--keep-rows", 0);
  for (const auto& [option, field] : {std::pair<const char*, const char*>{"--steps", "steps"},
                                      {"--cfg-schedule", "cfg_schedule"},
                                      {"--cfg-interval", "cfg_interval"},
                                      {"--size", "image_size"},
                                      {"--from", "from_image"},
                                      {"--keep-rows", "from_image"}})
    if (p.has(option) && !family.has_request_option(field))
      throw InvalidArgumentError(std::string("option ") + option + " does not apply to " + family.display_name +
                                 " models");
  request.sampling.temperature = p.get_double("--temperature", defaults.temperature.value_or(1.0));
  request.sampling.top_k = p.get_int("--top-k", defaults.top_k.value_or(0));
  request.sampling.top_p = p.get_double("--top-p", defaults.top_p.value_or(1.0));
  request.sampling.sample = !p.flag("--greedy");
  request.sampling.rng = parse_sampler_rng(p.get("--sampler-rng", "auto"));
  request.device = p.get("--device", "auto");
  request.threads = static_cast<int>(p.get_int("--threads", 0));
  request.dtype = p.get("--dtype", "auto");  // checked by request.validate()
  request.cuda_graphs = p.get("--cuda-graphs", "on");
  request.policy = parse_policy_spec(p.get("--policy", "full"));  // the option is where the spec comes in
  request.validate();
  std::error_code ec;
  if (request.finishes_picture() && !fs::is_regular_file(request.from_image, ec))
    throw FileError("picture " + request.from_image + " does not exist");
  const std::string out = p.get("--out", (request.is_text() ? std::string("kvstudio_prompt")
                                                            : "kvstudio_c" + std::to_string(request.class_ids[0])) +
                                             "_s" + std::to_string(request.seed) + ".png");
  if (fs::path(out).extension() != ".png") throw InvalidArgumentError("--out must name a .png file, got '" + out + "'");
  const fs::path out_dir = fs::path(out).parent_path();
  if (!out_dir.empty() && !fs::is_directory(out_dir, ec))
    throw FileError("output folder " + out_dir.string() + " does not exist");

  GenerationSession session;
  ProgressBar progress(p.flag("--quiet"));
  g_session = &session;
  auto previous = std::signal(SIGINT, on_sigint);
  GenerationResult result;
  try {
    result = session.run(bundle, request, &progress);
  } catch (...) {
    std::signal(SIGINT, previous);
    g_session = nullptr;
    throw;
  }
  std::signal(SIGINT, previous);
  g_session = nullptr;

  const auto& class_names = model.class_names;
  const size_t n = result.images.size();
  GalleryRecorder gallery(request, result, class_names, model.family,
                          gallery_recording_enabled(p.flag("--no-gallery")));
  for (size_t i = 0; i < n; ++i) {
    std::string path = out;
    if (n > 1) path = (out_dir / (fs::path(out).stem().string() + "_" + std::to_string(i) + ".png")).string();
    write_png(path, result.images[i], generation_png_chunks(request, result, i, class_names, KVSTUDIO_VERSION));
    std::printf("%s\n", path.c_str());
    gallery.record(i, path);
  }
  if (!p.flag("--quiet") && result.kv_bytes_full == 0)  // MAR: no KV cache
    std::fprintf(stderr, "done in %.2f s (%.1f tokens/s per image)\n", result.elapsed_ms / 1000.0,
                 result.tokens_per_second);
  else if (!p.flag("--quiet"))
    std::fprintf(stderr,
                 "done in %.2f s (%.1f tokens/s per image; KV cache %s: %.2f MiB retained of %.2f MiB full, peak %.2f "
                 "MiB allocated)\n",
                 result.elapsed_ms / 1000.0, result.tokens_per_second, result.policy.c_str(),
                 result.kv_bytes_logical_final / 1048576.0, result.kv_bytes_full / 1048576.0,
                 result.kv_bytes_peak / 1048576.0);
  return 0;
}

}  // namespace kvs::cli
