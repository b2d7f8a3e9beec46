// The largest-batch search of bench --max-memory on its own: doubling then
// bisection finds the exact threshold of a monotone "fits", asking each batch
// at most once and about 2 log2(limit) times in all.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "engine/bench/policy_bench.h"
#include "engine/core/errors.h"

namespace kvs {
namespace {

TEST(MaxBatchSearch, FindsTheExactThresholdForEveryLimit) {
  for (int64_t limit : {1, 2, 3, 7, 8, 64, 100, 256}) {
    for (int64_t threshold = 0; threshold <= limit + 3; ++threshold) {
      std::map<int64_t, int> asked;
      const int64_t found = largest_fitting_batch(limit, [&](int64_t batch) {
        EXPECT_GE(batch, 1);
        EXPECT_LE(batch, limit);
        ++asked[batch];
        return batch <= threshold;
      });
      EXPECT_EQ(found, std::min(threshold, limit)) << "limit " << limit << " threshold " << threshold;
      for (const auto& [batch, times] : asked) EXPECT_EQ(times, 1) << "batch " << batch << " asked twice";
      EXPECT_LE(static_cast<double>(asked.size()), 2 * std::ceil(std::log2(static_cast<double>(limit))) + 2)
          << "limit " << limit << " threshold " << threshold;
    }
  }
}

TEST(MaxBatchSearch, DoublesThenBisects) {
  std::vector<int64_t> order;
  const int64_t found = largest_fitting_batch(256, [&](int64_t batch) {
    order.push_back(batch);
    return batch <= 37;
  });
  EXPECT_EQ(found, 37);
  EXPECT_EQ(order, (std::vector<int64_t>{1, 2, 4, 8, 16, 32, 64, 48, 40, 36, 38, 37}));
}

TEST(MaxBatchSearch, NothingFitsAndBadLimits) {
  int calls = 0;
  EXPECT_EQ(largest_fitting_batch(64, [&](int64_t) { return ++calls, false; }), 0);
  EXPECT_EQ(calls, 1);  // batch 1 only
  EXPECT_THROW(largest_fitting_batch(0, [](int64_t) { return true; }), InvalidArgumentError);
}

}  // namespace
}  // namespace kvs
