#pragma once
// The statistics of a set of classifier features that add up across the shards
// of a bench: the count, the sum of the feature vectors and the sum of their
// outer products. demo-FID's mean and covariance come from these alone
// (demo_quality_judge.h, demo_fid_from_sums). Torch-free.
//
// The sums are kept as double-double numbers (a double and the rounding error
// of every addition, Knuth's TwoSum; the products of two float features are
// exact in double), so they are accurate to about 1e-30 relative whatever the
// order of the additions, and value() rounds them to the same double whether
// one process added every image or shards added theirs and were merged. That
// matters more than it seems: with fewer images than features the covariance
// is singular, and the square-root term of the Fréchet distance turns a
// rounding difference of 1e-16 in a zero eigenvalue into 1e-8 in the distance.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace kvs {

struct FeatureSums {
  int64_t count = 0;
  int64_t dim = 0;                         // 0 until the first vector is added
  std::vector<double> sum, sum_error;      // [dim]: sum of x, as high part + error
  std::vector<double> outer, outer_error;  // [dim * dim], row-major: sum of x x^T

  // Adds `rows` feature vectors of `dim` floats each, row after row. Throws
  // InvalidArgumentError when dim differs from the vectors already added.
  void add_rows(const float* data, int64_t rows, int64_t dim);
  // Adds another set's statistics (the union of the two sets).
  void add(const FeatureSums& other);
  // The sums rounded to double.
  std::vector<double> sum_values() const;
  std::vector<double> outer_values() const;
};

// JSON: {"count", "dim", "sum", "sum_error", "outer", "outer_error"}; doubles
// are written with enough digits to read back the same bits.
nlohmann::json to_json(const FeatureSums& sums);
// Throws FormatError naming `what` for missing fields or sizes that do not fit.
FeatureSums feature_sums_from_json(const nlohmann::json& j, const std::string& what);

}  // namespace kvs
