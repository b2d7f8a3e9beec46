#pragma once
// Agreement of a compressed-cache generation with its full-cache reference:
// image similarity (PSNR, SSIM) and token agreement. Torch-free and OpenCV-free
// header; the implementation uses OpenCV.
//
// Conventions (chosen here, documented because papers differ):
// - PSNR: 8-bit, peak 255, MSE over all R, G and B samples together.
//   Identical images have MSE 0 and PSNR = +infinity (std::numeric_limits<double>::
//   infinity()); JSON writers turn it into null (see BenchRecord).
// - SSIM: Wang et al. 2004 (IEEE TIP 13(4)) with an 11x11 Gaussian window,
//   sigma 1.5, K1 = 0.01, K2 = 0.03, L = 255, computed per R/G/B channel and
//   averaged over the three channels. Like the reference MATLAB code
//   (filter2 'valid'), the SSIM map is averaged over the positions where the
//   window lies inside the image; images smaller than 11x11 use the whole map
//   (with reflected borders). Identical images give exactly 1.
#include <cstdint>
#include <vector>

#include "engine/image/rgb_image.h"

namespace kvs {

// Mean squared error over all samples. Throws InvalidArgumentError when sizes differ.
double mean_squared_error(const RgbImage& a, const RgbImage& b);

// 10 log10(255^2 / MSE); +infinity for identical images.
double psnr(const RgbImage& a, const RgbImage& b);

// Mean SSIM over the three channels, in [-1, 1]; 1 for identical images.
double ssim(const RgbImage& a, const RgbImage& b);

// Fraction of positions holding the same token id. Throws InvalidArgumentError
// when the sequences have different lengths; two empty sequences agree fully.
double token_agreement(const std::vector<int32_t>& a, const std::vector<int32_t>& b);

}  // namespace kvs
