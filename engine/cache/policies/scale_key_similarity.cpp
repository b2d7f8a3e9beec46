#include "engine/cache/policies/scale_key_similarity.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <cmath>
#include <limits>
#include <string>

#include "engine/core/errors.h"

namespace kvs {
namespace {

int64_t side_of(int64_t tokens) {
  const auto side = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(tokens))));
  if (side * side != tokens)
    throw InvalidArgumentError("policy amskv: scale of " + std::to_string(tokens) + " tokens is not a square map");
  return side;
}

// keys [R, H, side*side, hd] -> the same map bilinearly resized to `to` x `to`.
at::Tensor resize_key_map(const at::Tensor& keys, int64_t to) {
  const int64_t r = keys.size(0), h = keys.size(1), hd = keys.size(3), side = side_of(keys.size(2));
  at::Tensor map = keys.reshape({r, h, side, side, hd}).permute({0, 1, 4, 2, 3}).reshape({r, h * hd, side, side});
  at::Tensor up = at::upsample_bilinear2d(map, {to, to}, /*align_corners=*/false);
  return up.reshape({r, h, hd, to, to}).permute({0, 1, 3, 4, 2}).reshape({r, h, to * to, hd});
}

}  // namespace

at::Tensor inter_scale_key_similarity(const at::Tensor& keys, const at::Tensor& prev) {
  const at::Tensor current = keys.to(at::kFloat);
  const at::Tensor resized = resize_key_map(prev.to(at::kFloat), side_of(current.size(2)));
  return -(current - resized).pow(2).reshape({current.size(0), -1}).mean(1).to(at::kCPU, at::kDouble).contiguous();
}

std::vector<double> ScaleKeySimilarity::observe(int64_t layer, int64_t unit, const at::Tensor& keys, int64_t rows) {
  rows = std::min(keys.size(0), rows);
  const at::Tensor current = keys.narrow(0, 0, rows).to(at::kFloat);
  at::Tensor& prev = prev_.at(static_cast<size_t>(layer));
  std::vector<double> s(static_cast<size_t>(rows), std::numeric_limits<double>::quiet_NaN());
  if (unit > 0 && prev.defined() && prev.size(0) == rows) {
    const at::Tensor values = inter_scale_key_similarity(current, prev);
    for (int64_t r = 0; r < rows; ++r) s[static_cast<size_t>(r)] = values.data_ptr<double>()[r];
  }
  prev = current;
  return s;
}

}  // namespace kvs
