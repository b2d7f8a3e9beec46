#include "engine/bench/bench_output_dir.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <system_error>

#include "engine/cache/policies/policy_registry.h"
#include "engine/core/errors.h"
#include "engine/image/png_file.h"
#include "engine/session/generation_metadata.h"

namespace kvs {
namespace {
namespace fs = std::filesystem;

constexpr const char* kSettingsFile = "settings.json";

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FileError("cannot read " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

nlohmann::json read_json(const fs::path& path) {
  try {
    return nlohmann::json::parse(read_text(path));
  } catch (const nlohmann::json::exception& e) {
    throw FormatError(path.string() + ": not JSON (" + e.what() + ")");
  }
}

// Written whole or not at all: a temporary file renamed over the old one.
void write_atomically(const fs::path& path, const std::string& text) {
  const fs::path temp = path.string() + ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) throw FileError("cannot write " + temp.string());
  }
  std::error_code ec;
  fs::rename(temp, path, ec);
  if (ec) throw FileError("cannot write " + path.string() + ": " + ec.message());
}

// The shard files of a folder: "shard-I-of-N" stems with a statistics file.
std::vector<std::string> shard_stems(const fs::path& dir) {
  std::vector<std::string> stems;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("shard-", 0) == 0 && entry.path().extension() == ".json" && name.find(".tmp-") == std::string::npos)
      stems.push_back(entry.path().stem().string());
  }
  std::sort(stems.begin(), stems.end());
  return stems;
}

// A shard's results: its statistics, and the lines of the runs they name.
// `kept_lines` receives those lines as written (to drop the others).
BenchResults read_shard(const fs::path& dir, const std::string& stem, std::vector<std::string>* kept_lines) {
  const fs::path stats_path = dir / (stem + ".json");
  const fs::path lines_path = dir / (stem + ".jsonl");
  BenchResults results = bench_results_from_statistics(read_json(stats_path), stats_path.string());
  std::map<std::string, size_t> policy_index;
  for (size_t pi = 0; pi < results.policies.size(); ++pi) policy_index[results.policies[pi].policy] = pi;
  std::set<int64_t> finished;
  std::vector<std::pair<size_t, BenchImageResult>> images;
  std::vector<std::string> raw;
  std::ifstream in(lines_path, std::ios::binary);
  if (!in && !results.runs.empty()) throw FileError("cannot read " + lines_path.string());
  std::string line;
  int64_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    const std::string where = lines_path.string() + " line " + std::to_string(number);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception&) {
      if (in.peek() == std::char_traits<char>::eof()) break;  // a line cut short when the shard was stopped
      throw FormatError(where + ": not JSON");
    }
    if (j.contains("run_done")) {
      const int64_t r = j.at("run_done").get<int64_t>();
      finished.insert(r);
      if (results.runs.count(r)) raw.push_back(line);
      continue;
    }
    const auto it = policy_index.find(j.value("policy", std::string()));
    if (it == policy_index.end()) throw FormatError(where + ": a policy the bench did not run");
    BenchImageResult image = bench_image_from_json(j, where);
    if (!results.runs.count(image.run)) continue;  // a run not finished: made again
    images.emplace_back(it->second, std::move(image));
    raw.push_back(line);
  }
  for (int64_t r : results.runs)
    if (!finished.count(r))
      throw FormatError(stats_path.string() + " counts run " + std::to_string(r) + " but " + lines_path.string() +
                        " does not finish it; remove both files to make the shard again");
  for (auto& [pi, image] : images) results.policies[pi].images.push_back(std::move(image));
  for (const BenchPolicyResults& p : results.policies)
    if (static_cast<int64_t>(p.images.size()) < static_cast<int64_t>(results.runs.size()))
      throw FormatError(lines_path.string() + " lacks images of " + p.policy + " that " + stats_path.string() +
                        " counts; remove both files to make the shard again");
  if (kept_lines) *kept_lines = std::move(raw);
  return results;
}

}  // namespace

nlohmann::json bench_settings(const BenchOptions& o, const std::string& version) {
  std::vector<std::string> policies{"full"};
  for (const std::string& text : o.policies) {
    const std::string spec = parse_policy_spec(text).text();
    if (std::find(policies.begin(), policies.end(), spec) == policies.end()) policies.push_back(spec);
  }
  nlohmann::json prompts = nlohmann::json::array();
  for (const BenchPrompt& p : o.prompts)
    prompts.push_back({p.class_id ? nlohmann::json(*p.class_id) : nlohmann::json(nullptr), p.text});
  auto optional = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  return {{"format", "kvstudio-bench-folder"},
          {"format_version", 1},
          {"model", o.model_path},
          {"random", o.random_arch},
          {"policies", policies},
          {"batch", o.batch},
          {"images", o.images},
          {"seed", o.seed},
          {"classes", o.classes},
          {"prompts", prompts},
          {"cfg", optional(o.cfg)},
          {"temperature", optional(o.temperature)},
          {"top_k", optional(o.top_k)},
          {"top_p", optional(o.top_p)},
          {"sampler_rng", to_string(o.sampler_rng)},
          {"device", o.device},
          {"threads", o.threads},
          {"dtype", o.dtype},
          {"cuda_graphs", o.cuda_graphs},
          {"steps", o.steps},
          {"rounds", o.rounds},
          {"save_images", o.save_images},
          {"version", version}};
}

std::string settings_difference(const nlohmann::json& a, const std::string& a_name, const nlohmann::json& b,
                                const std::string& b_name) {
  std::set<std::string> keys;
  for (const auto& [k, v] : a.items()) keys.insert(k);
  for (const auto& [k, v] : b.items()) keys.insert(k);
  for (const std::string& k : keys) {
    const nlohmann::json va = a.contains(k) ? a.at(k) : nlohmann::json("(not set)");
    const nlohmann::json vb = b.contains(k) ? b.at(k) : nlohmann::json("(not set)");
    if (va != vb) return k + " is " + va.dump() + " " + a_name + " and " + vb.dump() + " " + b_name;
  }
  return {};
}

BenchOutputDir::BenchOutputDir(const std::string& dir, const nlohmann::json& settings, int64_t shard_index,
                               int64_t shard_count, std::string version)
    : dir_(dir), shard_index_(shard_index), shard_count_(shard_count), version_(std::move(version)) {
  if (shard_count < 1 || shard_index < 0 || shard_index >= shard_count)
    throw InvalidArgumentError("bench: shard " + std::to_string(shard_index) + "/" + std::to_string(shard_count) +
                               " does not exist (shards 0.." + std::to_string(shard_count - 1) + ")");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!fs::is_directory(dir)) throw FileError("cannot create the output folder " + dir);
  const fs::path settings_path = fs::path(dir) / kSettingsFile;
  if (!fs::exists(settings_path)) write_atomically(settings_path, settings.dump(2) + "\n");
  const nlohmann::json there = read_json(settings_path);
  const std::string difference = settings_difference(there, "there", settings, "here");
  if (!difference.empty())
    throw InvalidArgumentError("--out " + dir + " holds a bench with other settings: " + difference +
                               "; use another folder, or the settings it was made with");

  const std::string stem = shard_name();
  if (fs::exists(fs::path(dir) / (stem + ".json"))) {
    std::vector<std::string> kept;
    results_ = read_shard(dir, stem, &kept);
    std::string text;
    for (const std::string& line : kept) text += line + "\n";
    write_atomically(fs::path(dir) / (stem + ".jsonl"), text);  // without an unfinished run's lines
  } else {
    fs::remove(fs::path(dir) / (stem + ".jsonl"), ec);  // lines of a first run that did not finish
  }
}

std::string BenchOutputDir::shard_name() const {
  return "shard-" + std::to_string(shard_index_) + "-of-" + std::to_string(shard_count_);
}

std::set<int64_t> BenchOutputDir::done_elsewhere() const {
  std::set<int64_t> done;
  for (const std::string& stem : shard_stems(dir_)) {
    if (stem == shard_name()) continue;
    const fs::path path = fs::path(dir_) / (stem + ".json");
    const BenchResults other = bench_results_from_statistics(read_json(path), path.string());
    done.insert(other.runs.begin(), other.runs.end());
  }
  return done;
}

void BenchOutputDir::record_run(const BenchRunOutput& run, const BenchResults& results) {
  std::string text;
  for (size_t pi = 0; pi < results.policies.size(); ++pi) {
    const BenchPolicyResults& p = results.policies[pi];
    const GenerationResult* made = pi < run.policies.size() ? run.policies[pi].result : nullptr;
    size_t k = 0;  // the image's index within its run
    for (const BenchImageResult& image : p.images) {
      if (image.run != run.run) continue;
      if (!image.png.empty() && made && k < made->images.size()) {
        const fs::path png = fs::path(dir_) / image.png;
        std::error_code ec;
        fs::create_directories(png.parent_path(), ec);
        write_png(png.string(), made->images[k],
                  generation_png_chunks(*run.policies[pi].request, *made, k, run.class_names, version_));
      }
      text += to_json(image, p.policy).dump() + "\n";
      ++k;
    }
  }
  text += nlohmann::json{{"run_done", run.run}}.dump() + "\n";
  const fs::path lines_path = fs::path(dir_) / (shard_name() + ".jsonl");
  {
    std::ofstream out(lines_path, std::ios::binary | std::ios::app);
    out << text;
    out.flush();
    if (!out) throw FileError("cannot write " + lines_path.string());
  }
  write_statistics(results);
}

void BenchOutputDir::write_statistics(const BenchResults& results) const {
  write_atomically(fs::path(dir_) / (shard_name() + ".json"), bench_statistics_json(results).dump() + "\n");
}

BenchResults read_bench_folders(const std::vector<std::string>& dirs, nlohmann::json* settings) {
  if (dirs.empty()) throw InvalidArgumentError("bench merge: name at least one folder");
  nlohmann::json first;
  std::vector<BenchResults> parts;
  std::map<int64_t, std::string> owner;  // run -> shard file
  for (size_t d = 0; d < dirs.size(); ++d) {
    const fs::path settings_path = fs::path(dirs[d]) / kSettingsFile;
    if (!fs::exists(settings_path))
      throw FileError("bench merge: " + dirs[d] + " holds no bench (no " + kSettingsFile + ")");
    const nlohmann::json here = read_json(settings_path);
    if (d == 0) {
      first = here;
    } else {
      const std::string difference = settings_difference(first, "in " + dirs[0], here, "in " + dirs[d]);
      if (!difference.empty())
        throw InvalidArgumentError("bench merge: the folders hold benches with other settings: " + difference);
    }
    for (const std::string& stem : shard_stems(dirs[d])) {
      BenchResults part = read_shard(dirs[d], stem, nullptr);
      const std::string name = (fs::path(dirs[d]) / (stem + ".json")).string();
      for (int64_t r : part.runs) {
        const auto [it, inserted] = owner.emplace(r, name);
        if (!inserted)
          throw InvalidArgumentError("bench merge: run " + std::to_string(r) + " is in both " + it->second + " and " +
                                     name + "; give each run once");
      }
      parts.push_back(std::move(part));
    }
  }
  if (parts.empty()) throw FileError("bench merge: no shard files (shard-I-of-N.json) in the folders given");
  if (settings) *settings = first;
  return merge_bench_results(parts);
}

}  // namespace kvs
