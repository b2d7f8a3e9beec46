#pragma once
// A loaded Lumina-mGPT text-to-image pipeline: the Chameleon language model, the
// Chameleon VQGAN decoder, the checkpoint's tokenizer and the image-token table
// read from it. From a bundle, or from any safetensors file holding the tensors
// under their official names (conformance cases) plus a tokenizer folder.
#include <ATen/core/Tensor.h>

#include <memory>
#include <optional>
#include <string>

#include "engine/io/model_bundle.h"
#include "engine/models/lumina/chameleon_language_model.h"
#include "engine/models/lumina/chameleon_vqgan.h"
#include "engine/models/lumina/image_vocabulary.h"
#include "engine/models/lumina/lumina_config.h"

namespace kvs::io {
class SafetensorsReader;
}
namespace kvs::text {
class BpeTokenizer;
}

namespace kvs::lumina {

struct LuminaModel {
  std::string name;
  LuminaConfig config;
  std::unique_ptr<ChameleonLanguageModel> lm;
  std::unique_ptr<ChameleonVqgan> vqgan;
  std::shared_ptr<const text::BpeTokenizer> tokenizer;
  std::optional<ImageVocabulary> vocabulary;

  // Strictly checks every tensor (missing, unexpected, shape, floating dtype)
  // before building; the language model is kept in `dtype`, the VQGAN in float32
  // (the official decode runs after the bf16 autocast block, in float32).
  static LuminaModel from_weights(const LuminaConfig& config, const io::SafetensorsReader& weights, at::Device device,
                                  at::ScalarType dtype);
  // Loads the tokenizer folder and reads the image-token table from it
  // (ModelMismatchError when it is not a Chameleon vocabulary the model can hold).
  void attach_tokenizer(const std::string& tokenizer_dir);
  // A bundle: model.json, weights and the tokenizer files in tokenizer/.
  static LuminaModel load(const io::ModelBundle& bundle, at::Device device, at::ScalarType dtype);

  // Image-token ids [B, H, W] (the end-of-line column removed) -> images
  // [B, 3, H*up, W*up] float32 (decode_image: codes through the table, then the VQGAN).
  at::Tensor decode_image_tokens(const at::Tensor& ids) const;
};

// Bundle manifest for a Lumina-mGPT model (architecture.chameleon, tokenizer =
// the VQGAN; the tokenizer files live beside it in tokenizer/).
nlohmann::json lumina_manifest(const std::string& name, const LuminaConfig& config, const nlohmann::json& provenance);

// The folder of a bundle that holds tokenizer.json and its companions.
std::string lumina_tokenizer_dir(const io::ModelBundle& bundle);

}  // namespace kvs::lumina
