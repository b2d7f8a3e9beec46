#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <string>

#include "app/cli/arg_parser.h"
#include "app/cli/commands.h"
#include "engine/core/errors.h"
#include "engine/image/png_file.h"
#include "engine/world/scene_captions.h"
#include "engine/world/scene_grid.h"
#include "engine/world/scene_world.h"

namespace kvs::cli {

namespace {

// A class given by name ("lake") or label ("2").
int parse_scene_class(const std::string& text) {
  const auto& classes = world::scene_classes();
  if (const int id = world::scene_class_id(text); id >= 0) return id;
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

// FILE.png -> FILE.json: the captions and facts go beside the grid.
std::string json_path_for(const std::string& png) {
  const std::size_t dot = png.rfind('.');
  return (dot == std::string::npos ? png : png.substr(0, dot)) + ".json";
}

// Prints every picture's captions, and with a grid file writes them with the facts
// beside it as JSON (one entry per picture, in grid order: row by row).
void write_captions(const world::SceneGridOptions& options, world::CaptionSplit split, int per_image,
                    const std::string& json_path) {
  std::vector<int> rows = options.classes;
  if (rows.empty())
    for (int c = 0; c < static_cast<int>(world::scene_classes().size()); ++c) rows.push_back(c);
  nlohmann::json pictures = nlohmann::json::array();
  for (std::size_t r = 0; r < rows.size(); ++r)
    for (int j = 0; j < options.per_class; ++j) {
      const uint64_t seed = options.seed + static_cast<uint64_t>(j);
      const world::SceneFacts facts = world::scene_facts(rows[r], seed);
      const std::string& name = world::scene_classes()[static_cast<std::size_t>(rows[r])].name;
      nlohmann::json captions = nlohmann::json::array();
      for (int k = 0; k < per_image; ++k) {
        const world::Caption caption = world::scene_caption(facts, static_cast<uint64_t>(k), split);
        std::printf("%s %llu: %s\n", name.c_str(), static_cast<unsigned long long>(seed), caption.text.c_str());
        captions.push_back(caption.text);
      }
      pictures.push_back({{"row", r},
                          {"column", j},
                          {"class", name},
                          {"seed", seed},
                          {"captions", captions},
                          {"facts", nlohmann::json::parse(world::facts_json(facts))}});
    }
  const nlohmann::json json = {{"split", world::to_string(split)}, {"pictures", pictures}};
  if (json_path.empty()) return;
  std::ofstream file(json_path, std::ios::binary);
  file << json.dump(1) << "\n";
  if (!file) throw FileError("cannot write " + json_path);
}

// Writes a bench prompt file (`bench --prompts`): one line CLASS<TAB>CAPTION per
// caption, picture by picture in rounds over the classes (seed S for every class,
// then S + 1, ...), so that a bench of fewer images than lines still covers the
// classes evenly.
void write_prompt_file(const world::SceneGridOptions& options, world::CaptionSplit split, int per_image,
                       const std::string& path) {
  std::vector<int> rows = options.classes;
  if (rows.empty())
    for (int c = 0; c < static_cast<int>(world::scene_classes().size()); ++c) rows.push_back(c);
  const uint64_t last = options.seed + static_cast<uint64_t>(options.per_class) - 1;
  std::string text = "# kvstudio-cli world --prompt-file: " + std::string(world::to_string(split)) +
                     " captions of procedural-world pictures, seeds " + std::to_string(options.seed) + ".." +
                     std::to_string(last) +
                     (options.seed >= world::kHeldOutSeedBase ? " (held out from training)" : "") +
                     "\n# one line per caption: CLASS<TAB>PROMPT, for kvstudio-cli bench --prompts\n";
  int64_t lines = 0;
  for (int j = 0; j < options.per_class; ++j)
    for (const int c : rows) {
      const world::SceneFacts facts = world::scene_facts(c, options.seed + static_cast<uint64_t>(j));
      for (int k = 0; k < per_image; ++k) {
        text += world::scene_classes()[static_cast<std::size_t>(c)].name + "\t" +
                world::scene_caption(facts, static_cast<uint64_t>(k), split).text + "\n";
        ++lines;
      }
    }
  std::ofstream file(path, std::ios::binary);
  file << text;
  if (!file) throw FileError("cannot write " + path);
  std::printf("%s (%lld prompts: %zu classes x %d pictures x %d captions, %s split, seeds %llu..%llu)\n", path.c_str(),
              static_cast<long long>(lines), rows.size(), options.per_class, per_image, world::to_string(split),
              static_cast<unsigned long long>(options.seed), static_cast<unsigned long long>(last));
}

}  // namespace

int cmd_world(const std::vector<std::string>& args) {
  ArgParser p(args,
              {"--out", "--size", "--per-class", "--seed", "--classes", "--split", "--captions-per-image",
               "--prompt-file"},
              {"--help", "--list", "--captions"}, 0);
  if (p.flag("--help")) {
    std::puts(
        "usage: kvstudio-cli world --out FILE.png [--size 256] [--per-class 8] [--seed S] [--classes a,b,...]\n"
        "                          [--captions [--split train|held-out] [--captions-per-image K]]\n"
        "       kvstudio-cli world --captions [--per-class 8] [--seed S] [--classes a,b,...] [--split ...]\n"
        "       kvstudio-cli world --prompt-file FILE [--per-class 8] [--seed S] [--classes a,b,...]\n"
        "                          [--split held-out|train] [--captions-per-image K]\n"
        "       kvstudio-cli world --list\n"
        "  The procedural image world the demo models are trained on: --out writes a labelled grid,\n"
        "  one row per class; sample j of each row is the scene for seed S + j. --list prints the\n"
        "  classes (label, name, description). Classes are given by name or label.\n"
        "  --captions prints K English captions per picture (class seed: caption), built from the\n"
        "  facts the painter drew with; with --out it also writes FILE.json beside the grid with\n"
        "  each picture's captions and facts (time of day, sun or moon, colours, clouds, objects).\n"
        "  --split train (default) uses the training phrasings and word orders, held-out only the\n"
        "  ones kept out of training for evaluation.\n"
        "  --prompt-file writes a prompt file for `kvstudio-cli bench --prompts`: one line\n"
        "  CLASS<TAB>CAPTION per caption, in rounds over the classes (seed S for each class, then\n"
        "  S + 1, ...). Its defaults are for evaluation: the held-out split and held-out seeds,");
    std::printf("  never trained on (S = %llu).\n", static_cast<unsigned long long>(world::kHeldOutSeedBase));
    return 0;
  }
  const auto& classes = world::scene_classes();
  const bool prompt_file = p.has("--prompt-file");
  if (prompt_file && (p.has("--out") || p.flag("--captions") || p.flag("--list") || p.has("--size")))
    throw InvalidArgumentError("--prompt-file cannot be combined with --out, --size, --captions or --list");
  if (p.flag("--list")) {
    if (p.has("--out")) throw InvalidArgumentError("--list and --out cannot be combined");
    for (std::size_t i = 0; i < classes.size(); ++i)
      std::printf("%2zu  %-14s %s\n", i, classes[i].name.c_str(), classes[i].description.c_str());
    return 0;
  }
  const bool captions = p.flag("--captions");
  if (!captions && !prompt_file && p.has("--split"))
    throw InvalidArgumentError("--split applies to --captions and --prompt-file");
  if (!captions && !prompt_file && p.has("--captions-per-image"))
    throw InvalidArgumentError("--captions-per-image applies to --captions and --prompt-file");
  const world::CaptionSplit split = world::parse_caption_split(p.get("--split", prompt_file ? "held-out" : "train"));
  const int64_t per_image = p.get_int("--captions-per-image", 1);
  if (per_image < 1 || per_image > 16)
    throw InvalidArgumentError(std::string("--captions-per-image must be 1..16, got ") + std::to_string(per_image));
  const std::string out = captions || prompt_file ? p.get("--out", "") : p.require("--out");
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
  options.seed = p.get_u64("--seed", prompt_file ? world::kHeldOutSeedBase : 0);
  if (p.has("--classes")) options.classes = parse_scene_classes(p.get("--classes", ""));
  if (prompt_file) {
    write_prompt_file(options, split, static_cast<int>(per_image), p.get("--prompt-file", ""));
    return 0;
  }
  if (out.empty()) {
    write_captions(options, split, static_cast<int>(per_image), "");
    return 0;
  }
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
  if (captions) {
    const std::string json = json_path_for(out);
    write_captions(options, split, static_cast<int>(per_image), json);
    std::printf("%s (captions and facts, %s split)\n", json.c_str(), world::to_string(split));
  }
  return 0;
}

}  // namespace kvs::cli
