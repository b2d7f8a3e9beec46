#pragma once
// The tokenizer gate of a LlamaGen bundle: held-out images encoded by the training
// encoder (WORK/vq) and decoded by the bundle's own VqDecoder (shipped dtype); mean
// per-image 8-bit PSNR.
#include <ATen/core/Tensor.h>

#include <string>

namespace kvs::llamagen {
struct LlamaGenModel;
}
namespace kvs::vq {
class VqDecoder;
}

namespace kvs::training {

double llamagen_bundle_tokenizer_psnr(const std::string& work_dir, const llamagen::LlamaGenModel& model,
                                      const at::Tensor& pixels_nhwc, at::Device device);

// The same for any bundle whose decoder is LlamaGen's VQ (Janus-Pro's
// gen_vision_model): `grid` x `grid` codes per image.
double vq_decoder_tokenizer_psnr(const std::string& work_dir, const vq::VqDecoder& decoder, int64_t grid,
                                 const at::Tensor& pixels_nhwc, at::Device device);

}  // namespace kvs::training
