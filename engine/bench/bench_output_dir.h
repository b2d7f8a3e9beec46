#pragma once
// `bench --out DIR`: a bench's results kept on disk as they are made, so that a
// stopped bench resumes where it stopped and the shards of a bench made on
// several machines merge into the table one process would have printed
// (`kvstudio-cli bench merge DIR...`). Torch-free header.
//
// DIR holds
//   settings.json          what decides the bench's images and numbers
//                          (bench_settings); every later bench into DIR must
//                          have the same, and merged folders too
//   shard-I-of-N.jsonl     one JSON line per image of every policy
//                          (bench_results.h, to_json(BenchImageResult)), then
//                          {"run_done": r} after each run's lines
//   shard-I-of-N.json      the shard's statistics: the runs it has done, per
//                          policy the summed classifier features and the
//                          process memory, the held-out reference
//   images/NNNNNN-POLICY.png   with --save-images: every image with the usual
//                          PNG metadata (the request that makes it again)
//
// Choices:
// - A run is done when the statistics file names it. The statistics are
//   rewritten (a temporary file renamed over the old one) after the run's PNGs
//   and lines, so a shard stopped at any moment resumes after its last finished
//   run; lines of a run it had not finished are dropped when it resumes.
// - A bench into DIR skips the runs that any shard file in DIR has done, so
//   that a rerun with another shard count does not repeat them; several shards
//   may write into one folder at once (on a shared file system), each its own
//   files.
// - The shard count is not a setting: the runs are the same whatever the split.
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/bench/bench_results.h"
#include "engine/bench/bench_shard.h"

namespace kvs {

// The settings that decide a bench's images and numbers: the model (folder or
// random architecture), the policies (canonical, full first), batch, images,
// seed, classes, prompts, sampling, device, threads, dtype, steps, rounds,
// whether images are saved, and the program's version.
nlohmann::json bench_settings(const BenchOptions& options, const std::string& version);

// The first setting in which `a` and `b` differ, as "batch is 2 in A and 4 in
// B" with the two places named; empty when they are the same.
std::string settings_difference(const nlohmann::json& a, const std::string& a_name, const nlohmann::json& b,
                                const std::string& b_name);

class BenchOutputDir {
 public:
  // Creates DIR and its settings file, or checks the file (InvalidArgumentError
  // naming the first setting that differs), then reads this shard's files.
  BenchOutputDir(const std::string& dir, const nlohmann::json& settings, int64_t shard_index, int64_t shard_count,
                 std::string version);

  BenchResults& results() { return results_; }
  // The runs that other shard files in DIR have done (this shard skips them).
  std::set<int64_t> done_elsewhere() const;
  // After a run: its PNGs (when its lines name them), its lines, the statistics.
  void record_run(const BenchRunOutput& run, const BenchResults& results);
  // The statistics alone (a shard with nothing to make still leaves its file).
  void write_statistics(const BenchResults& results) const;
  const std::string& dir() const { return dir_; }
  std::string shard_name() const;  // "shard-I-of-N"

 private:
  std::string dir_;
  int64_t shard_index_, shard_count_;
  std::string version_;
  BenchResults results_;
};

// Every shard in the folders (`bench merge`), merged. Throws FileError for a
// folder without a bench, InvalidArgumentError when the folders' settings
// differ (naming the setting and the folders) or a run is in two shard files
// (naming both). `settings` receives the common settings.
BenchResults read_bench_folders(const std::vector<std::string>& dirs, nlohmann::json* settings = nullptr);

}  // namespace kvs
