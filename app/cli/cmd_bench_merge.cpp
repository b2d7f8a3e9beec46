// kvstudio-cli bench merge DIR...: the shards of a bench (bench --out DIR --shard I/N)
// summed up into the table and JSON of the unsharded bench.
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>

#include "app/cli/arg_parser.h"
#include "app/cli/bench_table.h"
#include "app/cli/commands.h"
#include "engine/bench/bench_output_dir.h"
#include "engine/bench/bench_results.h"
#include "engine/bench/bench_sweep.h"
#include "engine/core/errors.h"

namespace kvs::cli {

int cmd_bench_merge(const std::vector<std::string>& args) {
  ArgParser p(args, {"--json", "--chart", "--grid"}, {"--help"}, 1000);
  if (p.flag("--help") || p.positional().empty()) {
    std::fputs(
        "usage: kvstudio-cli bench merge DIR... [--json FILE] [--chart FILE.png] [--grid FILE.png]\n"
        "(see kvstudio-cli bench --help)\n",
        p.flag("--help") ? stdout : stderr);
    return p.flag("--help") ? 0 : 2;
  }
  const std::vector<std::string>& dirs = p.positional();
  const std::string json_path = p.get("--json", (std::filesystem::path(dirs.front()) / "bench.json").string());
  const std::string chart_path = p.get("--chart", "");
  check_bench_output("--json", json_path, "");
  if (!chart_path.empty()) check_bench_output("--chart", chart_path, ".png");
  const std::string grid_path = p.get("--grid", "");
  if (!grid_path.empty()) check_bench_output("--grid", grid_path, ".png");

  nlohmann::json settings;
  const BenchResults merged = read_bench_folders(dirs, &settings);
  std::optional<BenchSweep> sweep;
  if (settings.contains("sweep")) sweep = bench_sweep_from_json(settings.at("sweep"), dirs.front() + "/settings.json");
  if (!grid_path.empty() && !sweep) throw InvalidArgumentError("option --grid applies to a sweep (bench --sweep)");
  const std::vector<int64_t> missing = missing_runs(merged);
  if (!missing.empty()) {
    std::string list;
    for (size_t i = 0; i < missing.size() && i < 10; ++i) list += (i ? ", " : "") + std::to_string(missing[i]);
    if (missing.size() > 10) list += ", ...";
    throw InvalidArgumentError("bench merge: " + std::to_string(missing.size()) + " of " +
                               std::to_string(bench_run_count(merged.images, merged.batch)) +
                               " runs are not done yet (" + list +
                               "): run the shards that own them (run r belongs to shard r mod N) and merge again");
  }
  const std::vector<BenchRecord> records = summarize_bench(merged);
  print_bench_table(records);
  write_bench_files(records, json_path, chart_path, sweep ? &*sweep : nullptr);
  if (!grid_path.empty()) write_sweep_grid_from_folders(*sweep, dirs, grid_path);
  return 0;
}

}  // namespace kvs::cli
