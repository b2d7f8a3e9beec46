#include "engine/models/infinity/scale_schedules.h"

#include <cmath>
#include <map>

#include "engine/core/errors.h"

namespace kvs::infinity {
namespace {

// ratio2hws of dynamic_resolution.py: the eight ratios' 13 grids.
const std::vector<std::pair<double, std::vector<Grid>>>& ratio_grids() {
  static const std::vector<std::pair<double, std::vector<Grid>>> grids = {
      {1.000,
       {{1, 1},
        {2, 2},
        {4, 4},
        {6, 6},
        {8, 8},
        {12, 12},
        {16, 16},
        {20, 20},
        {24, 24},
        {32, 32},
        {40, 40},
        {48, 48},
        {64, 64}}},
      {1.250,
       {{1, 1},
        {2, 2},
        {3, 3},
        {5, 4},
        {10, 8},
        {15, 12},
        {20, 16},
        {25, 20},
        {30, 24},
        {35, 28},
        {45, 36},
        {55, 44},
        {70, 56}}},
      {1.333,
       {{1, 1},
        {2, 2},
        {4, 3},
        {8, 6},
        {12, 9},
        {16, 12},
        {20, 15},
        {24, 18},
        {28, 21},
        {36, 27},
        {48, 36},
        {60, 45},
        {72, 54}}},
      {1.500,
       {{1, 1},
        {2, 2},
        {3, 2},
        {6, 4},
        {9, 6},
        {15, 10},
        {21, 14},
        {27, 18},
        {33, 22},
        {39, 26},
        {48, 32},
        {63, 42},
        {78, 52}}},
      {1.750,
       {{1, 1},
        {2, 2},
        {3, 3},
        {7, 4},
        {11, 6},
        {14, 8},
        {21, 12},
        {28, 16},
        {35, 20},
        {42, 24},
        {56, 32},
        {70, 40},
        {84, 48}}},
      {2.000,
       {{1, 1},
        {2, 2},
        {4, 2},
        {6, 3},
        {10, 5},
        {16, 8},
        {22, 11},
        {30, 15},
        {38, 19},
        {46, 23},
        {60, 30},
        {74, 37},
        {90, 45}}},
      {2.500,
       {{1, 1},
        {2, 2},
        {5, 2},
        {10, 4},
        {15, 6},
        {20, 8},
        {25, 10},
        {30, 12},
        {40, 16},
        {50, 20},
        {65, 26},
        {80, 32},
        {100, 40}}},
      {3.000,
       {{1, 1},
        {2, 2},
        {6, 2},
        {9, 3},
        {15, 5},
        {21, 7},
        {27, 9},
        {36, 12},
        {45, 15},
        {54, 18},
        {72, 24},
        {90, 30},
        {111, 37}}},
  };
  return grids;
}

}  // namespace

const std::vector<ScaleTemplate>& scale_templates() {
  // full_ratio2hws: the dict is filled ratio by ratio, each ratio != 1 followed
  // by its transpose under int(1/ratio * 1000) / 1000.
  static const std::vector<ScaleTemplate> templates = [] {
    std::vector<ScaleTemplate> out;
    for (const auto& [ratio, grids] : ratio_grids()) {
      out.push_back({ratio, grids});
      if (ratio != 1.0) {
        std::vector<Grid> transposed;
        for (const Grid& g : grids) transposed.push_back({g[1], g[0]});
        out.push_back({std::floor(1.0 / ratio * 1000.0) / 1000.0, transposed});
      }
    }
    return out;
  }();
  return templates;
}

const std::vector<std::pair<std::string, int64_t>>& pixel_budgets() {
  static const std::vector<std::pair<std::string, int64_t>> budgets = {{"0.06M", 7},
                                                                       {"0.25M", 10},
                                                                       {"0.60M", 12},
                                                                       {"1M", 13}};
  return budgets;
}

const ScaleTemplate& nearest_template(double h_div_w) {
  if (!(h_div_w > 0.0) || !std::isfinite(h_div_w))
    throw InvalidArgumentError("an image's height / width must be a positive number, got " + std::to_string(h_div_w));
  const auto& templates = scale_templates();
  size_t best = 0;
  for (size_t i = 1; i < templates.size(); ++i)
    if (std::abs(templates[i].h_div_w - h_div_w) < std::abs(templates[best].h_div_w - h_div_w)) best = i;
  return templates[best];
}

std::vector<Grid> scale_schedule(const ScaleTemplate& scale_template, const std::string& pixel_budget) {
  std::string known;
  for (const auto& [name, scales] : pixel_budgets()) {
    if (name == pixel_budget)
      return std::vector<Grid>(scale_template.grids.begin(), scale_template.grids.begin() + scales);
    known += (known.empty() ? "" : ", ") + name;
  }
  throw InvalidArgumentError("unknown pixel budget '" + pixel_budget + "' (Infinity's are " + known + ")");
}

void rope_grid_positions(const ScaleTemplate& scale_template, const std::vector<Grid>& schedule,
                         std::vector<int64_t>& rows, std::vector<int64_t>& cols) {
  const Grid last = scale_template.grids.back();  // the 1M schedule's last scale
  rows.clear();
  cols.clear();
  for (const Grid& g : schedule) {
    // torch.arange(ph) * (uph / ph): the Python float quotient meets an int64
    // tensor, so the product is taken in float32 with the quotient rounded to
    // float32; .round() is half to even.
    const float row_step = static_cast<float>(static_cast<double>(last[0]) / static_cast<double>(g[0]));
    const float col_step = static_cast<float>(static_cast<double>(last[1]) / static_cast<double>(g[1]));
    for (int64_t i = 0; i < g[0]; ++i) {
      for (int64_t j = 0; j < g[1]; ++j) {
        rows.push_back(static_cast<int64_t>(std::nearbyint(static_cast<float>(i) * row_step)));
        cols.push_back(static_cast<int64_t>(std::nearbyint(static_cast<float>(j) * col_step)));
      }
    }
  }
}

int64_t schedule_tokens(const std::vector<Grid>& schedule) {
  int64_t total = 0;
  for (const Grid& g : schedule) total += g[0] * g[1];
  return total;
}

std::vector<int64_t> scale_offsets(const std::vector<Grid>& schedule) {
  std::vector<int64_t> offsets{0};
  for (const Grid& g : schedule) offsets.push_back(offsets.back() + g[0] * g[1]);
  return offsets;
}

}  // namespace kvs::infinity
