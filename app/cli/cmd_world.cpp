#include <cstdio>
#include <string>

#include "app/cli/arg_parser.h"
#include "app/cli/commands.h"
#include "engine/core/errors.h"
#include "engine/image/png_file.h"
#include "engine/world/scene_grid.h"
#include "engine/world/scene_world.h"

namespace kvs::cli {

namespace {

// A class given by name ("lake") or label ("2").
int parse_scene_class(const std::string& text) {
  const auto& classes = world::scene_classes();
  for (std::size_t i = 0; i < classes.size(); ++i)
    if (classes[i].name == text) return static_cast<int>(i);
  if (!text.empty() && text.find_first_not_of("0123456789") == std::string::npos && text.size() < 6) {
    const int id = std::stoi(text);
    if (id < static_cast<int>(classes.size())) return id;
  }
  std::string names;
  for (const auto& c : classes) names += (names.empty() ? "" : ", ") + c.name;
  throw InvalidArgumentError("unknown scene class '" + text + "' (classes: " + names + ", or 0.." +
                             std::to_string(classes.size() - 1) + ")");
}

std::vector<int> parse_scene_classes(const std::string& list) {
  std::vector<int> ids;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = list.find(',', start);
    const std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    ids.push_back(parse_scene_class(item));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return ids;
}

}  // namespace

int cmd_world(const std::vector<std::string>& args) {
  ArgParser p(args, {"--out", "--size", "--per-class", "--seed", "--classes"}, {"--help", "--list"}, 0);
  if (p.flag("--help")) {
    std::puts(
        "usage: kvstudio-cli world --out FILE.png [--size 256] [--per-class 8] [--seed S] [--classes a,b,...]\n"
        "       kvstudio-cli world --list\n"
        "  The procedural image world the demo models are trained on: --out writes a labelled grid,\n"
        "  one row per class; sample j of each row is the scene for seed S + j. --list prints the\n"
        "  classes (label, name, description). Classes are given by name or label.");
    return 0;
  }
  const auto& classes = world::scene_classes();
  if (p.flag("--list")) {
    if (p.has("--out")) throw InvalidArgumentError("--list and --out cannot be combined");
    for (std::size_t i = 0; i < classes.size(); ++i)
      std::printf("%2zu  %-14s %s\n", i, classes[i].name.c_str(), classes[i].description.c_str());
    return 0;
  }
  const std::string out = p.require("--out");
  world::SceneGridOptions options;
  const int64_t size = p.get_int("--size", 256);
  if (size < world::kMinSceneSize || size > 1024)
    throw InvalidArgumentError(std::string("--size must be ") + std::to_string(world::kMinSceneSize) +
                               "..1024 px, got " + std::to_string(size));
  const int64_t per_class = p.get_int("--per-class", 8);
  if (per_class < 1 || per_class > 64)
    throw InvalidArgumentError(std::string("--per-class must be 1..64, got ") + std::to_string(per_class));
  options.size_px = static_cast<int>(size);
  options.per_class = static_cast<int>(per_class);
  options.seed = p.get_u64("--seed", 0);
  if (p.has("--classes")) options.classes = parse_scene_classes(p.get("--classes", ""));
  const RgbImage grid = world::render_scene_grid(options);
  std::string rows;
  for (const int c : options.classes.empty() ? std::vector<int>{} : options.classes)
    rows += (rows.empty() ? "" : ",") + classes[static_cast<std::size_t>(c)].name;
  const std::string parameters = std::string("KV Studio procedural world grid: size ") + std::to_string(size) +
                                 ", per class " + std::to_string(per_class) + ", seed " + std::to_string(options.seed) +
                                 ", classes " + (rows.empty() ? "all" : rows);
  write_png(out, grid, {{"parameters", parameters}});
  std::printf("%s (%dx%d, %zu classes x %d samples)\n", out.c_str(), grid.width, grid.height,
              options.classes.empty() ? classes.size() : options.classes.size(), options.per_class);
  return 0;
}

}  // namespace kvs::cli
