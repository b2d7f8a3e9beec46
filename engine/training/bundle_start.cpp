#include "engine/training/bundle_start.h"

#include <functional>

#include "engine/core/errors.h"
#include "engine/io/bundle_loading.h"
#include "engine/io/bundle_weights.h"
#include "engine/io/model_bundle.h"
#include "engine/io/safetensors_reader.h"
#include "engine/io/tensor_spec.h"
#include "engine/models/blocks/vq_encoder.h"
#include "engine/models/janus/janus_config.h"
#include "engine/models/janus/janus_weights.h"
#include "engine/models/llamagen/llamagen_config.h"
#include "engine/models/llamagen/llamagen_weights.h"

namespace kvs::training {
namespace {

// Float32 CPU copies of `expected` from `tensors` (named without the prefix).
std::map<std::string, at::Tensor> float_copies(const std::map<std::string, at::Tensor>& tensors,
                                               const std::vector<io::ExpectedTensor>& expected,
                                               const std::string& origin) {
  io::check_tensor_set(io::shapes_of(tensors), expected, origin);
  std::map<std::string, at::Tensor> out;
  for (const auto& e : expected) out.emplace(e.name, tensors.at(e.name).to(at::kCPU, at::kFloat).contiguous().clone());
  return out;
}

// Identifies decoder weights by their values: a hash over every decoder tensor's
// float32 bytes, in name order.
std::string decoder_fingerprint(const std::map<std::string, at::Tensor>& decoder) {
  std::string bytes;
  for (const auto& [name, t] : decoder) {
    bytes += name + ";";
    bytes.append(reinterpret_cast<const char*>(t.data_ptr<float>()), static_cast<size_t>(t.numel()) * sizeof(float));
  }
  return std::to_string(std::hash<std::string>{}(bytes));
}

// The architecture of an open janus-pro bundle (ModelMismatchError for another
// family, FormatError naming model.json for a bad section).
janus::JanusConfig janus_architecture_of(const io::ModelBundle& bundle) {
  io::require_family(bundle, "janus-pro");
  janus::JanusConfig c;
  io::parse_manifest_sections(bundle, "architecture.janus", [&] {
    c = janus::janus_config_from_json(bundle.manifest.at("architecture").at("janus"));
  });
  return c;
}

}  // namespace

BundleVq read_bundle_vq(const std::string& bundle_dir) {
  const io::ModelBundle bundle = io::ModelBundle::open(bundle_dir);
  BundleVq out;
  out.origin = "bundle " + bundle.name() + " (" + bundle.dir + ")";
  const std::string family = bundle.family();
  std::string prefix;
  if (family == "janus-pro") {
    const janus::JanusConfig c = janus_architecture_of(bundle);
    out.config.arch = c.vq;
    out.image_size = static_cast<int>(c.image_size);
    prefix = "gen_vision_model.";
  } else if (family == "llamagen") {
    llamagen::GptConfig g;
    io::parse_manifest_sections(bundle, "architecture.gpt or tokenizer", [&] {
      g = llamagen::gpt_config_from_json(bundle.manifest.at("architecture").at("gpt"));
      out.config.arch = llamagen::vq_config_from_json(bundle.manifest.at("tokenizer"));
    });
    out.image_size = static_cast<int>(g.grid_size() * out.config.arch.downsample());
    prefix = "vq.";
  } else {
    throw InvalidArgumentError(out.origin + " is a " + family +
                               " model: only llamagen and janus-pro bundles have a VQ image tokenizer");
  }
  auto weights = io::SafetensorsReader::open(bundle.weights_path(), io::TensorMemory::OwnedCopy);
  out.decoder = float_copies(io::tensors_with_prefix(*weights, prefix),
                             llamagen::vq_decoder_expected_tensors(out.config.arch),
                             "file " + bundle.weights_path() + " (" + prefix + "*)");
  out.fingerprint = decoder_fingerprint(out.decoder);

  out.encoder = vq::read_bundle_vq_encoder(bundle, out.config.arch);
  return out;
}

janus::JanusConfig janus_bundle_architecture(const std::string& bundle_dir) {
  return janus_architecture_of(io::ModelBundle::open(bundle_dir));
}

std::map<std::string, at::Tensor> read_janus_generator(const std::string& bundle_dir, nlohmann::json* architecture) {
  const io::ModelBundle bundle = io::ModelBundle::open(bundle_dir);
  const janus::JanusConfig c = janus_architecture_of(bundle);
  if (architecture) *architecture = bundle.manifest.at("architecture").at("janus");
  auto weights = io::SafetensorsReader::open(bundle.weights_path(), io::TensorMemory::OwnedCopy);
  std::map<std::string, at::Tensor> all;
  for (const auto& n : weights->names()) all.emplace(n, weights->tensor(n));
  io::check_tensor_set(io::shapes_of(all), janus::janus_expected_tensors(c), "file " + bundle.weights_path());
  std::map<std::string, at::Tensor> out;
  for (const auto& e : janus::janus_generation_tensors(c))
    out.emplace(e.name, all.at(e.name).to(at::kCPU, at::kFloat).contiguous().clone());
  return out;
}

}  // namespace kvs::training
