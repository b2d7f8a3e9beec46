#include "engine/bench/bench_sweep.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <sstream>

#include "engine/cache/policies/policy_catalog.h"
#include "engine/cache/policies/policy_registry.h"
#include "engine/core/errors.h"

namespace kvs {

std::vector<std::string> BenchSweep::bench_policies() const {
  std::vector<std::string> out{"full"};
  for (const auto& row : specs) out.insert(out.end(), row.begin(), row.end());
  return out;
}

const BenchRecord* BenchSweep::find(const std::vector<BenchRecord>& records, size_t p, size_t v) const {
  if (p >= specs.size() || v >= specs[p].size()) return nullptr;
  for (const BenchRecord& r : records)
    if (r.policy == specs[p][v]) return &r;
  return nullptr;
}

BenchSweep make_bench_sweep(const std::vector<std::string>& policies, const std::string& text) {
  BenchSweep sweep;
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw InvalidArgumentError("option --sweep expects KEY=V1,V2,... (e.g. rho=1/2,1/4,1/8), got '" + text + "'");
  sweep.key = text.substr(0, eq);
  std::stringstream values(text.substr(eq + 1));
  std::string value;
  while (std::getline(values, value, ',')) {
    if (value.empty()) continue;
    if (std::find(sweep.values.begin(), sweep.values.end(), value) != sweep.values.end())
      throw InvalidArgumentError("option --sweep: value " + value + " given twice");
    sweep.values.push_back(value);
  }
  if (sweep.values.empty()) throw InvalidArgumentError("option --sweep: no value for " + sweep.key);
  for (const std::string& policy : policies) {
    PolicySpec spec = parse_policy_spec(policy);
    if (spec.name == "full") continue;
    if (spec.params.count(sweep.key))
      throw InvalidArgumentError("option --sweep: policy " + policy + " sets " + sweep.key +
                                 " already; give it without " + sweep.key);
    const std::string base = spec.text();
    if (std::find(sweep.policies.begin(), sweep.policies.end(), base) != sweep.policies.end()) continue;
    std::vector<std::string> row;
    for (const std::string& v : sweep.values) {
      PolicySpec at = spec;
      at.params[sweep.key] = v;
      const std::string problem = policy_spec_problem(at.text());
      if (!problem.empty()) throw InvalidArgumentError("option --sweep: " + at.text() + ": " + problem);
      row.push_back(at.text());
    }
    sweep.policies.push_back(base);
    sweep.specs.push_back(std::move(row));
  }
  if (sweep.policies.empty())
    throw InvalidArgumentError("option --sweep: --policies names no policy but full to sweep");
  return sweep;
}

nlohmann::json to_json(const BenchSweep& s) {
  return {{"key", s.key}, {"values", s.values}, {"policies", s.policies}, {"specs", s.specs}};
}

BenchSweep bench_sweep_from_json(const nlohmann::json& j, const std::string& what) {
  try {
    BenchSweep s;
    s.key = j.at("key").get<std::string>();
    s.values = j.at("values").get<std::vector<std::string>>();
    s.policies = j.at("policies").get<std::vector<std::string>>();
    s.specs = j.at("specs").get<std::vector<std::vector<std::string>>>();
    if (s.specs.size() != s.policies.size()) throw FormatError(what + ": a sweep whose specs do not fit its policies");
    for (const auto& row : s.specs)
      if (row.size() != s.values.size()) throw FormatError(what + ": a sweep whose specs do not fit its values");
    return s;
  } catch (const nlohmann::json::exception& e) {
    throw FormatError(what + ": malformed sweep (" + e.what() + ")");
  }
}

}  // namespace kvs
