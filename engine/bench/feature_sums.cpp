#include "engine/bench/feature_sums.h"

#include <nlohmann/json.hpp>

#include <string>

#include "engine/core/errors.h"

namespace kvs {

namespace {

// hi + lo += x, with the rounding error of hi + x kept in lo (Knuth's TwoSum).
inline void add_two_sum(double& hi, double& lo, double x) {
  const double s = hi + x;
  const double b = s - hi;
  lo += (hi - (s - b)) + (x - b);
  hi = s;
}

void check_dim(FeatureSums& sums, int64_t dim) {
  if (dim < 1) throw InvalidArgumentError("feature sums: the feature size must be at least 1");
  if (sums.dim == 0) {
    sums.dim = dim;
    sums.sum.assign(static_cast<size_t>(dim), 0.0);
    sums.sum_error.assign(static_cast<size_t>(dim), 0.0);
    sums.outer.assign(static_cast<size_t>(dim * dim), 0.0);
    sums.outer_error.assign(static_cast<size_t>(dim * dim), 0.0);
  } else if (sums.dim != dim) {
    throw InvalidArgumentError("feature sums: features of size " + std::to_string(dim) + " added to sums of size " +
                               std::to_string(sums.dim));
  }
}

std::vector<double> rounded(const std::vector<double>& hi, const std::vector<double>& lo) {
  std::vector<double> v(hi.size());
  for (size_t i = 0; i < hi.size(); ++i) v[i] = hi[i] + lo[i];
  return v;
}

}  // namespace

void FeatureSums::add_rows(const float* data, int64_t rows, int64_t features) {
  if (rows == 0) return;
  check_dim(*this, features);
  const size_t f = static_cast<size_t>(features);
  std::vector<double> x(f);
  for (int64_t r = 0; r < rows; ++r) {
    for (size_t i = 0; i < f; ++i) x[i] = data[static_cast<size_t>(r) * f + i];
    for (size_t i = 0; i < f; ++i) {
      add_two_sum(sum[i], sum_error[i], x[i]);
      for (size_t j = 0; j < f; ++j) add_two_sum(outer[i * f + j], outer_error[i * f + j], x[i] * x[j]);
    }
    ++count;
  }
}

void FeatureSums::add(const FeatureSums& other) {
  if (other.count == 0) return;
  check_dim(*this, other.dim);
  for (size_t i = 0; i < sum.size(); ++i) {
    add_two_sum(sum[i], sum_error[i], other.sum[i]);
    sum_error[i] += other.sum_error[i];
  }
  for (size_t i = 0; i < outer.size(); ++i) {
    add_two_sum(outer[i], outer_error[i], other.outer[i]);
    outer_error[i] += other.outer_error[i];
  }
  count += other.count;
}

std::vector<double> FeatureSums::sum_values() const { return rounded(sum, sum_error); }
std::vector<double> FeatureSums::outer_values() const { return rounded(outer, outer_error); }

nlohmann::json to_json(const FeatureSums& s) {
  return {{"count", s.count},         {"dim", s.dim},     {"sum", s.sum},
          {"sum_error", s.sum_error}, {"outer", s.outer}, {"outer_error", s.outer_error}};
}

FeatureSums feature_sums_from_json(const nlohmann::json& j, const std::string& what) {
  try {
    FeatureSums s;
    s.count = j.at("count").get<int64_t>();
    s.dim = j.at("dim").get<int64_t>();
    s.sum = j.at("sum").get<std::vector<double>>();
    s.sum_error = j.at("sum_error").get<std::vector<double>>();
    s.outer = j.at("outer").get<std::vector<double>>();
    s.outer_error = j.at("outer_error").get<std::vector<double>>();
    const size_t d = static_cast<size_t>(s.dim);
    if (s.count < 0 || s.dim < 0 || s.sum.size() != d || s.sum_error.size() != d || s.outer.size() != d * d ||
        s.outer_error.size() != d * d || (s.count > 0 && s.dim == 0))
      throw FormatError(what + ": feature sums of inconsistent sizes");
    return s;
  } catch (const nlohmann::json::exception& e) {
    throw FormatError(what + ": malformed feature sums (" + e.what() + ")");
  }
}

}  // namespace kvs
