#pragma once
// Infinity's scale schedules and 2-D RoPE positions (infinity/utils/
// dynamic_resolution.py and basic.py precompute_rope2d_freqs_grid with
// rope2d_normalized_by_hw=2). The official code knows 15 aspect templates (8
// ratios and their transposes), each with 13 (h, w) token grids; a pixel budget
// ('0.06M', '0.25M', '0.60M', '1M') takes the first 7, 10, 12 or 13 of them. A
// token's RoPE position is its grid point scaled to the template's 1M last scale
// (64 x 64 for 1:1) and rounded half to even, whatever budget is in use, so the
// smaller schedules are prefixes of the 1M one. Only these schedules exist: the
// official table is keyed by the schedule, and a run picks the template nearest
// to its height / width ratio, as run_infinity does.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace kvs::infinity {

using Grid = std::array<int64_t, 2>;  // (h, w) in tokens

struct ScaleTemplate {
  double h_div_w = 1.0;     // the template's key: 1.0, 1.25, ..., and int(1/r * 1000) / 1000 for the transposes
  std::vector<Grid> grids;  // 13 grids, coarse to fine
};

// The 15 templates in the official order (ratios ascending as written, each
// ratio != 1 followed later by its transpose).
const std::vector<ScaleTemplate>& scale_templates();

// The pixel budgets and how many scales each takes: {"0.06M", 7}, {"0.25M", 10}, {"0.60M", 12}, {"1M", 13}.
const std::vector<std::pair<std::string, int64_t>>& pixel_budgets();

// The template nearest to `h_div_w` (argmin |template - h_div_w|, first on ties).
const ScaleTemplate& nearest_template(double h_div_w);

// The template's schedule for a pixel budget; InvalidArgumentError names the
// budgets for an unknown one.
std::vector<Grid> scale_schedule(const ScaleTemplate& scale_template, const std::string& pixel_budget);

// Per token of the schedule (scales in order, each row-major), its RoPE grid
// position (row, col) on the 128 x 128 grid: round(i * H_last / h), round(j *
// W_last / w) with (H_last, W_last) the template's 1M last scale, computed in
// float32 as the official code does. Returns [L] rows and [L] cols.
void rope_grid_positions(const ScaleTemplate& scale_template, const std::vector<Grid>& schedule,
                         std::vector<int64_t>& rows, std::vector<int64_t>& cols);

// Tokens of a schedule and the first token of each scale (the last entry is L).
int64_t schedule_tokens(const std::vector<Grid>& schedule);
std::vector<int64_t> scale_offsets(const std::vector<Grid>& schedule);

}  // namespace kvs::infinity
