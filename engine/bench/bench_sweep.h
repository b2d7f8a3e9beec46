#pragma once
// `bench --sweep KEY=V1,V2,...`: every policy of --policies (but full, the
// reference) at every value of one of its parameters (a budget such as rho, or
// any other), as one bench: the specs are the policies x the values, so a sweep
// shards, resumes and merges like any bench. Its pictures (sweep_chart.h) are a
// grid of the first image of every spec and a chart of quality and memory
// against the value. Torch-free.
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "engine/bench/policy_bench.h"

namespace kvs {

struct BenchSweep {
  std::string key;                              // the parameter swept, e.g. "rho"
  std::vector<std::string> values;              // as given, e.g. "1/2", "1/4"
  std::vector<std::string> policies;            // the policies swept (canonical, without the key)
  std::vector<std::vector<std::string>> specs;  // specs[p][v]: policy p at value v (canonical)

  // "full", then the specs policy by policy: BenchOptions::policies.
  std::vector<std::string> bench_policies() const;
  // The record of policies[p] at values[v] (null when it is not among `records`).
  const BenchRecord* find(const std::vector<BenchRecord>& records, size_t p, size_t v) const;
};

// `policies`: the --policies specs ("full" is dropped; it is the reference);
// `sweep`: "KEY=V1,V2,...". Throws InvalidArgumentError for a malformed sweep, a
// policy that sets KEY already, or a value the policy refuses (the registry's
// message).
BenchSweep make_bench_sweep(const std::vector<std::string>& policies, const std::string& sweep);

nlohmann::json to_json(const BenchSweep& sweep);
// Throws FormatError naming `what`.
BenchSweep bench_sweep_from_json(const nlohmann::json& j, const std::string& what);

}  // namespace kvs
