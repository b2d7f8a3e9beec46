#include "engine/models/infinity/bsq_codes.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <cmath>

#include "engine/core/errors.h"

namespace kvs::infinity {
namespace {

// F.interpolate(x [B, d, 1, h, w], size=(1, H, W), mode='trilinear') on the 2-D map.
at::Tensor resize(const at::Tensor& x, int64_t h, int64_t w) {
  if (x.size(2) == h && x.size(3) == w) return x;
  return at::upsample_trilinear3d(x.unsqueeze(2), {1, h, w}, /*align_corners=*/false).squeeze(2);
}

}  // namespace

at::Tensor bits_to_codes(const at::Tensor& bits_in, int64_t h, int64_t w, int64_t d, bool patchify) {
  const int64_t b = bits_in.size(0), token_bits = patchify ? 4 * d : d;
  if (bits_in.dim() != 3 || bits_in.size(1) != h * w || bits_in.size(2) != token_bits)
    throw InvalidArgumentError("BSQ bits must be [B, " + std::to_string(h * w) + ", " + std::to_string(token_bits) +
                               "], got " + c10::str(bits_in.sizes()));
  at::Tensor bits = bits_in.reshape({b, h, w, token_bits});
  if (patchify) bits = at::pixel_shuffle(bits.permute({0, 3, 1, 2}), 2).permute({0, 2, 3, 1});  // [B, 2h, 2w, d]
  // bits * s * 2 - s with s = 1/np.sqrt(d) applied to the float32 tensor; then F.normalize over the bits.
  const double s = 1.0 / std::sqrt(static_cast<double>(d));
  at::Tensor codes = bits.to(at::kFloat) * s * 2 - s;
  codes = codes / at::clamp_min(at::norm(codes, 2, {-1}, /*keepdim=*/true), 1e-12);
  return codes.permute({0, 3, 1, 2}).contiguous();
}

BsqCodeAccumulator::BsqCodeAccumulator(int64_t batch, int64_t d, bool patchify,
                                       std::vector<std::array<int64_t, 2>> token_schedule, at::Device device)
    : d_(d), patchify_(patchify), tokens_(std::move(token_schedule)) {
  if (tokens_.empty()) throw InvalidArgumentError("BSQ codes need at least one scale");
  const int64_t up = patchify_ ? 2 : 1;
  summed_ = at::zeros({batch, d_, tokens_.back()[0] * up, tokens_.back()[1] * up},
                      at::TensorOptions().dtype(at::kFloat).device(device));
}

at::Tensor BsqCodeAccumulator::add_scale(int64_t si, const at::Tensor& bits) {
  if (si < 0 || si >= static_cast<int64_t>(tokens_.size()))
    throw InvalidArgumentError("scale " + std::to_string(si) + " is not in the schedule");
  const auto [h, w] = tokens_[static_cast<size_t>(si)];
  const at::Tensor codes = bits_to_codes(bits.to(summed_.device()), h, w, d_, patchify_);
  if (si + 1 == static_cast<int64_t>(tokens_.size())) {
    summed_ = summed_ + codes;  // the last scale: no interpolation
    return {};
  }
  summed_ = summed_ + resize(codes, summed_.size(2), summed_.size(3));
  const int64_t up = patchify_ ? 2 : 1;
  const auto [nh, nw] = tokens_[static_cast<size_t>(si) + 1];
  at::Tensor next = resize(summed_, nh * up, nw * up);
  if (patchify_) next = at::pixel_unshuffle(next, 2);  // [B, 4d, h', w']
  return next.reshape({next.size(0), next.size(1), -1}).permute({0, 2, 1}).contiguous();
}

}  // namespace kvs::infinity
