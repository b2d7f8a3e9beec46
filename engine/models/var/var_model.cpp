#include "engine/models/var/var_model.h"

#include "engine/core/errors.h"
#include "engine/io/safetensors_reader.h"
#include "engine/models/var/var_weights.h"

namespace kvs::var {
namespace {

std::map<std::string, at::Tensor> tensors_with_prefix(const io::SafetensorsReader& r, const std::string& prefix) {
  std::map<std::string, at::Tensor> out;
  for (const auto& e : r.index().tensors)
    if (e.name.rfind(prefix, 0) == 0) out[e.name.substr(prefix.size())] = r.tensor(e.name);
  return out;
}

}  // namespace

VarModel VarModel::from_weights(const VarConfig& var_config, const VqvaeConfig& vae_config,
                                const io::SafetensorsReader& weights, at::Device device) {
  var_config.validate();
  vae_config.validate();
  check_compatible(var_config, vae_config);
  io::ShapeMap shapes;
  for (const auto& e : weights.index().tensors) shapes[e.name] = e.shape;
  std::vector<io::ExpectedTensor> expected =
      prefixed_with_present_buffers(shapes, "var.", var_expected_tensors(var_config), var_buffer_tensors(var_config));
  for (auto& e : prefixed_with_present_buffers(shapes, "vae.", vqvae_expected_tensors(vae_config),
                                               vqvae_buffer_tensors(vae_config)))
    expected.push_back(std::move(e));
  io::check_tensor_set(shapes, expected, "file " + weights.path());
  for (const auto& e : weights.index().tensors) {
    const bool is_level_buffer = e.name == "var.lvl_1L";
    const bool floating = e.dtype == io::DType::F32 || e.dtype == io::DType::F16 || e.dtype == io::DType::BF16;
    if (!floating && !is_level_buffer)
      throw ModelMismatchError("file " + weights.path() + ": tensor " + e.name + " has dtype " +
                               io::dtype_name(e.dtype) + ", expected a floating-point type");
  }
  VarModel model;
  model.transformer = std::make_unique<VarTransformer>(var_config, tensors_with_prefix(weights, "var."), device);
  model.vqvae = std::make_unique<MultiScaleVqvae>(vae_config, tensors_with_prefix(weights, "vae."), device);
  return model;
}

void read_var_manifest(const io::ModelBundle& bundle, VarConfig& var_config, VqvaeConfig& vae_config) {
  const auto& m = bundle.manifest;
  try {
    var_config = var_config_from_json(m.at("architecture").at("var"));
    vae_config = vqvae_config_from_json(m.at("tokenizer"));
  } catch (const nlohmann::json::exception& e) {
    throw FormatError("model " + bundle.dir + "/model.json: missing architecture.var or tokenizer section (" +
                      e.what() + ")");
  } catch (const InvalidArgumentError& e) {
    throw FormatError("model " + bundle.dir + "/model.json: " + e.what());
  }
}

VarModel VarModel::load(const io::ModelBundle& bundle, at::Device device) {
  if (bundle.family() != "var")
    throw ModelMismatchError("model " + bundle.dir + ": family '" + bundle.family() + "' is not var");
  VarConfig var_config;
  VqvaeConfig vae_config;
  read_var_manifest(bundle, var_config, vae_config);
  auto reader = io::SafetensorsReader::open(bundle.weights_path());
  VarModel model = from_weights(var_config, vae_config, *reader, device);
  model.name = bundle.name();
  model.class_names = bundle.class_names();
  if (!model.class_names.empty() && static_cast<int64_t>(model.class_names.size()) != var_config.num_classes)
    throw FormatError("model " + bundle.dir + "/model.json: " + std::to_string(model.class_names.size()) +
                      " class_names for " + std::to_string(var_config.num_classes) + " classes");
  return model;
}

nlohmann::json var_manifest(const std::string& name, const VarConfig& var, const VqvaeConfig& vae,
                            const nlohmann::json& provenance) {
  return {{"format", "kvstudio-bundle"},
          {"format_version", io::kBundleFormatVersion},
          {"name", name},
          {"family", "var"},
          {"architecture", {{"var", to_json(var)}}},
          {"tokenizer", to_json(vae)},
          {"files", {{"weights", "weights.safetensors"}}},
          {"provenance", provenance}};
}

}  // namespace kvs::var
