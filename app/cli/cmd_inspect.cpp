#include <nlohmann/json.hpp>

#include <cstdio>

#include "app/cli/arg_parser.h"
#include "app/cli/commands.h"
#include "engine/core/errors.h"
#include "engine/image/png_file.h"

namespace kvs::cli {

int cmd_inspect(const std::vector<std::string>& args) {
  ArgParser p(args, {}, {"--help", "--json"}, 1);
  if (p.flag("--help") || p.positional().empty()) {
    std::puts(
        "usage: kvstudio-cli inspect <image.png> [--json]\n"
        "  prints the generation parameters stored in a PNG made by KV Studio");
    return p.flag("--help") ? 0 : 2;
  }
  const std::string path = p.positional()[0];
  const PngContents png = read_png(path);
  std::string parameters, meta;
  for (const auto& [key, value] : png.text) {
    if (key == "parameters") parameters = value;
    if (key == "kvstudio") meta = value;
  }
  if (meta.empty()) throw FormatError("file " + path + ": has no KV Studio metadata (not made by KV Studio?)");
  if (p.flag("--json")) {
    try {
      std::printf("%s\n", nlohmann::json::parse(meta).dump(2).c_str());
    } catch (const nlohmann::json::exception& e) {
      throw FormatError("file " + path + ": KV Studio metadata is not valid JSON (" + e.what() + ")");
    }
  } else {
    std::printf("%s\n", parameters.c_str());
  }
  return 0;
}

}  // namespace kvs::cli
