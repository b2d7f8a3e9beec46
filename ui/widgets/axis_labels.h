#pragma once
// Axis labels that do not overlap: with many layers or heads a slot is narrower
// than its label ("L23", "H15"), and printing every one runs them together into
// an unreadable strip. Label every stride-th slot instead.
#include <algorithm>
#include <cmath>

namespace kvs::ui {

// How many slots of `slot` pixels one label of `label_extent` pixels (plus a
// little air) needs: 1 when each slot has room for its own label.
inline int labelStride(double slot, double label_extent) {
  if (slot <= 0.0) return 1;
  return std::max(1, static_cast<int>(std::ceil((label_extent + 3.0) / slot)));
}

}  // namespace kvs::ui
