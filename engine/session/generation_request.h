#pragma once
// What a person asks for. Plain C++ (no torch, no Qt): the GUI and the CLI both
// fill one of these and hand it to GenerationSession::run.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "engine/cache/policies/policy_spec.h"
#include "engine/sampling/sampling_params.h"

namespace kvs {

struct GenerationRequest {
  std::string model_path;          // bundle folder
  std::vector<int64_t> class_ids;  // class-conditional families: one per image in the batch
  // Text families (Janus-Pro): the prompt, the images it makes (the official
  // `parallel_size`) and an optional negative prompt, which replaces the
  // unconditional CFG row (empty: the official row, the prompt with its text
  // replaced by pad tokens). A request gives class ids or a prompt, not both.
  std::string prompt;
  std::string negative_prompt;
  int64_t images = 1;
  // Families that write images of several sizes (Lumina-mGPT): "WIDTHxHEIGHT" in
  // pixels, as the prompt states it ("" = the model's own size). The others
  // refuse a size.
  std::string image_size;
  // Finishing a picture (raster families with a VQ encoder): the PNG whose top
  // `keep_rows` token rows are given (encoded by the model's tokenizer, the
  // picture scaled to cover the image and its middle kept); the model draws the
  // rest. Empty / 0: nothing given.
  std::string from_image;
  int64_t keep_rows = 0;
  uint64_t seed = 0;
  double cfg_scale = 4.0;     // > 1 enables classifier-free guidance
  int64_t cfg_interval = -1;  // -1: CFG on every step
  int64_t steps = 0;          // masked models (MAR): decoding steps; 0 = the model's default (64)
  std::string cfg_schedule;   // masked models: "linear" | "constant"; "" = linear
  SamplingParams sampling;
  std::string device = "auto";       // auto | cpu | cuda | cuda:N
  std::string dtype = "auto";        // weights and KV cache: auto | f32 | bf16 | f16 (auto: bf16 on CUDA, f32 on CPU)
  int threads = 0;                   // 0: all hardware threads
  std::string cuda_graphs = "on";    // on | off: CUDA graphs for the decode step on a GPU (raster LlamaGen
                                     // models; engine/core/cuda_graphs.h); the CPU ignores it
  PolicySpec policy;                 // the KV-cache policy (parsed where its text came in; "full" by default)
  int preview_every_units = 0;       // decode a preview every N lines (0: off)
  double preview_max_share = 0;      // > 0: skip a due preview while preview decoding has
                                     // taken more than this share of the elapsed time, so
                                     // previews never dominate generation (the last line's
                                     // preview is always decoded)
  bool emit_retained_masks = false;  // per-line retained-position bitsets (for the UI overlays)
  bool emit_attention_map = false;   // per-line attention map of the line's last token
  int64_t attention_layer = -1;      // -1: mean over layers
  int64_t attention_head = -1;       // KV head, -1: mean over heads

  bool is_text() const { return !prompt.empty(); }
  bool finishes_picture() const { return !from_image.empty(); }
  // Images in the batch: the class ids, or `images` for a prompt.
  int64_t batch() const { return is_text() ? images : static_cast<int64_t>(class_ids.size()); }

  // Throws InvalidArgumentError with a message naming the field.
  void validate() const;
};

nlohmann::json to_json(const GenerationRequest& request);

}  // namespace kvs
