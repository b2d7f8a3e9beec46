#include "engine/models/mar/mar_model.h"

#include <ATen/Functions.h>

#include "engine/core/errors.h"
#include "engine/io/safetensors_reader.h"
#include "engine/models/mar/mar_weights.h"

namespace kvs::mar {
namespace {

std::map<std::string, at::Tensor> tensors_with_prefix(const io::SafetensorsReader& r, const std::string& prefix) {
  std::map<std::string, at::Tensor> out;
  for (const auto& e : r.index().tensors)
    if (e.name.rfind(prefix, 0) == 0) out[e.name.substr(prefix.size())] = r.tensor(e.name);
  return out;
}

}  // namespace

MarModel MarModel::from_weights(const MarConfig& mar_config, const KlVaeConfig& vae_config,
                                const io::SafetensorsReader& weights, at::Device device) {
  mar_config.validate();
  vae_config.validate();
  check_compatible(mar_config, vae_config);
  io::ShapeMap shapes;
  for (const auto& e : weights.index().tensors) shapes[e.name] = e.shape;
  std::vector<io::ExpectedTensor> expected = with_prefix("mar.", mar_expected_tensors(mar_config));
  for (auto& e : with_prefix("vae.", kl_vae_expected_tensors(vae_config))) expected.push_back(std::move(e));
  io::check_tensor_set(shapes, expected, "file " + weights.path());
  for (const auto& e : weights.index().tensors) {
    const bool floating = e.dtype == io::DType::F32 || e.dtype == io::DType::F16 || e.dtype == io::DType::BF16;
    if (!floating)
      throw ModelMismatchError("file " + weights.path() + ": tensor " + e.name + " has dtype " +
                               io::dtype_name(e.dtype) + ", expected a floating-point type");
  }
  MarModel model;
  const auto mar_weights = tensors_with_prefix(weights, "mar.");
  model.transformer = std::make_unique<MarTransformer>(mar_config, mar_weights, device);
  model.head = std::make_unique<DiffusionHead>(mar_config, tensors_with_prefix(weights, "mar.diffloss.net."), device);
  model.diffusion = std::make_unique<GaussianDiffusion>(mar_config.num_sampling_steps);
  model.vae = std::make_unique<KlVaeDecoder>(vae_config, tensors_with_prefix(weights, "vae."), device);
  return model;
}

void read_mar_manifest(const io::ModelBundle& bundle, MarConfig& mar_config, KlVaeConfig& vae_config) {
  const auto& m = bundle.manifest;
  try {
    mar_config = mar_config_from_json(m.at("architecture").at("mar"));
    vae_config = kl_vae_config_from_json(m.at("tokenizer"));
  } catch (const nlohmann::json::exception& e) {
    throw FormatError("model " + bundle.dir + "/model.json: missing architecture.mar or tokenizer section (" +
                      e.what() + ")");
  } catch (const InvalidArgumentError& e) {
    throw FormatError("model " + bundle.dir + "/model.json: " + e.what());
  }
}

MarModel MarModel::load(const io::ModelBundle& bundle, at::Device device) {
  if (bundle.family() != "mar")
    throw ModelMismatchError("model " + bundle.dir + ": family '" + bundle.family() + "' is not mar");
  MarConfig mar_config;
  KlVaeConfig vae_config;
  read_mar_manifest(bundle, mar_config, vae_config);
  auto reader = io::SafetensorsReader::open(bundle.weights_path());
  MarModel model = from_weights(mar_config, vae_config, *reader, device);
  model.name = bundle.name();
  model.class_names = bundle.class_names();
  if (!model.class_names.empty() && static_cast<int64_t>(model.class_names.size()) != mar_config.class_num)
    throw FormatError("model " + bundle.dir + "/model.json: " + std::to_string(model.class_names.size()) +
                      " class_names for " + std::to_string(mar_config.class_num) + " classes");
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
  return {{"format", "kvstudio-bundle"},
          {"format_version", io::kBundleFormatVersion},
          {"name", name},
          {"family", "mar"},
          {"architecture", {{"mar", to_json(mar)}}},
          {"tokenizer", to_json(vae)},
          {"files", {{"weights", "weights.safetensors"}}},
          {"provenance", provenance}};
}

}  // namespace kvs::mar
