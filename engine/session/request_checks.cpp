#include "engine/session/request_checks.h"

#include "engine/core/errors.h"

namespace kvs {

void check_conditioning(const GenerationRequest& request, bool text_model, const std::string& model_name) {
  if (text_model && !request.is_text())
    throw InvalidArgumentError("model " + model_name + " is a text-to-image model: give a prompt (--prompt \"...\")");
  if (!text_model && request.is_text())
    throw InvalidArgumentError("model " + model_name +
                               " is class-conditional: give class ids (--class N), not a prompt");
}

void check_class_ids(const GenerationRequest& request, int64_t num_classes, const std::string& model_name) {
  check_conditioning(request, false, model_name);
  for (int64_t c : request.class_ids)
    if (c >= num_classes)
      throw InvalidArgumentError("class " + std::to_string(c) + " does not exist: model " + model_name + " has " +
                                 std::to_string(num_classes) + " classes (0.." + std::to_string(num_classes - 1) + ")");
}

void check_attention_selection(const GenerationRequest& request, int64_t layers, int64_t kv_heads) {
  if (request.attention_layer < -1 || request.attention_layer >= layers)
    throw InvalidArgumentError("attention layer " + std::to_string(request.attention_layer) +
                               " does not exist (model has " + std::to_string(layers) + " layers; -1 = mean)");
  if (request.attention_head < -1 || request.attention_head >= kv_heads)
    throw InvalidArgumentError("attention head " + std::to_string(request.attention_head) +
                               " does not exist (model has " + std::to_string(kv_heads) + " KV heads; -1 = mean)");
}

}  // namespace kvs
