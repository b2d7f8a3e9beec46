// kvstudio-cli calibrate: HeatKV's offline calibration of a VAR bundle.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>

#include "app/cli/arg_parser.h"
#include "app/cli/commands.h"
#include "app/cli/default_paths.h"
#include "engine/cache/policies/scale_attention_profile.h"
#include "engine/core/device.h"
#include "engine/core/errors.h"
#include "engine/io/model_bundle.h"
#include "engine/models/var/var_calibration.h"
#include "engine/models/var/var_model.h"

namespace kvs::cli {
namespace {

const char* kHelp = R"(usage: kvstudio-cli calibrate --policy heatkv [--model DIR] [--classes 1,2,...] [--images 4]
                            [--seed 0] [--cfg 1.5] [--out FILE] [--device auto|cpu|cuda] [--threads N]

  HeatKV's offline calibration (heatkv §3.1): generates one image per calibration class with
  the full cache and measures every layer's and head's scale-to-scale attention mass (Eq. 2),
  from which the policy ranks heads per source scale (S-CAS, Eq. 4). Writes
  DIR/heatkv_calibration.json (or --out), which generate, bench and the window then use.
  Without it they calibrate on 2 classes at first use. --classes picks the classes, else
  --images classes spread over the model's classes (the paper finds 1 to 10 prompts equivalent).
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
  ArgParser p(args, {"--policy", "--model", "--classes", "--images", "--seed", "--cfg", "--out", "--device", "--threads"},
              {"--help", "--quiet"}, 0);
  if (p.flag("--help")) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  const std::string policy = p.require("--policy");
  if (policy != "heatkv")
    throw InvalidArgumentError("policy '" + policy + "' needs no calibration (only heatkv is calibrated offline)");
  const io::ModelBundle bundle = io::ModelBundle::open(p.get("--model", default_model_path()));
  if (bundle.family() != "var")
    throw InvalidArgumentError("calibrate --policy heatkv needs a next-scale (VAR) model; " + bundle.dir + " is a '" +
                               bundle.family() + "' model");
  const DeviceChoice device = choose_device(parse_device_kind(p.get("--device", "auto")),
                                            static_cast<int>(p.get_int("--threads", 0)));
  const var::VarModel model =
      var::VarModel::load(bundle, device.kind == DeviceKind::Cuda ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU));
  const int64_t num_classes = model.transformer->config().num_classes;
  if (p.has("--classes") && p.has("--images")) throw InvalidArgumentError("--classes and --images cannot be combined");
  const int64_t images = p.get_int("--images", 4);
  if (images < 1) throw InvalidArgumentError("option --images must be >= 1");
  const std::vector<int64_t> classes = p.has("--classes") ? parse_classes(p.get("--classes", ""))
                                                          : var::spread_classes(num_classes, images);
  for (int64_t c : classes)
    if (c < 0 || c >= num_classes)
      throw InvalidArgumentError("class " + std::to_string(c) + " does not exist: model " + model.name + " has " +
                                 std::to_string(num_classes) + " classes (0.." + std::to_string(num_classes - 1) + ")");
  var::ScaleParams params;
  params.cfg = p.get_double("--cfg", 1.5);
  if (!(params.cfg >= 0)) throw InvalidArgumentError("option --cfg must be >= 0");
  params.seed = p.get_u64("--seed", 0);
  const std::string out = p.get("--out", bundle.dir + "/" + kScaleAttentionProfileFile);

  const auto start = std::chrono::steady_clock::now();
  const ScaleAttentionProfile profile = var::calibrate_scale_attention(model, classes, params);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  profile.save(out);
  if (!p.flag("--quiet")) {
    std::printf("calibrated %s on %zu image(s) in %.1f s (%s): wrote %s\n", model.name.c_str(), classes.size(), seconds,
                device.description.c_str(), out.c_str());
    // What HeatKV will read from it: per source scale, how much later scales lean
    // on it (mean S-CAS over heads, and its spread).
    std::printf("source scale  tokens  mean S-CAS  min head  max head\n");
    for (int64_t i = 0; i + 1 < profile.scales(); ++i) {
      double sum = 0, lo = 1e300, hi = -1e300;
      for (int64_t l = 0; l < profile.layers; ++l)
        for (int64_t h = 0; h < profile.heads; ++h) {
          const double v = profile.scas(l, h, i);
          sum += v;
          lo = std::min(lo, v);
          hi = std::max(hi, v);
        }
      std::printf("%12lld  %6lld  %10.4f  %8.4f  %8.4f\n", static_cast<long long>(i),
                  static_cast<long long>(profile.unit_tokens[static_cast<size_t>(i)]),
                  sum / static_cast<double>(profile.layers * profile.heads), lo, hi);
    }
  }
  return 0;
}

}  // namespace kvs::cli
