#include "engine/models/infinity/bsq_decoder.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <nlohmann/json.hpp>

#include "engine/core/errors.h"
#include "engine/models/blocks/conv_blocks.h"

namespace kvs::infinity {
namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Conv and Normalize wrap nn.Conv2d / nn.GroupNorm one level down: drop that level.
std::string plain_name(const std::string& name) {
  for (const char* level : {".conv.", ".norm."})
    for (const char* leaf : {"weight", "bias"}) {
      const std::string tail = std::string(level) + leaf;
      if (ends_with(name, tail)) return name.substr(0, name.size() - tail.size()) + "." + leaf;
    }
  return name;
}

int64_t groups_for(int64_t channels) {
  if (channels % 32 == 0) return 32;
  if (channels % 24 == 0) return 24;
  throw ModelMismatchError("BSQ-VAE decoder: GroupNorm over " + std::to_string(channels) +
                           " channels (a multiple of 32 or 24 is needed)");
}

}  // namespace

int64_t BsqVaeConfig::upsamplings() const {
  int64_t n = 0;
  for (int64_t p = patch_size; p > 1; p /= 2) ++n;
  return n;
}

void BsqVaeConfig::validate() const {
  auto fail = [](const std::string& what) { throw InvalidArgumentError("BSQ-VAE config: " + what); };
  if (codebook_dim <= 0 || base_ch <= 0 || num_res_blocks < 0) fail("codebook_dim and base_ch must be positive");
  if (patch_size <= 0 || (patch_size & (patch_size - 1)) != 0) fail("patch_size must be a power of two");
  if (ch_mult.empty()) fail("ch_mult must not be empty");
  if (upsamplings() > static_cast<int64_t>(ch_mult.size()) - 1)
    fail("patch_size " + std::to_string(patch_size) + " needs " + std::to_string(upsamplings()) +
         " upsampling levels, ch_mult has " + std::to_string(ch_mult.size() - 1));
  for (const int64_t m : ch_mult) {
    const int64_t c = base_ch * m;
    if (m <= 0 || (c % 32 != 0 && c % 24 != 0)) fail("every level's width must be a multiple of 32 or 24");
  }
}

nlohmann::json BsqVaeConfig::to_json() const {
  return {{"type", "bsq_vae"},
          {"codebook_dim", codebook_dim},
          {"patch_size", patch_size},
          {"base_ch", base_ch},
          {"ch_mult", ch_mult},
          {"num_res_blocks", num_res_blocks},
          {"apply_spatial_patchify", spatial_patchify}};
}

BsqVaeConfig BsqVaeConfig::from_json(const nlohmann::json& j) {
  BsqVaeConfig c;
  try {
    c.codebook_dim = j.value("codebook_dim", c.codebook_dim);
    c.patch_size = j.value("patch_size", c.patch_size);
    c.base_ch = j.value("base_ch", c.base_ch);
    c.ch_mult = j.value("ch_mult", c.ch_mult);
    c.num_res_blocks = j.value("num_res_blocks", c.num_res_blocks);
    if (j.contains("apply_spatial_patchify")) {
      const auto& p = j.at("apply_spatial_patchify");
      c.spatial_patchify = p.is_boolean() ? p.get<bool>() : p.get<int64_t>() != 0;
    }
  } catch (const nlohmann::json::exception& e) {
    throw FormatError(std::string("BSQ-VAE config: a field has the wrong type (") + e.what() + ")");
  }
  return c;
}

BsqVaeConfig infinity_2b_vae_config() { return BsqVaeConfig{}; }

BsqVaeConfig infinity_8b_vae_config() {
  BsqVaeConfig c;
  c.codebook_dim = 14;
  c.patch_size = 8;
  c.ch_mult = {1, 2, 4, 4};
  c.spatial_patchify = true;
  return c;
}

std::vector<std::pair<std::string, std::vector<int64_t>>> BsqDecoder::weight_names(const BsqVaeConfig& c) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> out;
  auto conv = [&](const std::string& name, int64_t in, int64_t outc, int64_t k) {
    out.push_back({"decoder." + name + ".conv.weight", {outc, in, k, k}});
    out.push_back({"decoder." + name + ".conv.bias", {outc}});
  };
  auto norm = [&](const std::string& name, int64_t ch) {
    out.push_back({"decoder." + name + ".norm.weight", {ch}});
    out.push_back({"decoder." + name + ".norm.bias", {ch}});
  };
  auto resnet = [&](const std::string& name, int64_t in, int64_t outc) {
    norm(name + ".norm1", in);
    conv(name + ".conv1", in, outc, 3);
    norm(name + ".norm2", outc);
    conv(name + ".conv2", outc, outc, 3);
    if (in != outc) conv(name + ".nin_shortcut", in, outc, 1);
  };
  const int64_t levels = static_cast<int64_t>(c.ch_mult.size());
  int64_t block_in = c.base_ch * c.ch_mult.back();
  conv("conv_in", c.codebook_dim, block_in, 3);
  resnet("mid.block_1", block_in, block_in);
  resnet("mid.block_2", block_in, block_in);
  for (int64_t level = levels - 1; level >= 0; --level) {
    const int64_t block_out = c.base_ch * c.ch_mult[static_cast<size_t>(level)];
    for (int64_t k = 0; k <= c.num_res_blocks; ++k) {
      resnet("up." + std::to_string(level) + ".block." + std::to_string(k), block_in, block_out);
      block_in = block_out;
    }
    if (level >= 1 && level <= c.upsamplings())
      conv("up." + std::to_string(level) + ".upsample.conv", block_in, block_in, 3);
  }
  norm("norm_out", block_in);
  conv("conv_out", block_in, 3, 3);
  return out;
}

BsqDecoder::BsqDecoder(BsqVaeConfig config, const std::map<std::string, at::Tensor>& weights, at::Device device,
                       at::ScalarType dtype)
    : config_(std::move(config)), dtype_(dtype) {
  config_.validate();
  // The wrapped form is recognised by its conv_in; a plain checkpoint is taken as it is.
  const bool wrapped = weights.count("decoder.conv_in.conv.weight") != 0;
  for (const auto& [name, shape] : weight_names(config_)) {
    const std::string plain = plain_name(name);
    auto it = weights.find(wrapped ? name : plain);
    if (it == weights.end()) throw ModelMismatchError("BSQ-VAE weights: missing tensor " + (wrapped ? name : plain));
    if (it->second.sizes().vec() != shape)
      throw ModelMismatchError("BSQ-VAE weights: tensor " + it->first + " has shape " + c10::str(it->second.sizes()) +
                               ", expected " + c10::str(at::IntArrayRef(shape)));
    w_[plain] = it->second.to(device, dtype).contiguous();
  }
}

at::Tensor BsqDecoder::conv(const at::Tensor& x, const std::string& name, int64_t padding) const {
  return conv_blocks::conv(w_, x, name, padding);
}

at::Tensor BsqDecoder::norm(const at::Tensor& x, const std::string& name) const {
  return at::group_norm(x, groups_for(x.size(1)), w_.at(name + ".weight"), w_.at(name + ".bias"), 1e-6);
}

at::Tensor BsqDecoder::resnet(const at::Tensor& x, const std::string& name) const {
  // swish(x) = x * sigmoid(x), as flux_vqgan.py writes it.
  auto swish = [](const at::Tensor& t) { return t * at::sigmoid(t); };
  at::Tensor h = conv(swish(norm(x, name + ".norm1")), name + ".conv1", 1);
  h = conv(swish(norm(h, name + ".norm2")), name + ".conv2", 1);
  const at::Tensor shortcut = w_.count(name + ".nin_shortcut.weight") ? conv(x, name + ".nin_shortcut", 0) : x;
  return shortcut + h;
}

at::Tensor BsqDecoder::decode_raw(const at::Tensor& z) const {
  if (z.dim() != 4 || z.size(1) != config_.codebook_dim)
    throw InvalidArgumentError("BSQ-VAE decoder input must be [B, " + std::to_string(config_.codebook_dim) +
                               ", H, W], got " + c10::str(z.sizes()));
  const int64_t levels = static_cast<int64_t>(config_.ch_mult.size());
  at::Tensor h = conv(z.to(w_.at("decoder.conv_in.weight").device(), dtype_), "decoder.conv_in", 1);
  h = resnet(h, "decoder.mid.block_1");
  h = resnet(h, "decoder.mid.block_2");
  for (int64_t level = levels - 1; level >= 0; --level) {
    const std::string p = "decoder.up." + std::to_string(level);
    for (int64_t k = 0; k <= config_.num_res_blocks; ++k) h = resnet(h, p + ".block." + std::to_string(k));
    if (level >= 1 && level <= config_.upsamplings()) {
      // F.interpolate(scale_factor=2, mode='nearest'), then a 3x3 conv.
      h = at::upsample_nearest2d(h, {h.size(2) * 2, h.size(3) * 2}, 2.0, 2.0);
      h = conv(h, p + ".upsample.conv", 1);
    }
  }
  const at::Tensor out = norm(h, "decoder.norm_out");
  h = conv(out * at::sigmoid(out), "decoder.conv_out", 1);
  return h.to(at::kFloat);
}

at::Tensor BsqDecoder::decode(const at::Tensor& z) const { return decode_raw(z).clamp(-1, 1); }

}  // namespace kvs::infinity
