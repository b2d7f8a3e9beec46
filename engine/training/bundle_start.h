#pragma once
// Training that starts from a shipped bundle instead of from a run folder.
//
// A trained bundle keeps what generation needs: the generator and the decoder half
// of its VQ image tokenizer (codebook, post_quant_conv, decoder). Training on from
// it needs two more things the run folders had: the encoder half of the tokenizer,
// to turn pictures into the codes the generator was trained on, and the
// generator's weights as a starting point. Exports therefore also write the
// encoder (files.vq_encoder, VQModel names encoder.* and quant_conv.*; the
// loaders of the families never read it), and for a bundle without one
// `kvstudio-train vq --decoder-from BUNDLE` fits a new encoder to the bundle's
// frozen decoder and codebook.
#include <nlohmann/json.hpp>

#include <ATen/core/Tensor.h>

#include <map>
#include <string>

#include "engine/models/blocks/vq_encoder.h"
#include "engine/models/janus/janus_config.h"
#include "engine/training/llamagen/vq_model.h"

namespace kvs::training {

// The bundle's file of the encoder half, when an export wrote one.
using vq::kVqEncoderFile;

struct BundleVq {
  VqModelConfig config;  // the bundle's VQ (encoder levels = the decoder's)
  int image_size = 0;
  std::map<std::string, at::Tensor> decoder;  // quantize.embedding, post_quant_conv.*, decoder.* (float32, CPU)
  std::map<std::string, at::Tensor> encoder;  // encoder.*, quant_conv.* (empty when the bundle has none)
  std::string origin;                         // "bundle NAME (DIR)", for messages and run configs
  std::string fingerprint;                    // identifies the decoder weights (a hash of their values)
};

// The VQ image tokenizer of a llamagen or janus-pro bundle. Throws
// InvalidArgumentError for a family without one, FileError / FormatError /
// ModelMismatchError for a damaged bundle.
BundleVq read_bundle_vq(const std::string& bundle_dir);

// The architecture of a janus-pro bundle (ModelMismatchError for another family).
janus::JanusConfig janus_bundle_architecture(const std::string& bundle_dir);

// The generator tensors of a janus-pro bundle under their training names
// (janus_generation_tensors), float32 on the CPU; `architecture` receives the
// bundle's "architecture.janus" object.
std::map<std::string, at::Tensor> read_janus_generator(const std::string& bundle_dir, nlohmann::json* architecture);

}  // namespace kvs::training
