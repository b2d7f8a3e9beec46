#include "engine/training/llamagen/tokenizer_psnr.h"

#include <ATen/Functions.h>
#include <c10/core/GradMode.h>

#include <filesystem>

#include "engine/metrics/image_metrics.h"
#include "engine/metrics/image_tensors.h"
#include "engine/models/llamagen/llamagen_model.h"
#include "engine/training/checkpoint.h"
#include "engine/training/llamagen/vq_model.h"

namespace kvs::training {

double llamagen_bundle_tokenizer_psnr(const std::string& work_dir, const llamagen::LlamaGenModel& model,
                                      const at::Tensor& pixels_nhwc, at::Device device) {
  return vq_decoder_tokenizer_psnr(work_dir, *model.vq, model.gpt->config().grid_size(), pixels_nhwc, device);
}

double vq_decoder_tokenizer_psnr(const std::string& work_dir, const vq::VqDecoder& decoder, int64_t grid,
                                 const at::Tensor& pixels_nhwc, at::Device device) {
  nlohmann::json vq_manifest;
  const auto vq_weights = load_checkpoint_weights((std::filesystem::path(work_dir) / "vq").string(), &vq_manifest);
  const VqModel encoder(vq_model_config_from_json(vq_manifest.at("config").at("model")), vq_weights, device);
  c10::NoGradGuard no_grad;
  double sum = 0;
  const int64_t n = pixels_nhwc.size(0), b = 50;
  if (n == 0) return 0.0;
  for (int64_t i = 0; i < n; i += b) {
    const int64_t len = std::min(b, n - i);
    at::Tensor real_u8 = pixels_nhwc.narrow(0, i, len);
    at::Tensor codes = encoder.encode_codes(u8_images_to_input(real_u8, device));
    at::Tensor rec = llamagen::images_to_uint8_nhwc(decoder.decode_codes(codes, grid, grid));
    for (int64_t j = 0; j < len; ++j) sum += psnr(tensor_to_rgb_image(real_u8[j]), tensor_to_rgb_image(rec[j]));
  }
  return sum / static_cast<double>(n);
}

}  // namespace kvs::training
