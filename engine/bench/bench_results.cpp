#include "engine/bench/bench_results.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "engine/bench/demo_quality_judge.h"
#include "engine/core/cuda_graphs.h"
#include "engine/core/errors.h"

namespace kvs {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

nlohmann::json number_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

// Means in image order over the values that are numbers.
struct Mean {
  double sum = 0;
  int64_t n = 0;
  void add(double v) {
    if (std::isnan(v)) return;
    sum += v;
    ++n;
  }
  double value() const { return n > 0 ? sum / static_cast<double>(n) : kNaN; }
};

void add_count(AttributeCount& total, const AttributeCount& c) {
  total.judged += c.judged;
  total.shown += c.shown;
}

nlohmann::json count_json(const AttributeCount& c) { return nlohmann::json::array({c.judged, c.shown}); }

AttributeCount count_from_json(const nlohmann::json& j) {
  AttributeCount c;
  if (j.is_null()) return c;
  c.judged = j.at(0).get<int64_t>();
  c.shown = j.at(1).get<int64_t>();
  return c;
}

double double_or_nan(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it == j.end() || it->is_null() ? kNaN : it->get<double>();
}

}  // namespace

int64_t bench_run_count(int64_t images, int64_t batch) { return batch > 0 ? (images + batch - 1) / batch : 0; }

std::string bench_png_name(int64_t image, const std::string& policy) {
  std::string name = policy;
  for (char& c : name)
    if (c == ':' || c == ',' || c == '/' || c == '\\' || c == ' ') c = '_';
  char index[32];
  std::snprintf(index, sizeof index, "%06lld", static_cast<long long>(image));
  return "images/" + std::string(index) + "-" + name + ".png";
}

std::vector<int64_t> missing_runs(const BenchResults& results) {
  std::vector<int64_t> missing;
  for (int64_t r = 0; r < bench_run_count(results.images, results.batch); ++r)
    if (!results.runs.count(r)) missing.push_back(r);
  return missing;
}

std::vector<BenchRecord> summarize_bench(const BenchResults& results) {
  if (results.runs.empty() || results.policies.empty())
    throw InvalidArgumentError("bench: no run to summarize (every shard is empty)");
  std::vector<BenchRecord> records;
  double full_flops_sum = 0;
  for (const BenchPolicyResults& p : results.policies) {
    BenchRecord rec;
    rec.policy = p.policy;
    rec.params = p.params;
    rec.family = results.family;
    rec.model = results.model;
    rec.device = results.device;
    rec.dtype = results.dtype;
    rec.cuda_graphs = results.cuda_graphs;
    rec.grid_height = results.grid_height;
    rec.grid_width = results.grid_width;
    rec.steps = results.steps;
    rec.batch = results.batch;
    rec.rounds = results.rounds;
    rec.images = static_cast<int64_t>(p.images.size());
    rec.process_peak_bytes = p.process_peak_bytes;
    rec.process_peak_is_own = p.process_peak_is_own;
    rec.process_rss_delta_bytes = p.process_rss_delta_bytes;

    Mean agreement, psnrs, ssims;
    double flops_sum = 0;
    int64_t flops_counted = 0, correct = 0, judged = 0;
    AttributeScore attributes;
    int64_t last_run = -1;
    for (const BenchImageResult& im : p.images) {
      if (im.run != last_run) {  // the run's fields, once per run (images are in order)
        last_run = im.run;
        rec.generation_ms += im.run_generation_ms;
        rec.kv_bytes_logical = std::max(rec.kv_bytes_logical, im.kv_bytes_logical);
        rec.kv_bytes_allocated = std::max(rec.kv_bytes_allocated, im.kv_bytes_allocated);
        rec.kv_bytes_peak = std::max(rec.kv_bytes_peak, im.kv_bytes_peak);
        rec.kv_bytes_full = std::max(rec.kv_bytes_full, im.kv_bytes_full);
        rec.device_peak_bytes = std::max(rec.device_peak_bytes, im.device_peak_bytes);
      }
      agreement.add(im.token_agreement);
      if (std::isfinite(im.psnr)) psnrs.add(im.psnr);
      ssims.add(im.ssim);
      if (im.identical) ++rec.identical_images;
      if (!std::isnan(im.flops)) {
        flops_sum += im.flops;
        ++flops_counted;
      }
      if (im.predicted_class >= 0) {
        ++judged;
        if (im.predicted_class == im.class_id) ++correct;
      }
      add_count(attributes.time, im.attributes.time);
      add_count(attributes.light_side, im.attributes.light_side);
      add_count(attributes.light_height, im.attributes.light_height);
      add_count(attributes.colour, im.attributes.colour);
      add_count(attributes.clouds, im.attributes.clouds);
    }
    const double image_tokens = static_cast<double>(rec.images * rec.grid_height * rec.grid_width);
    rec.tokens_per_s = rec.generation_ms > 0 ? image_tokens * 1000.0 / rec.generation_ms : 0;
    rec.token_agreement = agreement.value();
    rec.psnr = psnrs.value();
    rec.ssim = ssims.value();
    rec.flops = results.measures_flops && flops_counted > 0 ? flops_sum / static_cast<double>(flops_counted) : kNaN;
    if (records.empty()) full_flops_sum = flops_sum;
    rec.flops_vs_full = results.measures_flops && full_flops_sum > 0 ? flops_sum / full_flops_sum : kNaN;
    rec.class_accuracy = rec.demo_fid = kNaN;
    if (results.judged && judged > 0) {
      rec.class_accuracy = static_cast<double>(correct) / static_cast<double>(judged);
      rec.demo_fid = demo_fid_from_sums(p.features, results.reference);
      rec.quality_reference_images = results.reference.count;
      rec.class_judged = judged;
    }
    if (results.text) {
      rec.time_accuracy = attributes.time.accuracy();
      rec.time_judged = attributes.time.judged;
      rec.light_side_accuracy = attributes.light_side.accuracy();
      rec.light_side_judged = attributes.light_side.judged;
      rec.light_height_accuracy = attributes.light_height.accuracy();
      rec.light_height_judged = attributes.light_height.judged;
      rec.colour_accuracy = attributes.colour.accuracy();
      rec.colour_judged = attributes.colour.judged;
      rec.clouds_accuracy = attributes.clouds.accuracy();
      rec.clouds_judged = attributes.clouds.judged;
      rec.attribute_accuracy = attributes.all().accuracy();
      rec.attribute_judged = attributes.all().judged;
    }
    rec.speedup_vs_full = records.empty()               ? 1.0
                          : records[0].tokens_per_s > 0 ? rec.tokens_per_s / records[0].tokens_per_s
                                                        : 0.0;
    records.push_back(std::move(rec));
  }
  return records;
}

BenchResults merge_bench_results(const std::vector<BenchResults>& parts) {
  if (parts.empty()) throw InvalidArgumentError("bench merge: nothing to merge");
  BenchResults merged = parts[0];
  merged.runs.clear();
  merged.model.clear();
  for (auto& p : merged.policies) {
    p.images.clear();
    p.features = FeatureSums{};
    p.process_peak_bytes = 0;
    p.process_peak_is_own = true;
    p.process_rss_delta_bytes = 0;
  }
  std::map<int64_t, size_t> owner;  // run -> part
  for (size_t k = 0; k < parts.size(); ++k) {
    const BenchResults& part = parts[k];
    if (part.policies.size() != merged.policies.size())
      throw InvalidArgumentError("bench merge: the shards ran different policies");
    for (size_t pi = 0; pi < part.policies.size(); ++pi)
      if (part.policies[pi].policy != merged.policies[pi].policy)
        throw InvalidArgumentError("bench merge: the shards ran different policies ('" + part.policies[pi].policy +
                                   "' and '" + merged.policies[pi].policy + "')");
    if (part.images != merged.images || part.batch != merged.batch || part.family != merged.family)
      throw InvalidArgumentError("bench merge: the shards are of different benches");
    for (int64_t r : part.runs) {
      const auto [it, inserted] = owner.emplace(r, k);
      if (!inserted)
        throw InvalidArgumentError("bench merge: run " + std::to_string(r) + " is in two shards (" +
                                   std::to_string(it->second + 1) + " and " + std::to_string(k + 1) +
                                   " of those given); give each run once");
    }
    if (part.runs.empty()) continue;  // an empty shard knows nothing of the model
    if (merged.model.empty()) {
      merged.model = part.model;
      merged.device = part.device;
      merged.dtype = part.dtype;
      merged.grid_height = part.grid_height;
      merged.grid_width = part.grid_width;
      merged.judged = part.judged;
      merged.reference = part.reference;
    } else if (part.grid_height != merged.grid_height || part.grid_width != merged.grid_width ||
               part.judged != merged.judged || part.reference.count != merged.reference.count) {
      throw InvalidArgumentError("bench merge: the shards were made with different models");
    }
    merged.cuda_graphs = combine_cuda_graphs_reports(merged.cuda_graphs, part.cuda_graphs);
    merged.runs.insert(part.runs.begin(), part.runs.end());
    for (size_t pi = 0; pi < part.policies.size(); ++pi) {
      const BenchPolicyResults& from = part.policies[pi];
      BenchPolicyResults& to = merged.policies[pi];
      to.images.insert(to.images.end(), from.images.begin(), from.images.end());
      to.features.add(from.features);
      to.process_peak_bytes = std::max(to.process_peak_bytes, from.process_peak_bytes);
      to.process_peak_is_own = to.process_peak_is_own && from.process_peak_is_own;
      to.process_rss_delta_bytes += from.process_rss_delta_bytes;
    }
  }
  for (auto& p : merged.policies)
    std::stable_sort(p.images.begin(), p.images.end(),
                     [](const BenchImageResult& a, const BenchImageResult& b) { return a.image < b.image; });
  return merged;
}

nlohmann::json to_json(const BenchImageResult& im, const std::string& policy) {
  nlohmann::json j = {{"policy", policy},
                      {"image", im.image},
                      {"run", im.run},
                      {"seed", im.seed},
                      {"class", im.class_id >= 0 ? nlohmann::json(im.class_id) : nlohmann::json(nullptr)}};
  if (!im.prompt.empty()) j["prompt"] = im.prompt;
  j["run_tokens_per_s"] = im.run_tokens_per_s;
  j["token_agreement"] = number_or_null(im.token_agreement);
  j["psnr"] = number_or_null(im.psnr);  // null: equal to the full cache's image (or not compared)
  j["ssim"] = number_or_null(im.ssim);
  j["identical"] = im.identical;
  j["predicted_class"] = im.predicted_class >= 0 ? nlohmann::json(im.predicted_class) : nlohmann::json(nullptr);
  j["class_correct"] = im.predicted_class >= 0 && im.class_id >= 0 ? nlohmann::json(im.predicted_class == im.class_id)
                                                                   : nlohmann::json(nullptr);
  const AttributeScore& a = im.attributes;
  if (a.all().judged > 0)
    j["attributes"] = {{"time", count_json(a.time)},
                       {"light_side", count_json(a.light_side)},
                       {"light_height", count_json(a.light_height)},
                       {"colour", count_json(a.colour)},
                       {"clouds", count_json(a.clouds)}};
  j["flops"] = number_or_null(im.flops);
  j["run_images"] = im.run_images;
  j["run_generation_ms"] = im.run_generation_ms;
  j["kv_bytes_logical"] = im.kv_bytes_logical;
  j["kv_bytes_allocated"] = im.kv_bytes_allocated;
  j["kv_bytes_peak"] = im.kv_bytes_peak;
  j["kv_bytes_full"] = im.kv_bytes_full;
  j["device_peak_bytes"] = im.device_peak_bytes >= 0 ? nlohmann::json(im.device_peak_bytes) : nlohmann::json(nullptr);
  if (!im.png.empty()) j["png"] = im.png;
  return j;
}

BenchImageResult bench_image_from_json(const nlohmann::json& j, const std::string& what) {
  try {
    BenchImageResult im;
    im.image = j.at("image").get<int64_t>();
    im.run = j.at("run").get<int64_t>();
    im.seed = j.at("seed").get<uint64_t>();
    im.class_id = j.at("class").is_null() ? -1 : j.at("class").get<int64_t>();
    im.prompt = j.value("prompt", std::string());
    im.token_agreement = double_or_nan(j, "token_agreement");
    im.ssim = double_or_nan(j, "ssim");
    im.identical = j.at("identical").get<bool>();
    // A missing PSNR is an image equal to the full cache's (+inf, left out of the mean).
    im.psnr = j.at("psnr").is_null() ? std::numeric_limits<double>::infinity() : j.at("psnr").get<double>();
    im.predicted_class = j.at("predicted_class").is_null() ? -1 : j.at("predicted_class").get<int64_t>();
    if (const auto it = j.find("attributes"); it != j.end()) {
      im.attributes.time = count_from_json(it->at("time"));
      im.attributes.light_side = count_from_json(it->at("light_side"));
      im.attributes.light_height = count_from_json(it->at("light_height"));
      im.attributes.colour = count_from_json(it->at("colour"));
      // Written since the cloud measure exists; older lines judged no clouds.
      if (it->contains("clouds")) im.attributes.clouds = count_from_json(it->at("clouds"));
    }
    im.flops = double_or_nan(j, "flops");
    im.run_images = j.at("run_images").get<int64_t>();
    im.run_generation_ms = j.at("run_generation_ms").get<double>();
    im.run_tokens_per_s = j.value("run_tokens_per_s", 0.0);
    im.kv_bytes_logical = j.at("kv_bytes_logical").get<int64_t>();
    im.kv_bytes_allocated = j.at("kv_bytes_allocated").get<int64_t>();
    im.kv_bytes_peak = j.at("kv_bytes_peak").get<int64_t>();
    im.kv_bytes_full = j.at("kv_bytes_full").get<int64_t>();
    im.device_peak_bytes = j.at("device_peak_bytes").is_null() ? -1 : j.at("device_peak_bytes").get<int64_t>();
    im.png = j.value("png", std::string());
    return im;
  } catch (const nlohmann::json::exception& e) {
    throw FormatError(what + ": malformed image line (" + e.what() + ")");
  }
}

nlohmann::json bench_statistics_json(const BenchResults& r) {
  nlohmann::json policies = nlohmann::json::array();
  for (const BenchPolicyResults& p : r.policies)
    policies.push_back({{"policy", p.policy},
                        {"params", p.params},
                        {"images", p.images.size()},
                        {"features", to_json(p.features)},
                        {"process_peak_bytes", p.process_peak_bytes},
                        {"process_peak_is_own", p.process_peak_is_own},
                        {"process_rss_delta_bytes", p.process_rss_delta_bytes}});
  return {{"family", r.family},
          {"images", r.images},
          {"batch", r.batch},
          {"rounds", r.rounds},
          {"steps", r.steps},
          {"text", r.text},
          {"measures_flops", r.measures_flops},
          {"model", r.model},
          {"device", r.device},
          {"dtype", r.dtype},
          {"cuda_graphs", r.cuda_graphs},
          {"grid", {r.grid_height, r.grid_width}},
          {"judged", r.judged},
          {"reference", to_json(r.reference)},
          {"runs", r.runs},
          {"policies", policies}};
}

BenchResults bench_results_from_statistics(const nlohmann::json& j, const std::string& what) {
  try {
    BenchResults r;
    r.family = j.at("family").get<std::string>();
    r.images = j.at("images").get<int64_t>();
    r.batch = j.at("batch").get<int64_t>();
    r.rounds = j.at("rounds").get<int64_t>();
    r.steps = j.at("steps").get<int64_t>();
    r.text = j.at("text").get<bool>();
    r.measures_flops = j.at("measures_flops").get<bool>();
    r.model = j.at("model").get<std::string>();
    r.device = j.at("device").get<std::string>();
    r.dtype = j.at("dtype").get<std::string>();
    r.cuda_graphs = j.value("cuda_graphs", std::string());  // absent in files written before it was recorded
    r.grid_height = j.at("grid").at(0).get<int64_t>();
    r.grid_width = j.at("grid").at(1).get<int64_t>();
    r.judged = j.at("judged").get<bool>();
    r.reference = feature_sums_from_json(j.at("reference"), what);
    r.runs = j.at("runs").get<std::set<int64_t>>();
    for (const auto& p : j.at("policies")) {
      BenchPolicyResults pr;
      pr.policy = p.at("policy").get<std::string>();
      pr.params = p.at("params").get<std::map<std::string, std::string>>();
      pr.features = feature_sums_from_json(p.at("features"), what);
      pr.process_peak_bytes = p.at("process_peak_bytes").get<int64_t>();
      pr.process_peak_is_own = p.at("process_peak_is_own").get<bool>();
      pr.process_rss_delta_bytes = p.at("process_rss_delta_bytes").get<int64_t>();
      r.policies.push_back(std::move(pr));
    }
    if (r.batch < 1 || r.images < 1 || r.policies.empty()) throw FormatError(what + ": no bench settings in it");
    return r;
  } catch (const nlohmann::json::exception& e) {
    throw FormatError(what + ": malformed statistics (" + e.what() + ")");
  }
}

}  // namespace kvs
