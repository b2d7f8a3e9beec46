#pragma once
// Infinity's BSQ codes (infinity/models/bsq_vae/multiscale_bsq.py
// BSQ.indices_to_codes with bit labels) and how each scale's input is built
// from the scales before it (infinity.py autoregressive_infer_cfg): a scale's
// bits become codes (2 s b - s with s = 1/sqrt(d), then L2-normalised over the
// d bits), are resized (trilinear over a time axis of 1, i.e. bilinear,
// align_corners False) to the final latent size and summed; the next scale's
// input is that sum resized down to the next scale. With spatial patchify
// (Infinity-8B) a token carries a 2 x 2 block of latent positions: its 4d bits
// are pixel-shuffled into the latent and the inputs pixel-unshuffled back.
#include <ATen/core/Tensor.h>

#include <array>
#include <cstdint>
#include <vector>

namespace kvs::infinity {

// bits [B, h * w, token_bits] (0/1, token (y, x) row-major, bit j) -> codes
// [B, d, H, W] float32 (H = h, or 2h with patchify).
at::Tensor bits_to_codes(const at::Tensor& bits, int64_t h, int64_t w, int64_t d, bool patchify);

class BsqCodeAccumulator {
 public:
  // `token_schedule`: the transformer's (h, w) per scale; the latent's is the
  // same, or (2h, 2w) with patchify.
  BsqCodeAccumulator(int64_t batch, int64_t d, bool patchify, std::vector<std::array<int64_t, 2>> token_schedule,
                     at::Device device);
  // Adds scale si's bits [B, h * w, token_bits]; returns the next scale's
  // word_embed input [B, h' * w', token_bits] float32, undefined after the last scale.
  at::Tensor add_scale(int64_t si, const at::Tensor& bits);
  // The decoder's input so far [B, d, Hf, Wf] (zeros before the first scale).
  const at::Tensor& summed_codes() const { return summed_; }

 private:
  int64_t d_;
  bool patchify_;
  std::vector<std::array<int64_t, 2>> tokens_;
  at::Tensor summed_;
};

}  // namespace kvs::infinity
