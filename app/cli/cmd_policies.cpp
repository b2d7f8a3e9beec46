#include <algorithm>
#include <cstdio>

#include "app/cli/arg_parser.h"
#include "app/cli/commands.h"
#include "engine/cache/policies/policy_registry.h"
#include "engine/models/family_registry.h"
#include "engine/session/family_policies.h"

namespace kvs::cli {

int cmd_policies(const std::vector<std::string>& args) {
  ArgParser p(args, {}, {"--help"}, 0);
  if (p.flag("--help")) {
    std::puts(
        "usage: kvstudio-cli policies\n  lists the KV-cache policies with the models they serve, their parameters and "
        "defaults");
    return 0;
  }
  // One column width for every policy's names and defaults, so the descriptions line up.
  int name_width = 0, default_width = 0;
  for (const auto& info : policy_registry())
    for (const auto& param : info.params) {
      name_width = std::max(name_width, static_cast<int>(param.name.size()));
      default_width = std::max(default_width, static_cast<int>(param.default_value.size()));
    }
  for (const auto& info : policy_registry()) {
    // The model families whose policy family the policy serves.
    std::string models;
    for (const ModelFamily* f : model_families())
      if (policy_serves(info, f->description())) models += (models.empty() ? "" : ", ") + f->description().display_name;
    std::printf("%s — %s\n    (%s)\n    models: %s\n", info.name.c_str(), info.summary.c_str(), info.reference.c_str(),
                models.empty() ? "none registered" : models.c_str());
    for (const auto& param : info.params) {
      std::string choices;
      for (const auto& c : param.choices) choices += (choices.empty() ? " {" : "|") + c;
      if (!choices.empty()) choices += "}";
      std::printf("    %-*s default %-*s %s%s\n", name_width, param.name.c_str(), default_width,
                  param.default_value.c_str(), param.help.c_str(), choices.c_str());
    }
  }
  std::puts("\nspec syntax: NAME[:KEY=VALUE,...], e.g. linear:rho=1/6,n_init=4");
  return 0;
}

}  // namespace kvs::cli
