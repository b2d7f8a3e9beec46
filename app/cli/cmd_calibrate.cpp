// kvstudio-cli calibrate: a policy's offline calibration of a bundle (HeatKV's
// head ranking, AMS-KV's similarity threshold, ScaleKV's drafter layers and
// HACK's head classification, on the next-scale families: VAR and Infinity).

#include <algorithm>
#include <cstdio>
#include <optional>
#include <sstream>
#include <string>

#include "app/cli/arg_parser.h"
#include "app/cli/commands.h"
#include "app/cli/default_paths.h"
#include "engine/core/device.h"
#include "engine/core/errors.h"
#include "engine/core/number_parsing.h"
#include "engine/io/model_bundle.h"
#include "engine/models/family_registry.h"

namespace kvs::cli {
namespace {

const char* kHelp =
    R"(usage: kvstudio-cli calibrate --policy heatkv|amskv|scalekv|hack [--model DIR] [--classes 1,2,...] [--images N]
                            [--seed 0] [--cfg C] [--out FILE] [--device auto|cpu|cuda|cuda:N] [--threads N]
                            [--dtype auto|f32|bf16|f16] [--demanding-fraction 1/6 (amskv)]
                            [--image-size WxH (Infinity)]

  Generates one image per calibration class (VAR) or prompt (Infinity) with the full cache and
  measures what the policy needs; writes it into the bundle (or --out), where generate, bench and
  the window find it. --dtype sets the run-time dtype of the model it generates with (default
  auto: bf16 on CUDA, f32 on the CPU), as generate's does.

  VAR: --classes picks the classes, else --images classes spread over the model's classes
  (default 4; 10 for scalekv, the paper's number of calibration prompts); --cfg defaults to 1.5.
  Writes DIR/<policy>_calibration.json.

  Infinity: --images N takes the first N of KV Studio's calibration prompts (default 10, HeatKV's
  N; at most 30); --cfg defaults to the bundle's (3, gen_one_img's); --image-size picks one of the model's sizes
  (default its square size), as a calibration belongs to one scale schedule. Writes
  DIR/<policy>_calibration.WxH.json; runs at that size use it, runs at other sizes measure their own.

  heatkv: HeatKV's calibration (heatkv §3.1): every layer's and head's scale-to-scale attention
  mass (Eq. 2), from which the policy ranks heads per source scale (S-CAS, Eq. 4). Writes
  DIR/heatkv_calibration.json. A run uses it when it was made with the settings the run asks
  (its classes, the run's CFG unless heatkv:calibration_cfg= names one, seed 0), so calibrate
  at the CFG you generate with; otherwise, or without it, HeatKV measures one at first use
  (on 2 classes without a file; the paper finds 1 to 10 prompts equivalent).

  amskv: AMS-KV's threshold profiling (Appendix E): every layer's inter-scale key similarity S
  at the scales where a layer at C_min decides, and theta placed so that --demanding-fraction
  of the layers (default 1/6, Table 2's share; at least one layer, fewer than all) fall below
  it: per layer the lowest S over those scales, averaged over the images, and theta between
  the k-th and (k+1)-th lowest. Writes DIR/amskv_calibration.json; amskv then uses its theta
  unless theta= is given. Without it amskv keeps the paper's -0.008 (VAR-d30's value).

  scalekv: ScaleKV's calibration (ScaleKV §3.3): every layer's Attention Selectivity Index at
  every scale (Eq. 2, K' = 16, the policy's default top_k), from which the policy picks its
  drafter layers per scale (lowest Z-score, Eq. 3). Writes DIR/scalekv_calibration.json;
  without it (or for another top_k) ScaleKV measures one on 10 classes at first use.

  hack: HACK's offline head classification: every layer's and head's variance of its per-key
  attention at every scale (normalised by the mean squared), from which the policy classes the
  heads of highest variance contextual (vertical attention) and the others structural
  (diagonal). Writes DIR/hack_calibration.json. Without it HACK measures it on 10 classes at
  first use (HACK's 10 calibration prompts in the HeatKV paper); --images 10 does the same.
)";

std::vector<int64_t> parse_classes(const std::string& text) {
  std::vector<int64_t> ids;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) ids.push_back(parse_int("--classes", item));
  if (ids.empty()) throw InvalidArgumentError("option --classes needs at least one class id");
  return ids;
}

}  // namespace

int cmd_calibrate(const std::vector<std::string>& args) {
  ArgParser p(args,
              {"--policy", "--model", "--classes", "--images", "--seed", "--cfg", "--out", "--device", "--threads",
               "--dtype", "--demanding-fraction", "--image-size"},
              {"--help", "--quiet"}, 0);
  if (p.flag("--help")) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  const std::string policy = p.require("--policy");
  const RunDtype dtype = parse_run_dtype(p.get("--dtype", "auto"));  // an unknown name fails before any work
  // The families that calibrate the policy, and the bundle's among them.
  std::vector<const ModelFamily*> calibrating;
  for (const ModelFamily* f : model_families()) {
    const auto& names = f->description().calibrated_policies;
    if (std::find(names.begin(), names.end(), policy) != names.end()) calibrating.push_back(f);
  }
  if (calibrating.empty()) {
    std::vector<std::string> calibrated;
    for (const ModelFamily* f : model_families())
      for (const std::string& name : f->description().calibrated_policies)
        if (std::find(calibrated.begin(), calibrated.end(), name) == calibrated.end()) calibrated.push_back(name);
    std::string list;
    for (const std::string& name : calibrated) list += (list.empty() ? "" : ", ") + name;
    throw InvalidArgumentError("policy '" + policy + "' needs no calibration (calibrated offline: " + list + ")");
  }
  const io::ModelBundle bundle = io::ModelBundle::open(p.get("--model", default_model_path()));
  const auto family = std::find_if(calibrating.begin(), calibrating.end(),
                                   [&](const ModelFamily* f) { return f->name() == bundle.family(); });
  if (family == calibrating.end()) {
    std::string names;
    for (const ModelFamily* f : calibrating) names += (names.empty() ? "" : " or ") + f->description().display_name;
    throw InvalidArgumentError("calibrate --policy " + policy + " needs a " + names + " model; " + bundle.dir +
                               " is a '" + bundle.family() + "' model");
  }
  if (p.has("--classes") && p.has("--images")) throw InvalidArgumentError("--classes and --images cannot be combined");
  CalibrationRequest request;
  request.policy = policy;
  if (p.has("--classes")) request.classes = parse_classes(p.get("--classes", ""));
  if (p.has("--images")) {
    request.images = p.get_int("--images", 0);
    if (request.images < 1) throw InvalidArgumentError("option --images must be >= 1");
  }
  if (p.has("--cfg")) {
    request.cfg = p.get_double("--cfg", 0);
    if (!(request.cfg >= 0)) throw InvalidArgumentError("option --cfg must be >= 0");
  }
  request.image_size = p.get("--image-size", "");
  request.seed = p.get_u64("--seed", 0);
  request.out = p.get("--out", "");
  if (p.has("--demanding-fraction")) {
    if (policy != "amskv") throw InvalidArgumentError("option --demanding-fraction applies to --policy amskv");
    // A share: "1/6" as well as "0.1667", as policy parameters take it.
    const std::string text = p.get("--demanding-fraction", "");
    const std::optional<double> fraction = parse_number_text(text);
    if (!fraction) throw InvalidArgumentError("option --demanding-fraction expects a number, got '" + text + "'");
    request.demanding_fraction = *fraction;
    if (!(request.demanding_fraction > 0 && request.demanding_fraction < 1))
      throw InvalidArgumentError("option --demanding-fraction must be in (0, 1), e.g. 1/6");
  }
  request.command = "kvstudio-cli calibrate";
  for (const std::string& a : args) request.command += " " + a;
  const DeviceChoice device = choose_device(parse_device(p.get("--device", "auto")),
                                            static_cast<int>(p.get_int("--threads", 0)), dtype);
  const std::string report = (*family)->calibrate(bundle, device, request);
  if (!p.flag("--quiet")) std::printf("%s\n", report.c_str());
  return 0;
}

}  // namespace kvs::cli
