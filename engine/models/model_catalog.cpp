#include "engine/models/model_catalog.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <set>

#include "engine/core/errors.h"
#include "engine/io/model_bundle.h"
#include "engine/models/family_registry.h"

namespace kvs {
namespace fs = std::filesystem;

ModelSamplingDefaults read_sampling_defaults(const nlohmann::json& manifest) {
  ModelSamplingDefaults out;
  if (!manifest.contains("sampling_defaults") || !manifest["sampling_defaults"].is_object()) return out;
  const auto& d = manifest["sampling_defaults"];
  if (d.contains("cfg_scale") && d["cfg_scale"].is_number()) out.cfg_scale = d["cfg_scale"].get<double>();
  if (d.contains("temperature") && d["temperature"].is_number()) out.temperature = d["temperature"].get<double>();
  if (d.contains("top_p") && d["top_p"].is_number()) out.top_p = d["top_p"].get<double>();
  if (d.contains("top_k") && d["top_k"].is_number_integer()) out.top_k = d["top_k"].get<int64_t>();
  if (d.contains("steps") && d["steps"].is_number_integer()) out.steps = d["steps"].get<int64_t>();
  if (d.contains("cfg_schedule") && d["cfg_schedule"].is_string())
    out.cfg_schedule = d["cfg_schedule"].get<std::string>();
  return out;
}

ModelSummary summarize_model_bundle(const io::ModelBundle& bundle) {
  ModelSummary s;
  s.dir = bundle.dir;
  s.name = bundle.name();
  s.family = bundle.family();
  s.class_names = bundle.class_names();
  const nlohmann::json& m = bundle.manifest;
  if (m.contains("provenance") && m["provenance"].is_object()) s.note = m["provenance"].value("note", std::string());
  s.sampling_defaults = read_sampling_defaults(m);
  if (m.contains("example_prompts") && m["example_prompts"].is_array())
    for (const auto& p : m["example_prompts"])
      if (p.is_string() && !p.get<std::string>().empty()) s.example_prompts.push_back(p.get<std::string>());
  std::error_code ec;
  const auto size = fs::file_size(bundle.weights_path(), ec);
  if (ec) throw FileError("weights file " + bundle.weights_path() + " is missing or unreadable");
  s.weights_bytes = static_cast<int64_t>(size);
  const ModelFamily& family = find_model_family(s.family);
  family.summarize(bundle, s);
  s.finishes_pictures = family.description().has_request_option("from_image") && m.contains("files") &&
                        m["files"].is_object() && m["files"].contains("vq_encoder");
  return s;
}

ModelSummary summarize_model_bundle(const std::string& dir) {
  ModelSummary s;
  s.dir = dir;
  s.name = fs::path(dir).filename().string();
  try {
    return summarize_model_bundle(io::ModelBundle::open(dir));
  } catch (const Error& e) {
    s.problem = e.what();
  } catch (const nlohmann::json::exception& e) {
    s.problem = "model.json in " + dir + ": " + e.what();
  } catch (const std::exception& e) {
    s.problem = e.what();
  }
  return s;
}

std::vector<ModelSummary> find_model_bundles(const std::vector<std::string>& folders) {
  std::vector<ModelSummary> out;
  std::set<std::string> seen;
  auto add = [&](const fs::path& dir) {
    std::error_code ec;
    const fs::path canonical = fs::weakly_canonical(dir, ec);
    const std::string key = ec ? dir.string() : canonical.string();
    if (!seen.insert(key).second) return;
    out.push_back(summarize_model_bundle(key));
  };
  for (const std::string& folder : folders) {
    std::error_code ec;
    if (folder.empty() || !fs::is_directory(folder, ec)) continue;
    if (fs::exists(fs::path(folder) / "model.json", ec)) {
      add(folder);
      continue;
    }
    std::vector<fs::path> children;
    for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec))
      if (it->is_directory(ec) && fs::exists(it->path() / "model.json", ec)) children.push_back(it->path());
    std::sort(children.begin(), children.end());
    for (const auto& c : children) add(c);
  }
  return out;
}

}  // namespace kvs
