#pragma once
// What a person asks for. Plain C++ (no torch, no Qt): the GUI and the CLI both
// fill one of these and hand it to GenerationSession::run.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "engine/sampling/sampling_params.h"

namespace kvs {

struct GenerationRequest {
  std::string model_path;          // bundle folder
  std::vector<int64_t> class_ids;  // one per image in the batch
  uint64_t seed = 0;
  double cfg_scale = 4.0;     // > 1 enables classifier-free guidance
  int64_t cfg_interval = -1;  // -1: CFG on every step
  int64_t steps = 0;          // masked models (MAR): decoding steps; 0 = the model's default (64)
  std::string cfg_schedule;   // masked models: "linear" | "constant"; "" = linear
  SamplingParams sampling;
  std::string device = "auto";       // auto | cpu | cuda
  int threads = 0;                   // 0: all hardware threads
  std::string policy = "full";       // KV-cache policy spec, e.g. "linear:rho=1/6" (see policy_registry.h)
  int preview_every_units = 0;       // decode a preview every N lines (0: off)
  double preview_max_share = 0;      // > 0: skip a due preview while preview decoding has
                                     // taken more than this share of the elapsed time, so
                                     // previews never dominate generation (the last line's
                                     // preview is always decoded)
  bool emit_retained_masks = false;  // per-line retained-position bitsets (for the UI overlays)
  bool emit_attention_map = false;   // per-line attention map of the line's last token
  int64_t attention_layer = -1;      // -1: mean over layers
  int64_t attention_head = -1;       // KV head, -1: mean over heads

  // Throws InvalidArgumentError with a message naming the field.
  void validate() const;
};

nlohmann::json to_json(const GenerationRequest& request);

}  // namespace kvs
