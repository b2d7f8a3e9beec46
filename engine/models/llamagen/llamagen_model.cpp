#include "engine/models/llamagen/llamagen_model.h"

#include "engine/core/errors.h"
#include "engine/io/safetensors_reader.h"
#include "engine/models/llamagen/llamagen_weights.h"

namespace kvs::llamagen {
namespace {

// Splits "<prefix>name" tensors out of a file; everything without a known
// prefix is reported as unexpected by the strict check.
std::map<std::string, at::Tensor> tensors_with_prefix(const io::SafetensorsReader& r, const std::string& prefix) {
  std::map<std::string, at::Tensor> out;
  for (const auto& e : r.index().tensors)
    if (e.name.rfind(prefix, 0) == 0) out[e.name.substr(prefix.size())] = r.tensor(e.name);
  return out;
}

io::ShapeMap shapes_of(const io::SafetensorsReader& r) {
  io::ShapeMap shapes;
  for (const auto& e : r.index().tensors) shapes[e.name] = e.shape;
  return shapes;
}

}  // namespace

LlamaGenModel LlamaGenModel::from_weights(const GptConfig& gpt_config, const VqConfig& vq_config,
                                          const io::SafetensorsReader& weights, at::Device device) {
  std::vector<io::ExpectedTensor> expected;
  for (auto e : gpt_expected_tensors(gpt_config)) expected.push_back({"gpt." + e.name, e.shape});
  for (auto e : vq_decoder_expected_tensors(vq_config)) expected.push_back({"vq." + e.name, e.shape});
  io::check_tensor_set(shapes_of(weights), expected, "file " + weights.path());
  for (const auto& e : weights.index().tensors) {
    if (e.dtype != io::DType::F32 && e.dtype != io::DType::F16 && e.dtype != io::DType::BF16)
      throw ModelMismatchError("file " + weights.path() + ": tensor " + e.name + " has dtype " +
                               io::dtype_name(e.dtype) + ", expected a floating-point type");
  }
  if (vq_config.codebook_size != gpt_config.vocab_size)
    throw ModelMismatchError("GPT vocab_size " + std::to_string(gpt_config.vocab_size) +
                             " does not match the tokenizer codebook_size " + std::to_string(vq_config.codebook_size));
  LlamaGenModel model;
  model.gpt = std::make_unique<LlamaGenGpt>(gpt_config, tensors_with_prefix(weights, "gpt."), device);
  model.vq = std::make_unique<VqDecoder>(vq_config, tensors_with_prefix(weights, "vq."), device);
  return model;
}

LlamaGenModel LlamaGenModel::load(const io::ModelBundle& bundle, at::Device device) {
  if (bundle.family() != "llamagen")
    throw ModelMismatchError("model " + bundle.dir + ": family '" + bundle.family() + "' is not llamagen");
  const auto& m = bundle.manifest;
  GptConfig gpt_config;
  VqConfig vq_config;
  try {
    gpt_config = gpt_config_from_json(m.at("architecture").at("gpt"));
    vq_config = vq_config_from_json(m.at("tokenizer"));
  } catch (const nlohmann::json::exception& e) {
    throw FormatError("model " + bundle.dir + "/model.json: missing architecture.gpt or tokenizer section (" +
                      e.what() + ")");
  } catch (const InvalidArgumentError& e) {
    throw FormatError("model " + bundle.dir + "/model.json: " + e.what());
  }
  auto reader = io::SafetensorsReader::open(bundle.weights_path());
  LlamaGenModel model = from_weights(gpt_config, vq_config, *reader, device);
  model.name = bundle.name();
  model.class_names = bundle.class_names();
  if (!model.class_names.empty() && static_cast<int64_t>(model.class_names.size()) != gpt_config.num_classes)
    throw FormatError("model " + bundle.dir + "/model.json: " + std::to_string(model.class_names.size()) +
                      " class_names for " + std::to_string(gpt_config.num_classes) + " classes");
  return model;
}

nlohmann::json llamagen_manifest(const std::string& name, const GptConfig& gpt, const VqConfig& vq,
                                 const nlohmann::json& provenance) {
  return {{"format", "kvstudio-bundle"},
          {"format_version", io::kBundleFormatVersion},
          {"name", name},
          {"family", "llamagen"},
          {"architecture", {{"gpt", to_json(gpt)}}},
          {"tokenizer", to_json(vq)},
          {"files", {{"weights", "weights.safetensors"}}},
          {"provenance", provenance}};
}

}  // namespace kvs::llamagen
