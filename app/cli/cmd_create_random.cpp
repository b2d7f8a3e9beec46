#include <cstdio>

#include "app/cli/arg_parser.h"
#include "app/cli/commands.h"
#include "app/cli/family_options.h"
#include "engine/core/errors.h"
#include "engine/models/family_registry.h"

namespace kvs::cli {
namespace {

// The family that writes `preset`: the one listing it, else the one whose name
// prefixes it ("var-d17" -> var, which names its sizes in the error).
const ModelFamily& family_of_preset(const std::string& preset) {
  for (const ModelFamily* f : model_families())
    if (f->description().has_random_preset(preset)) return *f;
  for (const ModelFamily* f : model_families())
    if (preset.rfind(f->name() + "-", 0) == 0) return *f;
  std::string presets;
  for (const ModelFamily* f : model_families())
    for (const std::string& p : f->description().random_presets) presets += (presets.empty() ? "" : ", ") + p;
  throw InvalidArgumentError("unknown preset '" + preset + "' (presets: " + presets + ")");
}

}  // namespace

int cmd_create_random(const std::vector<std::string>& args) {
  ArgParser p(args, {kAnyValueOption}, {"--help"}, 0);
  if (p.flag("--help")) {
    for (const ModelFamily* f : model_families())
      std::printf("usage: kvstudio-cli create-random --out DIR %s\n", f->description().create_random_usage.c_str());
    return 0;
  }
  const std::string preset = p.get("--preset", "demo");
  const ModelFamily& family = family_of_preset(preset);
  std::printf("%s\n", family.write_random(preset, family_options(p, {"--preset"})).c_str());
  return 0;
}

}  // namespace kvs::cli
