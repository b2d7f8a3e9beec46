#include "engine/session/generation_request.h"

#include <nlohmann/json.hpp>

#include "engine/cache/policies/policy_registry.h"
#include "engine/core/cuda_graphs.h"
#include "engine/core/device.h"
#include "engine/core/errors.h"

namespace kvs {

void GenerationRequest::validate() const {
  if (is_text()) {
    if (!class_ids.empty()) throw InvalidArgumentError("a request takes class ids or a prompt, not both");
    if (images < 1 || images > 256)
      throw InvalidArgumentError("images must be in 1..256 (got " + std::to_string(images) + ")");
  } else {
    if (class_ids.empty()) throw InvalidArgumentError("no class given (use --class <id>, or --prompt for text models)");
    if (!negative_prompt.empty()) throw InvalidArgumentError("a negative prompt needs a prompt");
    if (!image_size.empty()) throw InvalidArgumentError("an image size needs a prompt (text-to-image models)");
  }
  for (int64_t c : class_ids)
    if (c < 0) throw InvalidArgumentError("class id " + std::to_string(c) + " is negative");
  if (class_ids.size() > 256)
    throw InvalidArgumentError("batch of " + std::to_string(class_ids.size()) + " is larger than 256");
  if (keep_rows < 0) throw InvalidArgumentError("keep rows must be >= 0 (got " + std::to_string(keep_rows) + ")");
  if (finishes_picture() && keep_rows == 0)
    throw InvalidArgumentError("finishing a picture needs the rows to keep (--keep-rows K, at least 1)");
  if (!finishes_picture() && keep_rows > 0)
    throw InvalidArgumentError("rows to keep need the picture they come from (--from IMAGE)");
  parse_run_dtype(dtype);
  parse_cuda_graphs(cuda_graphs);
  if (!(cfg_scale >= 0)) throw InvalidArgumentError("cfg scale must be >= 0");
  if (cfg_interval < -1) throw InvalidArgumentError("cfg interval must be >= -1 (-1 = always)");
  if (steps < 0) throw InvalidArgumentError("steps must be >= 0 (0 = the model's default)");
  if (!cfg_schedule.empty() && cfg_schedule != "linear" && cfg_schedule != "constant")
    throw InvalidArgumentError("unknown cfg schedule '" + cfg_schedule + "' (expected linear or constant)");
  if (threads < 0) throw InvalidArgumentError("threads must be >= 0 (0 = all cores)");
  // Name and parameter names are checked here; the budget needs the model's grid
  // and is checked when the session builds the policy.
  const PolicyInfo& info = find_policy(policy.name);
  PolicyParams(policy.params, info.params, info.name);
  sampling.validate();
}

nlohmann::json to_json(const GenerationRequest& r) {
  nlohmann::json j = {{"model", r.model_path},
                      {"class_ids", r.class_ids},
                      {"seed", r.seed},
                      {"cfg_scale", r.cfg_scale},
                      {"cfg_interval", r.cfg_interval},
                      {"steps", r.steps},
                      {"cfg_schedule", r.cfg_schedule},
                      {"temperature", r.sampling.temperature},
                      {"top_k", r.sampling.top_k},
                      {"top_p", r.sampling.top_p},
                      {"sample", r.sampling.sample},
                      {"device", r.device},
                      {"dtype", r.dtype},
                      {"policy", r.policy.text()}};
  if (r.is_text()) {
    j["prompt"] = r.prompt;
    j["negative_prompt"] = r.negative_prompt;
    j["images"] = r.images;
    if (!r.image_size.empty()) j["image_size"] = r.image_size;
  }
  if (r.finishes_picture()) {
    j["from_image"] = r.from_image;
    j["keep_rows"] = r.keep_rows;
  }
  return j;
}

}  // namespace kvs
