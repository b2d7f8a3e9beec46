#include <cstdio>

#include "app/cli/arg_parser.h"
#include "app/cli/commands.h"
#include "app/cli/family_options.h"
#include "engine/core/errors.h"
#include "engine/models/family_registry.h"

namespace kvs::cli {

int cmd_convert(const std::vector<std::string>& args) {
  ArgParser p(args, {kAnyValueOption}, {"--help", "--quiet"}, 0);
  if (p.flag("--help")) {
    for (const ModelFamily* f : model_families())
      std::printf("usage: kvstudio-cli convert --family %s %s\n", f->name().c_str(),
                  f->description().convert_usage.c_str());
    return 0;
  }
  const std::string name = p.require("--family");
  const ModelFamily* family = lookup_model_family(name);
  if (!family)
    throw InvalidArgumentError("unknown --family '" + name + "' (supported: " + supported_family_names() + ")");
  const FamilyOptions options = family_options(p, {"--family"});
  const bool quiet = p.flag("--quiet");
  const std::string report = family->convert(options, [&](double f, const std::string& stage) {
    if (!quiet) std::fprintf(stderr, "[%3d%%] %s\n", static_cast<int>(f * 100), stage.c_str());
  });
  std::printf("%s\n", report.c_str());
  return 0;
}

}  // namespace kvs::cli
