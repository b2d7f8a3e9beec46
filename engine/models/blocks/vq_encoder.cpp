#include "engine/models/blocks/vq_encoder.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "engine/core/errors.h"
#include "engine/core/logging.h"
#include "engine/io/bundle_weights.h"
#include "engine/io/model_bundle.h"
#include "engine/io/random_bundle.h"
#include "engine/io/safetensors_reader.h"
#include "engine/io/safetensors_writer.h"
#include "engine/io/tensor_spec.h"
#include "engine/models/blocks/conv_blocks.h"
#include "engine/models/blocks/vq_weights.h"

namespace kvs::vq {
namespace fs = std::filesystem;

at::Tensor encode_latent(const std::map<std::string, at::Tensor>& w, const std::vector<int64_t>& ch_mult,
                         int64_t num_res_blocks, const at::Tensor& images) {
  const int64_t levels = static_cast<int64_t>(ch_mult.size());
  at::Tensor h = conv_blocks::conv(w, images, "encoder.conv_in", 1);
  for (int64_t level = 0; level < levels; ++level) {
    const std::string p = "encoder.conv_blocks." + std::to_string(level);
    for (int64_t i = 0; i < num_res_blocks; ++i) {
      h = conv_blocks::resnet_block(w, h, p + ".res." + std::to_string(i));
      // Attention only at the lowest resolution, as upstream.
      if (level == levels - 1) h = conv_blocks::attn_block(w, h, p + ".attn." + std::to_string(i));
    }
    if (level != levels - 1) {
      // Downsample: asymmetric zero padding (0, 1, 0, 1), then a 3x3 stride-2 conv.
      h = conv_blocks::conv(w, at::constant_pad_nd(h, {0, 1, 0, 1}, 0), p + ".downsample.conv", 0, 2);
    }
  }
  h = conv_blocks::resnet_block(w, h, "encoder.mid.0");
  h = conv_blocks::attn_block(w, h, "encoder.mid.1");
  h = conv_blocks::resnet_block(w, h, "encoder.mid.2");
  h = conv_blocks::conv(w, at::silu(conv_blocks::group_norm(w, h, "encoder.norm_out")), "encoder.conv_out", 1);
  return conv_blocks::conv(w, h, "quant_conv", 0);
}

namespace {

at::Tensor l2_normalize(const at::Tensor& x) { return x / at::clamp_min(at::norm(x, 2, {-1}, true), 1e-12); }

}  // namespace

at::Tensor nearest_codes(const at::Tensor& z_in, const at::Tensor& codebook, bool l2_norm) {
  const int64_t b = z_in.size(0), e = z_in.size(1), cells = z_in.size(2) * z_in.size(3);
  at::Tensor flat = z_in.permute({0, 2, 3, 1}).reshape({-1, e}).to(at::kFloat);
  at::Tensor embedding = codebook.to(flat.device(), at::kFloat);
  if (l2_norm) {
    flat = l2_normalize(flat);
    embedding = l2_normalize(embedding);
  }
  // Upstream's d = |z|^2 + |e|^2 - 2 z.e, the same sum in the same order.
  const at::Tensor d = (flat * flat).sum(1, true) + (embedding * embedding).sum(1) -
                       2 * at::matmul(flat, embedding.t());
  return at::argmin(d, 1).view({b, cells}).to(at::kCPU);
}

at::Tensor picture_tensor(const RgbImage& picture, int64_t height, int64_t width) {
  if (picture.width <= 0 || picture.height <= 0 ||
      picture.pixels.size() != static_cast<size_t>(picture.width) * static_cast<size_t>(picture.height) * 3)
    throw InvalidArgumentError("the picture is empty or its pixels do not match its " + std::to_string(picture.width) +
                               "x" + std::to_string(picture.height) + " size");
  if (height <= 0 || width <= 0) throw InvalidArgumentError("a picture cannot be scaled to an empty size");
  at::Tensor x = at::from_blob(const_cast<uint8_t*>(picture.pixels.data()), {1, picture.height, picture.width, 3},
                               at::TensorOptions().dtype(at::kByte))
                     .permute({0, 3, 1, 2})
                     .to(at::kFloat);
  // The smallest scale at which the picture covers the target, then the middle.
  const double scale = std::max(static_cast<double>(height) / picture.height,
                                static_cast<double>(width) / picture.width);
  const int64_t scaled_h = std::max<int64_t>(height, std::llround(picture.height * scale));
  const int64_t scaled_w = std::max<int64_t>(width, std::llround(picture.width * scale));
  if (scaled_h != picture.height || scaled_w != picture.width)
    x = at::_upsample_bicubic2d_aa(x, {scaled_h, scaled_w}, /*align_corners=*/false);
  x = x.narrow(2, (scaled_h - height) / 2, height).narrow(3, (scaled_w - width) / 2, width);
  return (at::clamp(x, 0, 255) / 127.5 - 1.0).contiguous();
}

std::map<std::string, at::Tensor> read_bundle_vq_encoder(const io::ModelBundle& bundle, const VqConfig& config) {
  const auto files = bundle.manifest.value("files", nlohmann::json::object());
  if (!files.contains("vq_encoder")) return {};
  const std::string manifest = (fs::path(bundle.dir) / "model.json").string();
  if (!files["vq_encoder"].is_string()) throw FormatError("file " + manifest + ": files.vq_encoder must be a string");
  const std::string name = files["vq_encoder"].get<std::string>();
  if (name.empty() || name.find("..") != std::string::npos || fs::path(name).is_absolute())
    throw FormatError("file " + manifest + ": files.vq_encoder must be a file inside the bundle folder");
  const std::string path = (fs::path(bundle.dir) / name).string();
  auto file = io::SafetensorsReader::open(path, io::TensorMemory::OwnedCopy);
  std::map<std::string, at::Tensor> all;
  for (const auto& n : file->names()) all.emplace(n, file->tensor(n));
  const auto expected = vq_encoder_expected_tensors(config, config.decoder_ch_mult);
  io::check_tensor_set(io::shapes_of(all), expected, "file " + path);
  std::map<std::string, at::Tensor> out;
  for (const auto& e : expected) out.emplace(e.name, all.at(e.name).to(at::kCPU, at::kFloat).contiguous().clone());
  return out;
}

bool is_complete_vq_encoder(const std::map<std::string, at::Tensor>& tensors, const VqConfig& config,
                            const std::string& origin) {
  if (tensors.empty()) return false;
  try {
    io::check_tensor_set(io::shapes_of(tensors), vq_encoder_expected_tensors(config, config.decoder_ch_mult),
                         origin + " (VQ encoder)");
    return true;
  } catch (const ModelMismatchError& e) {
    module_logger("convert").warn(std::string("the VQ encoder is not kept, so the bundle cannot finish pictures: ") +
                                  e.what());
    return false;
  }
}

void write_bundle_vq_encoder(const std::string& bundle_dir, const VqConfig& config,
                             const std::map<std::string, at::Tensor>& tensors, at::ScalarType dtype) {
  io::check_tensor_set(io::shapes_of(tensors), vq_encoder_expected_tensors(config, config.decoder_ch_mult),
                       "VQ encoder");
  io::ModelBundle bundle = io::ModelBundle::open(bundle_dir);
  io::NamedTensors named;
  for (const auto& [name, t] : tensors) named.emplace_back(name, t.to(at::kCPU, dtype).contiguous());
  io::write_safetensors((fs::path(bundle.dir) / kVqEncoderFile).string(), named);
  bundle.manifest["files"]["vq_encoder"] = kVqEncoderFile;
  io::write_bundle_manifest(bundle.dir, bundle.manifest);
}

std::map<std::string, at::Tensor> random_vq_encoder(const VqConfig& config, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  const auto f32 = at::TensorOptions().dtype(at::kFloat);
  std::map<std::string, at::Tensor> out;
  for (const auto& e : vq_encoder_expected_tensors(config, config.decoder_ch_mult)) {
    const bool is_norm = e.name.find("norm") != std::string::npos && e.shape.size() == 1;
    if (e.name.ends_with(".bias")) out.emplace(e.name, at::zeros(e.shape, f32));
    else if (is_norm) out.emplace(e.name, at::ones(e.shape, f32));
    else out.emplace(e.name, at::normal(0.0, 1.0 / std::sqrt(static_cast<double>(io::fan_in(e))), e.shape, gen, f32));
  }
  return out;
}

VqEncoder::VqEncoder(VqConfig config, const std::map<std::string, at::Tensor>& encoder_weights,
                     const at::Tensor& codebook, at::Device device)
    : config_(std::move(config)), device_(device) {
  config_.validate();
  io::check_tensor_set(io::shapes_of(encoder_weights), vq_encoder_expected_tensors(config_, config_.decoder_ch_mult),
                       "VQ encoder");
  if (codebook.dim() != 2 || codebook.size(0) != config_.codebook_size ||
      codebook.size(1) != config_.codebook_embed_dim)
    throw ModelMismatchError("VQ encoder: the codebook is " + c10::str(codebook.sizes()) + ", expected [" +
                             std::to_string(config_.codebook_size) + ", " + std::to_string(config_.codebook_embed_dim) +
                             "]");
  for (const auto& [name, t] : encoder_weights) weights_[name] = t.to(device, at::kFloat).contiguous();
  codebook_ = codebook.to(device, at::kFloat).contiguous();
}

at::Tensor VqEncoder::encode_codes(const at::Tensor& images) const {
  const int64_t f = config_.downsample();
  if (images.dim() != 4 || images.size(1) != 3 || images.size(2) % f != 0 || images.size(3) % f != 0)
    throw InvalidArgumentError("VQ encode: expected images [B, 3, H, W] with H and W multiples of " +
                               std::to_string(f) + ", got " + c10::str(images.sizes()));
  c10::NoGradGuard no_grad;
  const at::Tensor z = encode_latent(weights_, config_.decoder_ch_mult, config_.num_res_blocks,
                                     images.to(device_, at::kFloat));
  return nearest_codes(z, codebook_, config_.codebook_l2_norm);
}

at::Tensor VqEncoder::encode_picture(const RgbImage& picture, int64_t size) const {
  return encode_codes(picture_tensor(picture, size, size))[0];
}

}  // namespace kvs::vq
