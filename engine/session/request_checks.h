#pragma once
// Checks of a request against the loaded model that every family makes the same
// way, with the same messages. Torch-free.
#include <cstdint>
#include <string>

#include "engine/session/generation_request.h"

namespace kvs {

// The request's conditioning is the model's: class ids for a class-conditional
// model, a prompt for a text model (InvalidArgumentError saying which to give).
void check_conditioning(const GenerationRequest& request, bool text_model, const std::string& model_name);

// Every class id names one of the model's classes (InvalidArgumentError naming
// the class and the model's range).
void check_class_ids(const GenerationRequest& request, int64_t num_classes, const std::string& model_name);

// The attention layer / KV head asked for exists (-1 = mean).
void check_attention_selection(const GenerationRequest& request, int64_t layers, int64_t kv_heads);

}  // namespace kvs
