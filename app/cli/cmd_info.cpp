#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "app/cli/arg_parser.h"
#include "app/cli/commands.h"
#include "app/cli/default_paths.h"
#include "engine/core/cuda_backend.h"
#include "engine/core/device.h"
#include "engine/core/errors.h"
#include "engine/io/model_bundle.h"
#include "engine/models/family_registry.h"
#include "engine/models/model_catalog.h"
#include "engine/session/bundle_info.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/linear.h"

namespace kvs::cli {
namespace {

// "label:" padded to the text column; a text's further lines are indented to it.
void print_line(const std::string& label, const std::string& text) {
  constexpr size_t kColumn = 14;
  std::string head = label + ":";
  head.resize(std::max(kColumn, head.size() + 1), ' ');
  size_t begin = 0;
  while (true) {
    const size_t nl = text.find('\n', begin);
    std::printf("%s%s\n", begin == 0 ? head.c_str() : std::string(kColumn, ' ').c_str(),
                text.substr(begin, nl == std::string::npos ? std::string::npos : nl - begin).c_str());
    if (nl == std::string::npos) break;
    begin = nl + 1;
  }
}

// Where the weights came from (one line per trained part for kvstudio-train
// bundles) and, when measured, the quality gates (kvstudio-train evaluate).
void print_provenance_and_quality(const io::ModelBundle& bundle) {
  const nlohmann::json& m = bundle.manifest;
  if (m.contains("provenance") && m["provenance"].is_object()) {
    const nlohmann::json& p = m["provenance"];
    bool first = true;
    auto line = [&](const std::string& text) {
      std::printf("%s%s\n", first ? "provenance:   " : "              ", text.c_str());
      first = false;
    };
    for (const char* key : {"source", "note"})
      if (p.contains(key) && p[key].is_string()) line(p[key].get<std::string>());
    if (p.contains("created_by") && p["created_by"].is_string())
      line("written by " + p["created_by"].get<std::string>());
    for (const auto& [key, value] : p.items()) {
      const auto pos = key.rfind("_training");
      if (pos == std::string::npos || pos + 9 != key.size() || !value.is_object()) continue;
      char buf[160];
      std::snprintf(buf, sizeof buf, "%s: %lld steps, batch %lld, %.0f s of training", key.substr(0, pos).c_str(),
                    static_cast<long long>(value.value("steps", int64_t{0})),
                    static_cast<long long>(value.value("batch", int64_t{0})), value.value("train_seconds", 0.0));
      line(buf);
    }
  }
  if (m.contains("quality") && m["quality"].is_object()) {
    const nlohmann::json& q = m["quality"];
    auto number = [&](const char* key) { return q.contains(key) && q[key].is_number() ? q[key].get<double>() : NAN; };
    std::printf(
        "quality:      tokenizer PSNR %.2f dB, classifier accuracy %.1f %%, generated class accuracy %.1f %%,\n"
        "              demo-FID %.2f (%lld generated images)\n",
        number("tokenizer_psnr_db"), 100 * number("classifier_accuracy"), 100 * number("generated_class_accuracy"),
        number("demo_fid"), static_cast<long long>(q.value("generated_images", int64_t{0})));
  }
}

}  // namespace

int cmd_info(const std::vector<std::string>& args) {
  ArgParser p(args, {"--dtype"}, {"--help", "--json"}, 1);
  if (p.flag("--help")) {
    std::puts(
        "usage: kvstudio-cli info [<model bundle>] [--json] [--dtype auto|f32|bf16|f16]\n"
        "  prints architecture, parameter count and KV-cache bytes per token; checks the weights.\n"
        "  --dtype: the run-time dtype the KV cache is counted in (default auto: bf16 when a GPU\n"
        "  is present, else f32, as generate --device auto would choose)");
    return 0;
  }
  const RunDtype dtype = resolve_run_dtype(parse_run_dtype(p.get("--dtype", "auto")), DeviceKind::Auto);
  const std::string path = p.positional().empty() ? default_model_path() : p.positional()[0];
  const io::ModelBundle bundle = io::ModelBundle::open(path);
  const ModelFamily& family = find_model_family(bundle.family());
  const BundleInfo info = family.inspect(bundle);
  const ModelSummary summary = summarize_model_bundle(bundle);
  const bool has_kv = family.description().measures_kv_bytes && summary.kv_bytes_per_token > 0;
  const int64_t kv_per_token = has_kv ? kv_bytes_per_token_at(summary, dtype) : 0;
  if (p.flag("--json")) {
    nlohmann::json j = {{"name", bundle.name()}, {"family", family.name()}};
    j.update(info.json);
    j["run_dtype"] = run_dtype_name(dtype);
    j["kv_bytes_per_token"] = kv_per_token;  // at run_dtype; 0 for models without a KV cache
    j["provenance"] = bundle.manifest.value("provenance", nlohmann::json::object());
    j["device_auto"] = describe_auto_device();
    j["cpu"] = {{"model", kernels::cpu_model_name()},
                {"flags", kernels::cpu_kernel_flags()},
                {"decode_kernel", kernels::decode_kernel_description(dtype == RunDtype::Bf16)}};
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  print_line("model", bundle.name() + " (" + bundle.dir + ")");
  print_line("family", family.name() + " (" + family.description().summary + ")");
  for (const auto& [label, text] : info.lines) print_line(label, text);
  if (has_kv) {
    const int64_t tokens = kv_tokens_per_image(summary);
    print_line("KV at " + run_dtype_name(dtype),
               format_text("%lld bytes/token; full image (%lld entries): %.2f MiB per sequence, x2 with CFG",
                           (long long)kv_per_token, (long long)tokens, kv_per_token * tokens / 1048576.0));
  }
  print_provenance_and_quality(bundle);
  print_line("device auto", describe_auto_device());
  // What the CPU runs (it decodes on the CPU when there is no GPU): the kernels'
  // build follows its instruction sets.
  print_line("cpu", kernels::cpu_summary() +
                        "\nCPU decode kernel: " + kernels::decode_kernel_description(dtype == RunDtype::Bf16));
  return 0;
}

}  // namespace kvs::cli
