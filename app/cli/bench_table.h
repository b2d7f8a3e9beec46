#pragma once
// bench's table (the same for one process, a shard folder and merged shards),
// its largest-batch table, and the JSON and chart files.
#include <string>
#include <vector>

#include "engine/bench/bench_sweep.h"
#include "engine/bench/policy_bench.h"

namespace kvs::cli {

// Refuses an output file whose folder does not exist, or (with `extension`) whose
// name does not end with it, before any work.
void check_bench_output(const std::string& option, const std::string& path, const std::string& extension);
void print_bench_table(const std::vector<BenchRecord>& records);
void print_max_batch_table(const std::vector<BenchRecord>& records);
// --json FILE and --chart FILE.png (either may be empty: not written); with a
// sweep the chart is the sweep's (quality and memory against the value).
void write_bench_files(const std::vector<BenchRecord>& records, const std::string& json_path,
                       const std::string& chart_path, const BenchSweep* sweep = nullptr);
// --grid FILE.png from the images a bench saved (--save-images) in its folders:
// the first image of every spec of the sweep. Throws FileError naming a missing image.
void write_sweep_grid_from_folders(const BenchSweep& sweep, const std::vector<std::string>& dirs,
                                   const std::string& grid_path);

}  // namespace kvs::cli
