#pragma once
// A loaded Janus-Pro generation pipeline: the language model, the image-token
// path around it (gen_embed -> gen_aligner in, gen_head out), the VQ-16
// decoder, and the checkpoint's tokenizer. From a bundle, or from any
// safetensors file holding MultiModalityCausalLM's generation tensors under
// their official names (conformance cases).
#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/io/model_bundle.h"
#include "engine/models/blocks/vq_decoder.h"
#include "engine/models/blocks/vq_encoder.h"
#include "engine/models/janus/janus_config.h"
#include "engine/models/janus/janus_language_model.h"

namespace kvs::io {
class SafetensorsReader;
}
namespace kvs::text {
class BpeTokenizer;
}

namespace kvs::janus {

struct JanusModel {
  std::string name;
  JanusConfig config;
  std::unique_ptr<JanusLanguageModel> language;
  std::unique_ptr<vq::VqDecoder> vq;
  // gen_vision_model's encoder half, when the bundle ships it (files.vq_encoder):
  // what finishing a picture encodes its top rows with. Null otherwise.
  std::unique_ptr<vq::VqEncoder> encoder;
  std::shared_ptr<const text::BpeTokenizer> tokenizer;  // null for conformance cases (ids are given)

  // Strictly checks every tensor (missing, unexpected, shape, floating dtype)
  // before building; weights are kept in `dtype`, the decoder in
  // decoder_dtype(dtype).
  static JanusModel from_weights(const JanusConfig& config, const io::SafetensorsReader& weights, at::Device device,
                                 at::ScalarType dtype);
  // The generation parts without the decoder (vq stays null) on `tensors`
  // (official names, no gen_vision_model.*; missing ones throw
  // ModelMismatchError). Contiguous tensors already in `dtype` on `device` are
  // used as they are, not copied: a trainer hands in its parameters and the
  // forward builds an autograd graph through the inference code.
  static JanusModel from_tensors(const JanusConfig& config, const TensorMap& tensors, at::Device device,
                                 at::ScalarType dtype);
  // A bundle: model.json, weights and the tokenizer files in tokenizer/.
  static JanusModel load(const io::ModelBundle& bundle, at::Device device, at::ScalarType dtype);

  // The VQ decoder's dtype for a run in `run_dtype`: bf16 for bf16 (the official
  // decode), float32 otherwise. Images come out float32 either way.
  static at::ScalarType decoder_dtype(at::ScalarType run_dtype);

  // prepare_gen_img_embeds: gen_aligner(gen_embed(ids)), ids [B, T] -> [B, T, hidden].
  at::Tensor image_embeds(const at::Tensor& ids) const;
  // gen_head on hidden states [..., hidden] -> image-token logits [..., image_token_size], float32.
  at::Tensor image_logits(const at::Tensor& hidden) const;

  int64_t image_size() const { return config.image_size; }

 private:
  at::Tensor gen_embed_;
  std::vector<std::pair<at::Tensor, at::Tensor>> aligner_;  // (weight, bias) of each Linear
  at::Tensor head_in_w_, head_in_b_, head_out_w_, head_out_b_;
};

// Bundle manifest for a Janus-Pro model (architecture.janus; the tokenizer files
// live beside it in tokenizer/).
nlohmann::json janus_manifest(const std::string& name, const JanusConfig& config, const nlohmann::json& provenance);

// The folder of a bundle that holds tokenizer.json and its companions.
std::string janus_tokenizer_dir(const io::ModelBundle& bundle);

}  // namespace kvs::janus
