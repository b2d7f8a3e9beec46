#include "engine/models/var/var_model.h"

#include "engine/core/errors.h"
#include "engine/io/bundle_loading.h"
#include "engine/io/safetensors_reader.h"
#include "engine/models/var/var_weights.h"

namespace kvs::var {

VarModel VarModel::from_weights(const VarConfig& var_config, const VqvaeConfig& vae_config,
                                const io::SafetensorsReader& weights, at::Device device, at::ScalarType dtype) {
  var_config.validate();
  vae_config.validate();
  check_compatible(var_config, vae_config);
  const io::ShapeMap shapes = io::shapes_of(weights);
  std::vector<io::ExpectedTensor> expected =
      prefixed_with_present_buffers(shapes, "var.", var_expected_tensors(var_config), var_buffer_tensors(var_config));
  for (auto& e : prefixed_with_present_buffers(shapes, "vae.", vqvae_expected_tensors(vae_config),
                                               vqvae_buffer_tensors(vae_config)))
    expected.push_back(std::move(e));
  io::check_tensor_set(shapes, expected, "file " + weights.path());
  io::require_floating_tensors(weights, {"var.lvl_1L"});  // the level index buffer is integer upstream
  VarModel model;
  model.transformer = std::make_unique<VarTransformer>(var_config, io::tensors_with_prefix(weights, "var."), device,
                                                       dtype);
  model.vqvae = std::make_unique<MultiScaleVqvae>(vae_config, io::tensors_with_prefix(weights, "vae."), device, dtype);
  return model;
}

VarModel VarModel::load(const io::ModelBundle& bundle, at::Device device, at::ScalarType dtype) {
  VarConfig var_config;
  VqvaeConfig vae_config;
  const auto& m = bundle.manifest;
  auto reader = io::open_family_weights(bundle, "var", "architecture.var or tokenizer", [&] {
    var_config = var_config_from_json(m.at("architecture").at("var"));
    vae_config = vqvae_config_from_json(m.at("tokenizer"));
  });
  VarModel model = from_weights(var_config, vae_config, *reader, device, dtype);
  model.name = bundle.name();
  model.class_names = io::checked_class_names(bundle, var_config.num_classes);
  return model;
}

nlohmann::json var_manifest(const std::string& name, const VarConfig& var, const VqvaeConfig& vae,
                            const nlohmann::json& provenance) {
  return io::family_manifest(name, "var", "var", to_json(var), to_json(vae), provenance);
}

}  // namespace kvs::var
