#include "app/cli/bench_table.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "engine/bench/bench_chart.h"
#include "engine/bench/bench_results.h"
#include "engine/bench/sweep_chart.h"
#include "engine/core/cuda_graphs.h"
#include "engine/core/errors.h"
#include "engine/image/png_file.h"
#include "engine/models/family_registry.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/linear.h"

namespace kvs::cli {
namespace {
namespace fs = std::filesystem;

std::string fixed(double v, int digits) {
  if (std::isnan(v)) return "-";
  if (std::isinf(v)) return "inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// The prompted attributes a text-family bench judged: column name, accuracy, cases.
struct AttributeColumn {
  const char* header;
  double BenchRecord::*accuracy;
  int64_t BenchRecord::*judged;
};
constexpr AttributeColumn kAttributeColumns[] = {
    {"time %", &BenchRecord::time_accuracy, &BenchRecord::time_judged},
    {"sun side %", &BenchRecord::light_side_accuracy, &BenchRecord::light_side_judged},
    {"sun height %", &BenchRecord::light_height_accuracy, &BenchRecord::light_height_judged},
    {"colour %", &BenchRecord::colour_accuracy, &BenchRecord::colour_judged},
    {"clouds %", &BenchRecord::clouds_accuracy, &BenchRecord::clouds_judged},
    {"attr %", &BenchRecord::attribute_accuracy, &BenchRecord::attribute_judged},
};

// Rows of cells as aligned columns: the first (the policy) left-aligned, the
// numbers right-aligned.
void print_columns(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    width.resize(std::max(width.size(), row.size()), 0);
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      const std::string pad(width[c] - row[c].size(), ' ');
      line += c == 0 ? row[c] + pad : "  " + pad + row[c];
    }
    std::printf("%s\n", line.c_str());
  }
}

}  // namespace

void check_bench_output(const std::string& option, const std::string& path, const std::string& extension) {
  if (!extension.empty() && fs::path(path).extension() != extension)
    throw InvalidArgumentError(option + " must name a " + extension + " file, got '" + path + "'");
  const fs::path dir = fs::path(path).parent_path();
  std::error_code ec;
  if (!dir.empty() && !fs::is_directory(dir, ec)) throw FileError("output folder " + dir.string() + " does not exist");
}

void print_bench_table(const std::vector<BenchRecord>& records) {
  // Demo bundles (with an evaluation classifier) add class accuracy and demo-FID;
  // text models, the attributes their prompts asked for (every policy ran the
  // same prompts, so the first record's counts stand for all).
  const bool judged = !records.empty() && !std::isnan(records[0].class_accuracy);
  std::vector<const AttributeColumn*> attributes;
  for (const AttributeColumn& a : kAttributeColumns)
    if (!records.empty() && records[0].*a.judged > 0) attributes.push_back(&a);
  const FamilyDescription* family = records.empty() ? nullptr : find_family_description(records[0].family);
  // Families without a KV cache (MAR): FLOPs and time instead.
  const bool masked = family && family->measures_flops && !family->measures_kv_bytes;
  // Scale units (VAR): a whole scale passes through every layer's cache, so the
  // peak within a unit matters as much as what is kept at the end.
  const bool scales = family && family->unit == GenerationUnit::Scale;
  std::vector<std::string> header{"policy", "KV MiB",  "% full",  "alloc MiB", "alloc/log",
                                  "tok/s",  "speedup", "agree %", "PSNR dB",   "SSIM"};
  if (scales) header.insert(header.begin() + 3, {"peak MiB", "peak % full"});
  if (masked) header = {"policy", "GFLOPs/img", "% full FLOPs", "s/img", "speedup", "PSNR dB", "SSIM"};
  if (judged) header.insert(header.end(), {"class acc %", "demo-FID"});
  for (const AttributeColumn* a : attributes) header.push_back(a->header);
  std::vector<std::vector<std::string>> rows{header};
  for (const auto& r : records) {
    const double mib = 1048576.0;
    if (masked) {
      rows.push_back({r.policy, fixed(r.flops / 1e9, 2), fixed(100.0 * r.flops_vs_full, 1),
                      fixed(r.images > 0 ? r.generation_ms / 1000.0 / r.images : NAN, 2), fixed(r.speedup_vs_full, 2),
                      r.identical_images == r.images ? "inf" : fixed(r.psnr, 2), fixed(r.ssim, 4)});
      if (judged) rows.back().insert(rows.back().end(), {fixed(100.0 * r.class_accuracy, 1), fixed(r.demo_fid, 2)});
      continue;
    }
    rows.push_back(
        {r.policy, fixed(r.kv_bytes_logical / mib, 2),
         fixed(r.kv_bytes_full > 0 ? 100.0 * r.kv_bytes_logical / r.kv_bytes_full : NAN, 1),
         fixed(r.kv_bytes_allocated / mib, 2),
         fixed(r.kv_bytes_logical > 0 ? static_cast<double>(r.kv_bytes_allocated) / r.kv_bytes_logical : NAN, 2),
         fixed(r.tokens_per_s, 1), fixed(r.speedup_vs_full, 2), fixed(100.0 * r.token_agreement, 1),
         // every image equal to the reference: PSNR is infinite
         r.identical_images == r.images ? "inf" : fixed(r.psnr, 2), fixed(r.ssim, 4)});
    if (scales)
      rows.back().insert(rows.back().begin() + 3,
                         {fixed(r.kv_bytes_peak / mib, 2),
                          fixed(r.kv_bytes_full > 0 ? 100.0 * r.kv_bytes_peak / r.kv_bytes_full : NAN, 1)});
    if (judged) rows.back().insert(rows.back().end(), {fixed(100.0 * r.class_accuracy, 1), fixed(r.demo_fid, 2)});
    for (const AttributeColumn* a : attributes) rows.back().push_back(fixed(100.0 * (r.*a->accuracy), 1));
  }
  print_columns(rows);
  if (records.empty()) return;
  // The device description names a dtype other than f32; the line always names it.
  std::string where = records[0].device;
  if (where.find(records[0].dtype) == std::string::npos) where += ", " + records[0].dtype;
  // Which decode path was timed, wherever there is a choice (a GPU run of a family with graphs).
  if (!records[0].cuda_graphs.empty() && records[0].cuda_graphs != cuda_graphs_report::kNone)
    where += ", CUDA graphs " + records[0].cuda_graphs;
  std::printf("model %s on %s, %dx%d tokens%s, %lld images per policy in runs of %lld%s\n", records[0].model.c_str(),
              where.c_str(), static_cast<int>(records[0].grid_height), static_cast<int>(records[0].grid_width),
              records[0].steps > 0 ? (", " + std::to_string(records[0].steps) + " decoding steps").c_str() : "",
              static_cast<long long>(records[0].images), static_cast<long long>(records[0].batch),
              records[0].rounds > 1
                  ? (", speed: fastest of " + std::to_string(records[0].rounds) + " interleaved rounds").c_str()
                  : "");
  // Speed depends on the CPU's instruction sets (the decode kernel's path), so
  // every table names them.
  const bool on_cpu = records[0].device.rfind("cpu", 0) == 0;
  std::printf("CPU: %s%s\n", kvs::kernels::cpu_summary().c_str(),
              on_cpu ? ("; decode kernel: " +
                        std::string(kvs::kernels::decode_kernel_description(records[0].dtype == "bf16")))
                           .c_str()
                     : "");
  const BenchRecord& r = records[0];
  if (judged && r.class_judged != r.images)  // prompts of which only some name a class
    std::printf("class accuracy and demo-FID on %lld images (demo-FID against %lld held-out images)\n",
                static_cast<long long>(r.class_judged), static_cast<long long>(r.quality_reference_images));
  if (!attributes.empty())
    std::printf(
        "prompted attributes judged: time %lld, sun side %lld, sun height %lld, colour %lld, clouds %lld cases\n",
        static_cast<long long>(r.time_judged), static_cast<long long>(r.light_side_judged),
        static_cast<long long>(r.light_height_judged), static_cast<long long>(r.colour_judged),
        static_cast<long long>(r.clouds_judged));
}

// The largest batch under --max-memory, per policy.
void print_max_batch_table(const std::vector<BenchRecord>& records) {
  if (records.empty() || !records[0].max_memory) return;
  const MaxBatchResult& first = *records[0].max_memory;
  const double mib = 1048576.0;
  const double cap = static_cast<double>(first.cap_bytes);
  const std::string cap_text = cap >= mib * 1024.0 ? fixed(cap / (mib * 1024.0), 2) + " GiB"
                                                   : fixed(cap / mib, 1) + " MiB";
  std::printf("\nlargest batch under %s (%s; search up to batch %lld)\n", cap_text.c_str(), first.measure.c_str(),
              static_cast<long long>(first.batch_limit));
  std::vector<std::vector<std::string>> rows{
      {"policy", "max batch", "tok/s", "peak MiB", "vs full", "process peak MiB", "probes"}};
  for (const auto& r : records) {
    if (!r.max_memory) continue;
    const MaxBatchResult& m = *r.max_memory;
    const bool fits = m.max_batch > 0;
    rows.push_back({r.policy, fits ? std::to_string(m.max_batch) + (m.at_limit ? "+" : "") : "none",
                    fits ? fixed(m.tokens_per_s, 1) : "-", fits ? fixed(m.peak_bytes / mib, 1) : "-",
                    fixed(m.ratio_vs_full, 2), fits ? fixed(m.process_peak_bytes / mib, 1) : "-",
                    std::to_string(m.probes.size())});
  }
  print_columns(rows);
  if (std::any_of(records.begin(), records.end(),
                  [](const BenchRecord& r) { return r.max_memory && r.max_memory->at_limit; }))
    std::printf("+: fits at the largest batch tried (--max-batch); the largest that fits may be larger\n");
  if (first.weights_bytes > 0)
    std::printf("peak = weights %s MiB + the KV cache's peak; vs full: tokens/s over full's at full's largest batch\n",
                fixed(first.weights_bytes / mib, 1).c_str());
  else std::printf("vs full: tokens/s over full's at full's largest batch\n");
}

void write_bench_files(const std::vector<BenchRecord>& records, const std::string& json_path,
                       const std::string& chart_path, const BenchSweep* sweep) {
  if (!json_path.empty()) {
    // Each record names the CPU it ran beside (model, instruction sets, the
    // decode kernel's path), as the table does.
    nlohmann::json j = to_json(records);
    const std::string model = kvs::kernels::cpu_model_name();  // read /proc/cpuinfo once
    const std::vector<std::string> flags = kvs::kernels::cpu_kernel_flags();
    for (nlohmann::json& record : j)
      record["cpu"] = {{"model", model},
                       {"flags", flags},
                       {"decode_kernel", kvs::kernels::decode_kernel_description(record.value("dtype", "") == "bf16")}};
    std::ofstream out(json_path);
    out << j.dump(2) << "\n";
    if (!out) throw FileError("cannot write " + json_path);
  }
  if (!chart_path.empty()) write_png(chart_path, sweep ? draw_sweep_chart(*sweep, records) : draw_bench_chart(records));
}

void write_sweep_grid_from_folders(const BenchSweep& sweep, const std::vector<std::string>& dirs,
                                   const std::string& grid_path) {
  auto image = [&](const std::string& policy) {
    const std::string name = bench_png_name(0, policy);
    for (const std::string& dir : dirs) {
      const fs::path path = fs::path(dir) / name;
      std::error_code ec;
      if (fs::exists(path, ec)) return read_png(path.string()).image;
    }
    throw FileError("--grid: no " + name + " in " + dirs.front() + (dirs.size() > 1 ? " or the other folders" : "") +
                    " (the bench saves its images with --save-images)");
  };
  std::vector<std::vector<RgbImage>> images(sweep.specs.size());
  for (size_t p = 0; p < sweep.specs.size(); ++p)
    for (const std::string& spec : sweep.specs[p]) images[p].push_back(image(spec));
  write_png(grid_path, draw_sweep_grid(sweep, image("full"), images));
}

}  // namespace kvs::cli
