#include "engine/models/mar/mar_model.h"

#include <ATen/Functions.h>

#include "engine/core/errors.h"
#include "engine/io/bundle_loading.h"
#include "engine/io/safetensors_reader.h"
#include "engine/models/mar/mar_weights.h"

namespace kvs::mar {

MarModel MarModel::from_weights(const MarConfig& mar_config, const KlVaeConfig& vae_config,
                                const io::SafetensorsReader& weights, at::Device device, at::ScalarType dtype) {
  mar_config.validate();
  vae_config.validate();
  check_compatible(mar_config, vae_config);
  const io::ShapeMap shapes = io::shapes_of(weights);
  std::vector<io::ExpectedTensor> expected = with_prefix("mar.", mar_expected_tensors(mar_config));
  for (auto& e : with_prefix("vae.", kl_vae_expected_tensors(vae_config))) expected.push_back(std::move(e));
  io::check_tensor_set(shapes, expected, "file " + weights.path());
  io::require_floating_tensors(weights);
  MarModel model;
  model.transformer = std::make_unique<MarTransformer>(mar_config, io::tensors_with_prefix(weights, "mar."), device,
                                                       dtype);
  model.head = std::make_unique<DiffusionHead>(mar_config, io::tensors_with_prefix(weights, "mar.diffloss.net."),
                                               device, dtype);
  model.diffusion = std::make_unique<GaussianDiffusion>(mar_config.num_sampling_steps);
  model.vae = std::make_unique<KlVaeDecoder>(vae_config, io::tensors_with_prefix(weights, "vae."), device, dtype);
  return model;
}

MarModel MarModel::load(const io::ModelBundle& bundle, at::Device device, at::ScalarType dtype) {
  MarConfig mar_config;
  KlVaeConfig vae_config;
  const auto& m = bundle.manifest;
  auto reader = io::open_family_weights(bundle, "mar", "architecture.mar or tokenizer", [&] {
    mar_config = mar_config_from_json(m.at("architecture").at("mar"));
    vae_config = kl_vae_config_from_json(m.at("tokenizer"));
  });
  MarModel model = from_weights(mar_config, vae_config, *reader, device, dtype);
  model.name = bundle.name();
  model.class_names = io::checked_class_names(bundle, mar_config.class_num);
  return model;
}

int64_t MarModel::image_size() const {
  const MarConfig& c = config();
  return c.seq_h() * c.patch_size * vae->config().upsampling();
}

at::Tensor MarModel::unpatchify(const at::Tensor& tokens) const {
  const MarConfig& c = config();
  const int64_t b = tokens.size(0), p = c.patch_size, h = c.seq_h(), w = c.seq_w(), ch = c.vae_embed_dim;
  // reshape(n, h, w, c, p, p); einsum nhwcpq -> nchpwq; reshape(n, c, h*p, w*p)
  return tokens.reshape({b, h, w, ch, p, p}).permute({0, 3, 1, 4, 2, 5}).reshape({b, ch, h * p, w * p});
}

at::Tensor MarModel::decode_tokens(const at::Tensor& tokens) const { return vae->decode_tokens(unpatchify(tokens)); }

nlohmann::json mar_manifest(const std::string& name, const MarConfig& mar, const KlVaeConfig& vae,
                            const nlohmann::json& provenance) {
  return io::family_manifest(name, "mar", "mar", to_json(mar), to_json(vae), provenance);
}

}  // namespace kvs::mar
