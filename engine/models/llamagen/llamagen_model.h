#pragma once
// A loaded LlamaGen pipeline: GPT + VQ decoder, from a bundle or from any
// safetensors file holding "gpt." and "vq." tensors (conformance cases).
#include <memory>
#include <string>
#include <vector>

#include "engine/io/model_bundle.h"
#include "engine/models/blocks/vq_decoder.h"
#include "engine/models/blocks/vq_encoder.h"
#include "engine/models/llamagen/decode_graphs.h"
#include "engine/models/llamagen/llamagen_gpt.h"

namespace kvs::io {
class SafetensorsReader;
}

namespace kvs::llamagen {

using vq::VqDecoder;

struct LlamaGenModel {
  std::string name;
  std::vector<std::string> class_names;
  std::unique_ptr<LlamaGenGpt> gpt;
  std::unique_ptr<VqDecoder> vq;
  // The tokenizer's encoder half, when the bundle ships it (files.vq_encoder):
  // what finishing a picture encodes its top rows with. Null otherwise.
  std::unique_ptr<vq::VqEncoder> encoder;
  // CUDA graphs of gpt's decode step, kept between runs (captured at a run's
  // first decode step of a shape; on the CPU every step runs eagerly). After gpt,
  // so that it goes first.
  std::unique_ptr<DecodeGraphs> decode_graphs;

  // Strictly checks every tensor (missing, unexpected, shape) before building.
  static LlamaGenModel from_weights(const GptConfig& gpt_config, const VqConfig& vq_config,
                                    const io::SafetensorsReader& weights, at::Device device,
                                    at::ScalarType dtype = at::kFloat);
  // `dtype`: the run-time dtype weights and caches are kept in (float32 for
  // conformance and training); each part keeps its numerically sensitive steps in float32.
  static LlamaGenModel load(const io::ModelBundle& bundle, at::Device device, at::ScalarType dtype = at::kFloat);

  int64_t image_size() const { return gpt->config().grid_size() * vq->config().downsample(); }
};

// Bundle manifest sections for a LlamaGen model.
nlohmann::json llamagen_manifest(const std::string& name, const GptConfig& gpt, const VqConfig& vq,
                                 const nlohmann::json& provenance);

// app.py's conversion: x * 127.5 + 128, clamp to [0, 255], truncate -> uint8 [B, H, W, 3].
at::Tensor images_to_uint8_nhwc(const at::Tensor& images);

}  // namespace kvs::llamagen
