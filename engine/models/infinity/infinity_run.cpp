#include "engine/models/infinity/infinity_run.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include "engine/core/errors.h"
#include "engine/generation/scale/scale_stream.h"
#include "engine/models/infinity/infinity_calibration.h"
#include "engine/models/infinity/infinity_model.h"
#include "engine/session/event_snapshots.h"
#include "engine/text/sentencepiece_tokenizer.h"

namespace kvs::infinity {
namespace {

std::vector<RgbImage> decode_images(const InfinityModel& model, const at::Tensor& summed_codes) {
  // gen_one_img's image: (clamp(x) + 1) / 2 * 255 truncated (RGB here; the official return flips to BGR for cv2).
  const at::Tensor x = model.decode(summed_codes).to(at::kCPU);
  return to_rgb_images(((x + 1) / 2).permute({0, 2, 3, 1}).mul(255).to(at::kByte).contiguous());
}

// One text's rows for each of `images` images (every image of a request has the same prompt).
TextRows repeated(const TextRows& one, int64_t images) {
  TextRows out;
  out.rows = one.rows.repeat({images, 1});
  out.lengths.assign(static_cast<size_t>(images), one.lengths.front());
  return out;
}

InfinityParams params_of(const GenerationRequest& request) {
  InfinityParams p;
  p.cfg = {request.cfg_scale};
  // tau divides the logits as a temperature does.
  p.tau = {request.sampling.temperature};
  p.sampling.top_k = request.sampling.top_k;
  p.sampling.top_p = request.sampling.top_p >= 1.0 ? 0.0 : request.sampling.top_p;  // Infinity's 0 = off
  p.seed = request.seed;
  return p;
}

}  // namespace

GenerationResult run_infinity_generation(const InfinityModel& model, InfinityCalibrations& calibrations,
                                         const GenerationRequest& request, const RunContext& ctx) {
  if (!request.class_ids.empty() || request.prompt.empty())
    throw InvalidArgumentError("model " + model.name + " is text-to-image: give it a prompt, not class ids");
  if (request.cfg_interval != -1)
    throw InvalidArgumentError("cfg interval applies to raster models only (Infinity guides every scale)");
  if (!(request.sampling.temperature > 0.0))
    throw InvalidArgumentError("Infinity's tau (the temperature) must be > 0: it divides the logits");
  const int64_t batch = request.images;
  if (batch <= 0) throw InvalidArgumentError("images must be at least 1");
  const InfinityImageSize size = parse_infinity_image_size(model.config, request.image_size);
  const InfinitySchedule schedule = schedule_of(size);
  const InfinityParams params = params_of(request);
  params.validate(static_cast<int64_t>(schedule.grids.size()));
  const bool cfg_rows = params.uses_cfg(static_cast<int64_t>(schedule.grids.size()));

  // encode_prompt once, its rows for every image; the negative prompt only when one is given (else cfg_uncond).
  const TextRows prompts = repeated(model.encode_texts({request.prompt}), batch);
  const TextRows negatives = request.negative_prompt.empty()
                                 ? TextRows{}
                                 : repeated(model.encode_texts({request.negative_prompt}), batch);

  scale::ScaleRun run;
  run.model_name = model.name;
  run.family = "infinity";
  run.shape = scale_shape(schedule, batch, cfg_rows);
  run.images = batch;
  run.grid_height = schedule.grids.back()[0];
  run.grid_width = schedule.grids.back()[1];
  run.scale_grids = schedule.grids;
  // The prompt's T5 pieces, for the window's strip of what each scale's cross-attention reads.
  for (const int64_t id : model.tokenizer->encode_t5(request.prompt))
    run.condition_labels.push_back(id == text::SentencePieceTokenizer::kEndOfText ? "</s>"
                                                                                  : model.tokenizer->piece(id));
  run.policy_context = scale_policy_context(model.config.transformer, schedule, batch, cfg_rows, request.seed);
  // The calibrated policies ask for their calibration while they are built (also on a policy change mid-run).
  run.policy_context.calibrations = infinity_calibration_provider(model, calibrations, ctx.bundle_dir, size,
                                                                  params.cfg_at(0), ctx.cancelled);
  run.decode = [&](const at::Tensor& summed_codes) { return decode_images(model, summed_codes); };
  const auto network = text_conditioned_infinity(*model.transformer, prompts, negatives, schedule, params);
  return scale::stream_scales(*network, run, request, ctx);
}

}  // namespace kvs::infinity
