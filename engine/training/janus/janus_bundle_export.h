#pragma once
// `kvstudio-train export --family janus-pro`: WORK/vq + WORK/text-tokenizer +
// WORK/janus -> a bundle in the format of a converted official Janus-Pro
// checkpoint (MultiModalityCausalLM's generation tensors under their official
// names, gen_vision_model.* the VQ decoder, the tokenizer folder beside it), with
// the world's class names and the evaluation classifier for `evaluate` and `bench`.
#include <nlohmann/json.hpp>

#include "engine/training/bundle_files.h"

namespace kvs::training {

nlohmann::json export_janus_bundle(const BundleExportOptions& options);

}  // namespace kvs::training
