#include "engine/training/llamagen/vq_model.h"

#include <nlohmann/json.hpp>

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <c10/core/GradMode.h>

#include "engine/core/errors.h"
#include "engine/models/blocks/vq_decoder.h"
#include "engine/models/blocks/vq_encoder.h"
#include "engine/models/llamagen/llamagen_weights.h"

namespace kvs::training {

void VqModelConfig::validate() const {
  arch.validate();
  if (encoder_levels().size() != arch.decoder_ch_mult.size())
    throw InvalidArgumentError("VQ model: encoder_ch_mult must have as many levels as decoder_ch_mult");
  for (int64_t m : encoder_levels())
    if (m < 1 || (arch.ch * m) % 32 != 0)
      throw InvalidArgumentError("VQ model: ch * every encoder_ch_mult entry must be a multiple of 32 (GroupNorm)");
  if (commit_loss_beta < 0 || entropy_loss_ratio < 0)
    throw InvalidArgumentError("VQ model: loss weights must not be negative");
}

nlohmann::json to_json(const VqModelConfig& c) {
  return {{"tokenizer", llamagen::to_json(c.arch)},
          {"encoder_ch_mult", c.encoder_levels()},
          {"commit_loss_beta", c.commit_loss_beta},
          {"entropy_loss_ratio", c.entropy_loss_ratio}};
}

VqModelConfig vq_model_config_from_json(const nlohmann::json& j) {
  VqModelConfig c;
  try {
    c.arch = llamagen::vq_config_from_json(j.at("tokenizer"));
    c.encoder_ch_mult = j.at("encoder_ch_mult").get<std::vector<int64_t>>();
    c.commit_loss_beta = j.at("commit_loss_beta").get<double>();
    c.entropy_loss_ratio = j.at("entropy_loss_ratio").get<double>();
  } catch (const nlohmann::json::exception& e) {
    throw FormatError(std::string("VQ model config: ") + e.what());
  }
  c.validate();
  return c;
}

std::vector<io::ExpectedTensor> vq_model_expected_tensors(const VqModelConfig& c) {
  std::vector<io::ExpectedTensor> out = llamagen::vq_encoder_expected_tensors(c.arch, c.encoder_levels());
  for (auto& e : llamagen::vq_decoder_expected_tensors(c.arch)) out.push_back(e);
  return out;
}

ParameterSet init_vq_parameters(const VqModelConfig& c, uint64_t seed, at::Device device) {
  c.validate();
  const bool l2 = c.arch.codebook_l2_norm;
  const double n = static_cast<double>(c.arch.codebook_size);
  return init_parameters(vq_model_expected_tensors(c), seed, device,
                         [l2, n](const std::string& name, const std::vector<int64_t>& shape, at::Generator& gen) {
                           if (name != "quantize.embedding.weight") return at::Tensor();
                           at::Tensor e = at::empty(shape).uniform_(-1.0 / n, 1.0 / n, gen);
                           if (l2) e = e / at::clamp_min(at::norm(e, 2, {-1}, true), 1e-12);
                           return e;
                         });
}

VqModel::VqModel(VqModelConfig config, const std::map<std::string, at::Tensor>& weights, at::Device device)
    : config_(std::move(config)), device_(device) {
  config_.validate();
  io::ShapeMap shapes;
  for (const auto& [name, t] : weights) shapes[name] = t.sizes().vec();
  io::check_tensor_set(shapes, vq_model_expected_tensors(config_), "VQ model");
  for (const auto& [name, t] : weights) weights_[name] = t.to(device, at::kFloat).contiguous();
  std::map<std::string, at::Tensor> decoder_weights;
  for (const auto& e : llamagen::vq_decoder_expected_tensors(config_.arch))
    decoder_weights[e.name] = weights_.at(e.name);
  decoder_ = std::make_unique<vq::VqDecoder>(config_.arch, decoder_weights, device);
}

VqModel::~VqModel() = default;
VqModel::VqModel(VqModel&&) noexcept = default;

at::Tensor VqModel::encode(const at::Tensor& images) const {
  return vq::encode_latent(weights_, config_.encoder_levels(), config_.arch.num_res_blocks,
                           images.to(device_, at::kFloat));
}

at::Tensor VqModel::codebook() const {
  const at::Tensor& e = weights_.at("quantize.embedding.weight");
  return config_.arch.codebook_l2_norm ? e / at::clamp_min(at::norm(e, 2, {-1}, true), 1e-12) : e;
}

namespace {

at::Tensor l2_normalize(const at::Tensor& x) { return x / at::clamp_min(at::norm(x, 2, {-1}, true), 1e-12); }

// compute_entropy_loss(affinity = -d, "softmax", temperature 0.01).
at::Tensor entropy_loss(const at::Tensor& affinity) {
  at::Tensor flat = affinity.reshape({-1, affinity.size(-1)}) / 0.01;
  at::Tensor probs = at::softmax(flat, -1);
  at::Tensor log_probs = at::log_softmax(flat + 1e-5, -1);
  at::Tensor avg_probs = probs.mean(0);
  at::Tensor avg_entropy = -(avg_probs * at::log(avg_probs + 1e-5)).sum();
  at::Tensor sample_entropy = -(probs * log_probs).sum(-1).mean();
  return sample_entropy - avg_entropy;
}

}  // namespace

VqQuantized VqModel::quantize(const at::Tensor& z_in, bool with_losses) const {
  const int64_t b = z_in.size(0), e = z_in.size(1), hh = z_in.size(2), ww = z_in.size(3);
  at::Tensor z = z_in.permute({0, 2, 3, 1}).contiguous();  // b h w c
  at::Tensor flat = z.view({-1, e});
  at::Tensor embedding = weights_.at("quantize.embedding.weight");
  if (config_.arch.codebook_l2_norm) {
    z = l2_normalize(z);
    flat = l2_normalize(flat);
    embedding = l2_normalize(embedding);
  }
  at::Tensor d = (flat * flat).sum(1, true) + (embedding * embedding).sum(1) - 2 * at::matmul(flat, embedding.t());
  at::Tensor indices = at::argmin(d, 1);
  at::Tensor z_q = embedding.index_select(0, indices).view(z.sizes());
  VqQuantized out;
  if (with_losses) {
    out.vq_loss = at::mean((z_q - z.detach()).pow(2));
    out.commit_loss = config_.commit_loss_beta * at::mean((z_q.detach() - z).pow(2));
    out.entropy_loss = config_.entropy_loss_ratio > 0 ? config_.entropy_loss_ratio * entropy_loss(-d)
                                                      : at::zeros({}, z.options());
  }
  z_q = z + (z_q - z).detach();
  out.z_q = z_q.permute({0, 3, 1, 2}).contiguous();
  out.codes = indices.view({b, hh * ww});
  return out;
}

at::Tensor VqModel::decode(const at::Tensor& z_q) const { return decoder_->decode_latent(z_q); }

VqOutput VqModel::forward(const at::Tensor& images, bool with_losses) const {
  VqOutput out;
  out.quantized = quantize(encode(images), with_losses);
  out.reconstruction = decode(out.quantized.z_q);
  return out;
}

at::Tensor VqModel::encode_codes(const at::Tensor& images) const {
  c10::NoGradGuard no_grad;
  return quantize(encode(images), false).codes;
}

}  // namespace kvs::training
