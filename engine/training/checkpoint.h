#pragma once
// Resumable training checkpoints in a run folder (e.g. WORK/vq):
//   checkpoint.json                  {"step", "weights", "optimizer_steps", ...caller's fields}
//   checkpoint-<step>.safetensors    "model.<name>" weights, "optim.<name>.exp_avg|exp_avg_sq"
// The tensors are written first and the JSON (atomically) last, so the JSON always
// names a complete file; older weight files are removed after. Randomness in the
// trainers is derived from (seed, step), so step + seed is all the RNG state there is.
#include <nlohmann/json.hpp>

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "engine/training/adamw.h"
#include "engine/training/parameter_set.h"

namespace kvs::training {

// `meta` is stored as is, plus "step", "weights" and "optimizer_steps".
void save_checkpoint(const std::string& dir, const ParameterSet& params, const AdamW* optimizer, int64_t step,
                     nlohmann::json meta);

// DIR/checkpoint.json, or nullopt when the folder has no checkpoint.
std::optional<nlohmann::json> read_checkpoint_manifest(const std::string& dir);

// Restores weights (and optimizer state when `optimizer` is given) in place;
// returns the manifest. Throws FileError when there is no checkpoint.
nlohmann::json load_checkpoint(const std::string& dir, ParameterSet& params, AdamW* optimizer);

// The checkpoint's weights by name (CPU, float32), for export and evaluation.
std::map<std::string, at::Tensor> load_checkpoint_weights(const std::string& dir, nlohmann::json* manifest = nullptr);

}  // namespace kvs::training
