#pragma once
// The encoder half of LlamaGen's VQ tokenizer (tokenizer/tokenizer_image/
// vq_model.py: Encoder, quant_conv and VectorQuantizer's nearest entry):
// pictures -> codes. Generation never needs it; finishing a picture does (its
// top rows become the given tokens of a raster run), and so does the training
// tool, which encodes through encode_latent with weights that require grad.
// Janus-Pro's gen_vision_model is the same VQ-16, so both families use it.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/image/rgb_image.h"
#include "engine/models/blocks/vq_config.h"

namespace kvs::io {
struct ModelBundle;
}

namespace kvs::vq {

// Encoder + quant_conv over a state dict (encoder.*, quant_conv.*; no prefix):
// images [B, 3, H, W] in [-1, 1] -> latents [B, codebook_embed_dim, H/f, W/f].
// `ch_mult` are the encoder's levels (upstream VQ-8/VQ-16: the decoder's).
at::Tensor encode_latent(const std::map<std::string, at::Tensor>& weights, const std::vector<int64_t>& ch_mult,
                         int64_t num_res_blocks, const at::Tensor& images);

// VectorQuantizer's choice: the codebook row nearest by squared distance, with
// latents and codebook L2-normalised first when `l2_norm` (as upstream).
// z [B, e, h, w], codebook [n, e] -> codes [B, h*w] int64, row-major.
at::Tensor nearest_codes(const at::Tensor& z, const at::Tensor& codebook, bool l2_norm);

// A picture as the tokenizer's input: scaled (antialiased bicubic) so that it
// covers height x width, the middle cut out (LlamaGen's center_crop_arr keeps
// the centre too), then [1, 3, height, width] float32 in [-1, 1].
at::Tensor picture_tensor(const RgbImage& picture, int64_t height, int64_t width);

// The bundle's encoder file (model.json files.vq_encoder: encoder.* and
// quant_conv.* of the VQ `config`), float32 on the CPU and shape-checked; an
// empty map when the bundle ships none. FormatError for a bad files entry,
// FileError / ModelMismatchError for a damaged file.
std::map<std::string, at::Tensor> read_bundle_vq_encoder(const io::ModelBundle& bundle, const VqConfig& config);

// Whether `tensors` are the whole encoder half of `config` (the converters keep
// only a complete one). A non-empty set that is not is logged as a warning
// naming `origin` and what is missing or mis-shaped: the bundle then cannot
// finish pictures, which a person converting should hear of.
bool is_complete_vq_encoder(const std::map<std::string, at::Tensor>& tensors, const VqConfig& config,
                            const std::string& origin);

// The bundle file of the encoder half that exports and converters write.
inline constexpr const char* kVqEncoderFile = "vq-encoder.safetensors";

// Writes `tensors` (encoder.*, quant_conv.*; checked against `config`) as the
// bundle's encoder file and names it in model.json (files.vq_encoder).
void write_bundle_vq_encoder(const std::string& bundle_dir, const VqConfig& config,
                             const std::map<std::string, at::Tensor>& tensors, at::ScalarType dtype);

// A randomly initialised encoder for `config` (the random bundles' draws:
// Linear/Conv weights N(0, 1/fan_in), norm weights 1, biases 0; seeded), for
// create-random bundles that can finish pictures and for tests.
std::map<std::string, at::Tensor> random_vq_encoder(const VqConfig& config, uint64_t seed);

class VqEncoder {
 public:
  // `encoder_weights`: encoder.* and quant_conv.* (shape-checked against
  // `config` with the decoder's levels); `codebook`: quantize.embedding.weight.
  VqEncoder(VqConfig config, const std::map<std::string, at::Tensor>& encoder_weights, const at::Tensor& codebook,
            at::Device device);

  const VqConfig& config() const { return config_; }
  // images [B, 3, H, W] in [-1, 1] (H and W multiples of the downsample
  // factor) -> codes [B, (H/f) * (W/f)] int64 on the CPU.
  at::Tensor encode_codes(const at::Tensor& images) const;
  // A picture scaled and cut to `size` x `size` pixels (picture_tensor) ->
  // its codes [(size/f)^2] int64 on the CPU: what finishing a picture gives.
  at::Tensor encode_picture(const RgbImage& picture, int64_t size) const;

 private:
  VqConfig config_;
  std::map<std::string, at::Tensor> weights_;
  at::Tensor codebook_;
  at::Device device_;
};

}  // namespace kvs::vq
