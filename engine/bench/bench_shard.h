#pragma once
// A bench's runs made by one process: all of them (run_policy_bench, which sums
// them up at once) or one shard's share, added to results that are kept on disk
// as they grow (bench --out DIR [--shard I/N], bench_output_dir.h). Torch-free
// header.
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "engine/bench/bench_results.h"
#include "engine/bench/policy_bench.h"
#include "engine/session/generation_request.h"
#include "engine/session/generation_result.h"

namespace kvs {

// What one finished run made, for whoever keeps it (its images' results are in
// the BenchResults handed over with it).
struct BenchRunOutput {
  struct Made {
    const GenerationRequest* request = nullptr;
    const GenerationResult* result = nullptr;  // first round: the images and tokens
  };
  int64_t run = 0;
  std::vector<Made> policies;            // as BenchResults::policies (full first)
  std::vector<std::string> class_names;  // the model's (for PNG metadata); may be empty
};
// Called after each run with that run and the results it was added to.
using BenchRunFn = std::function<void(const BenchRunOutput&, const BenchResults&)>;

// Makes the runs of shard options.shard_index of options.shard_count (run r
// belongs to shard r mod shard_count) that `results` does not hold yet and
// `skip` does not name, adding each to `results` and then calling `on_run`.
// `results` may be empty (its settings are filled in) or the shard's earlier
// results (a resumed shard). Nothing is loaded or written when there is nothing
// to make. Throws InvalidArgumentError for --max-memory (its search is one
// process's) and what run_policy_bench throws.
void run_bench_shard(const BenchOptions& options, BenchResults& results, const std::set<int64_t>& skip,
                     const BenchRunFn& on_run, const BenchProgressFn& progress = {},
                     const std::function<bool()>& cancelled = {});

}  // namespace kvs
