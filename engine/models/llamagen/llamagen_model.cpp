#include "engine/models/llamagen/llamagen_model.h"

#include "engine/core/errors.h"
#include "engine/io/bundle_loading.h"
#include "engine/io/safetensors_reader.h"
#include "engine/models/llamagen/llamagen_weights.h"

namespace kvs::llamagen {

LlamaGenModel LlamaGenModel::from_weights(const GptConfig& gpt_config, const VqConfig& vq_config,
                                          const io::SafetensorsReader& weights, at::Device device,
                                          at::ScalarType dtype) {
  std::vector<io::ExpectedTensor> expected;
  for (auto e : gpt_expected_tensors(gpt_config)) expected.push_back({"gpt." + e.name, e.shape});
  for (auto e : vq_decoder_expected_tensors(vq_config)) expected.push_back({"vq." + e.name, e.shape});
  // Everything without a known prefix is reported as unexpected by the strict check.
  io::check_tensor_set(io::shapes_of(weights), expected, "file " + weights.path());
  io::require_floating_tensors(weights);
  if (vq_config.codebook_size != gpt_config.vocab_size)
    throw ModelMismatchError("GPT vocab_size " + std::to_string(gpt_config.vocab_size) +
                             " does not match the tokenizer codebook_size " + std::to_string(vq_config.codebook_size));
  LlamaGenModel model;
  model.gpt = std::make_unique<LlamaGenGpt>(gpt_config, io::tensors_with_prefix(weights, "gpt."), device, dtype);
  model.vq = std::make_unique<VqDecoder>(vq_config, io::tensors_with_prefix(weights, "vq."), device, dtype);
  model.decode_graphs = std::make_unique<DecodeGraphs>(*model.gpt);
  return model;
}

LlamaGenModel LlamaGenModel::load(const io::ModelBundle& bundle, at::Device device, at::ScalarType dtype) {
  const auto& m = bundle.manifest;
  GptConfig gpt_config;
  VqConfig vq_config;
  auto reader = io::open_family_weights(bundle, "llamagen", "architecture.gpt or tokenizer", [&] {
    gpt_config = gpt_config_from_json(m.at("architecture").at("gpt"));
    vq_config = vq_config_from_json(m.at("tokenizer"));
  });
  LlamaGenModel model = from_weights(gpt_config, vq_config, *reader, device, dtype);
  model.name = bundle.name();
  const auto encoder = vq::read_bundle_vq_encoder(bundle, vq_config);
  if (!encoder.empty())
    model.encoder = std::make_unique<vq::VqEncoder>(vq_config, encoder, reader->tensor("vq.quantize.embedding.weight"),
                                                    device);
  model.class_names = io::checked_class_names(bundle, gpt_config.num_classes);
  return model;
}

nlohmann::json llamagen_manifest(const std::string& name, const GptConfig& gpt, const VqConfig& vq,
                                 const nlohmann::json& provenance) {
  return io::family_manifest(name, "llamagen", "gpt", to_json(gpt), to_json(vq), provenance);
}

at::Tensor images_to_uint8_nhwc(const at::Tensor& images) {
  return images.detach()
      .to(at::kFloat)
      .mul(127.5)
      .add(128.0)
      .clamp(0, 255)
      .permute({0, 2, 3, 1})
      .to(at::kCPU, at::kByte)
      .contiguous();
}

}  // namespace kvs::llamagen
