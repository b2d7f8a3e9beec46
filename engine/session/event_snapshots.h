#pragma once
// Torch-side helpers that turn engine state into the torch-free event types of
// generation_events.h; shared by the families' session drivers.
#include <ATen/core/Tensor.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/cache/kv_store.h"
#include "engine/image/rgb_image.h"
#include "engine/session/generation_events.h"
#include "engine/session/generation_request.h"
#include "engine/session/generation_result.h"
#include "engine/session/model_family.h"

namespace kvs {

class CachePolicy;

// One uint8 [H, W, 3] image tensor -> RgbImage.
RgbImage to_rgb_image(const at::Tensor& nhwc_u8_single);
// uint8 [B, H, W, 3] -> one RgbImage per batch row.
std::vector<RgbImage> to_rgb_images(const at::Tensor& nhwc_u8);

// Bitsets of the positions retained for batch row 0, per (layer, KV head), over
// the sequence positions [0, total_positions).
RetainedMasks retained_masks(const KvStore& store, int64_t total_positions);

// Image 0's retained entries per layer, summed over KV heads.
std::vector<int64_t> retained_per_layer(const KvStore& store);

// Every family's unit: the process's resident memory and, on GPU runs
// (cuda_index >= 0), the device's memory.
void fill_unit_memory(UnitDoneEvent& unit, int cuda_index);

// A KV-cache unit's memory and cache snapshot: the store's byte counts (and the
// full cache's once all total_positions are appended), the
// retained entries per layer and (when the request asks) the retained masks over
// [0, total_positions); image 0's evictions since the previous snapshot of this
// store; the active policy's spec and, given the policy, its regions after the
// positions appended so far; fill_unit_memory.
void fill_kv_unit(UnitDoneEvent& unit, const KvStore& store, const GenerationRequest& request, int64_t total_positions,
                  const std::string& policy, int cuda_index, const CachePolicy* active_policy = nullptr);

// Whether a unit's preview is decoded: every request.preview_every_units units,
// skipped while preview decoding has taken more than preview_max_share of the
// run so far (the last unit always gets one when due).
bool preview_due(const GenerationRequest& request, int64_t unit_index, int64_t units_total, double preview_ms,
                 double elapsed_ms);

// The attention map of a unit's queries over the KV cache's positions (image 0),
// averaged over the layers and heads the request asks for (-1: mean). The
// families feed it per layer from their attention hooks.
class CacheAttentionMap {
 public:
  CacheAttentionMap(const GenerationRequest& request, int64_t total_positions);
  // A layer's attention: `mass` [heads, L] (each row: the head's attention mass
  // per cache entry, already averaged over the unit's queries / grouped heads),
  // `positions` [heads, L] the entries' sequence positions (-1: empty). Layer 0
  // (or the asked layer) starts a new unit whose queries begin at `query_position`.
  void add(int64_t layer, int64_t query_position, const at::Tensor& mass, const at::Tensor& positions);
  // The unit's mean map, or nothing when no layer was added since the last take.
  std::optional<AttentionMap> take();

 private:
  int64_t layer_ = -1, head_ = -1, positions_ = 0;
  at::Tensor sum_;
  int64_t count_ = 0, query_ = 0;
};

// The time line of a family's run, from when it starts generating (a
// calibration or a model load before it is not counted): progress events, unit
// events stamped with the time, previews decoded when due (their decoding time
// kept within the request's share), and the result's common fields.
class RunClock {
 public:
  RunClock() : start_(std::chrono::steady_clock::now()) {}
  double elapsed_ms() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
  }
  // `done` of `total` tokens per image, now.
  TokenProgressEvent progress(int64_t done, int64_t total) const;
  // A unit event with its index, the unit count and the time.
  UnitDoneEvent unit(int64_t index, int64_t total) const;
  // Decodes the unit's preview when the request wants one now (preview_due).
  void preview_if_due(UnitDoneEvent& unit, const GenerationRequest& request,
                      const std::function<std::vector<RgbImage>()>& decode);
  // Model, device, grid and tokens/s per image (of `tokens_per_image`) so far.
  GenerationResult result(const std::string& model_name, const RunContext& context, int64_t grid,
                          int64_t tokens_per_image) const;

 private:
  std::chrono::steady_clock::time_point start_;
  double preview_ms_ = 0;  // spent decoding previews so far
};

// At a unit boundary: takes the policy change requested so far (if any), lets
// `install` build and adopt it (it throws kvs::Error for a spec it refuses) and
// reports a PolicyChangedEvent either way; `policy_spec` follows the active spec.
void apply_policy_change(const RunContext& context, int64_t unit_index, std::string& policy_spec,
                         const std::function<void(const std::string&)>& install);

// Token ids [B, N] (any integer dtype, any device) -> one int32 row per image.
std::vector<std::vector<int32_t>> token_rows(const at::Tensor& tokens);

// A KV-cache run's memory at its end, into the result.
void fill_kv_result(GenerationResult& result, const KvMemoryStats& memory);

}  // namespace kvs
