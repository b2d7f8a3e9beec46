#pragma once
// A model bundle summarised from model.json alone, as the model catalog lists it
// (engine/models/model_catalog.h) and each family fills it in
// (ModelFamily::summarize). Torch-free.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/device.h"

namespace kvs {

// model.json "sampling_defaults"; unset where the bundle says nothing.
struct ModelSamplingDefaults {
  std::optional<double> cfg_scale, temperature, top_p;
  std::optional<int64_t> top_k;
  std::optional<int64_t> steps;             // masked models: decoding steps
  std::optional<std::string> cfg_schedule;  // masked models: "linear" | "constant"
};

struct ModelSummary {
  std::string dir;           // bundle folder
  std::string name;          // model.json "name" (folder name when unreadable)
  std::string family;        // "llamagen" | "var" | "mar"
  std::string architecture;  // one line, e.g. "GPT dim 256 x 6 layers, 8 heads; 16x16 tokens; VQ 1024 codes"
  std::string note;          // provenance note ("untrained: ...") when present
  std::string problem;       // non-empty: why the bundle cannot be used
  int64_t n_layer = 0, n_head = 0, kv_heads = 0, head_dim = 0;
  int64_t grid = 0, condition_tokens = 1, num_classes = 0, image_size = 0;
  int64_t gpt_parameters = 0;  // the transformer's (GPT, VAR, or MAR with its diffusion head)
  // Float32 K and V over all layers and KV heads, one sequence. The cache is kept
  // in the run-time dtype, so a bf16/f16 run holds half of this:
  // kv_bytes_per_token_at() gives the figure for a dtype.
  int64_t kv_bytes_per_token = 0;
  int64_t weights_bytes = 0;  // size of the weights file on disk
  // Next-scale models (VAR): the side of each scale's token map, coarse to fine
  // (1, 2, 3, ... grid); the flattened sequence holds the scales in this order.
  // Empty for the other families.
  std::vector<int64_t> scale_sides;
  std::vector<std::string> class_names;  // may be empty
  // Text models: prompts the bundle suggests (model.json "example_prompts"), the
  // first of which the window fills in when the prompt box is empty.
  std::vector<std::string> example_prompts;
  // Models that write several image sizes (Lumina-mGPT): the sizes a prompt may
  // ask for, "WIDTHxHEIGHT" in pixels, the model's own first. Empty: one size.
  std::vector<std::string> image_sizes;
  // Raster models whose bundle ships its VQ encoder (files.vq_encoder): they can
  // finish a picture from its top `grid` rows (GenerationRequest::from_image).
  bool finishes_pictures = false;
  ModelSamplingDefaults sampling_defaults;
  bool usable() const { return problem.empty(); }
};

// KV bytes per token of one sequence at a resolved run-time dtype (f32, bf16 or
// f16; Auto throws): the float32 figure scaled by the element size.
inline int64_t kv_bytes_per_token_at(const ModelSummary& summary, RunDtype dtype) {
  return summary.kv_bytes_per_token / 4 * run_dtype_bytes(dtype);
}

// KV entries of one image's whole sequence (condition entries included): the
// scales' tokens for next-scale models, else grid^2 + condition tokens.
inline int64_t kv_tokens_per_image(const ModelSummary& summary) {
  if (summary.scale_sides.empty()) return summary.grid * summary.grid + summary.condition_tokens;
  int64_t tokens = 0;
  for (int64_t side : summary.scale_sides) tokens += side * side;
  return tokens;
}

}  // namespace kvs
