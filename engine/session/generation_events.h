#pragma once
// The one event stream of a generation. The GUI converts these into queued Qt
// signals; the CLI draws a progress bar. Events are emitted on the thread that
// runs the session.
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "engine/cache/cache_region.h"
#include "engine/image/rgb_image.h"
#include "engine/metrics/device_memory.h"

namespace kvs {

struct StartedEvent {
  std::string model_name;
  std::string device;
  int64_t batch = 0;
  int64_t grid_height = 0, grid_width = 0;  // token grid
  int64_t tokens_total = 0;                 // per image
  std::string unit_name = "line";
  int64_t units_total = 0;
  std::string family;  // FamilyDescription::name of the model ("llamagen", "var", "mar")
  // The sequence positions before the image tokens that condition the image
  // (positions [0, condition_tokens) of RetainedMasks and AttentionMap), and for
  // text families each one's readable text (the prompt's tokens, the chat
  // template's tags), so the window can show which words a line attends to.
  // A family that reads its text by cross-attention (Infinity) has no condition
  // positions (0) and labels its text tokens, which UnitDoneEvent::condition_attention weighs.
  int64_t condition_tokens = 0;
  std::vector<std::string> condition_labels;
  // Next-scale families: each scale's token grid, coarse to fine (heights and
  // widths; Infinity's aspect templates make them rectangles).
  std::vector<int64_t> unit_heights, unit_widths;
  // Raster runs that finish a picture: its top units (lines) given, not drawn.
  int64_t given_units = 0;
};

struct TokenProgressEvent {
  int64_t tokens_done = 0, tokens_total = 0;
  double elapsed_ms = 0;
  double tokens_per_second = 0;  // per image (all rows advance together)
};

// Which sequence positions are still cached, per (layer, KV head), for the first
// image of the batch: one bit per position over [0, positions) — the condition
// token(s) first, then the image tokens in raster order.
struct RetainedMasks {
  int64_t n_layer = 0, kv_heads = 0, positions = 0;
  std::vector<uint64_t> bits;  // [layer][head][words], words = ceil(positions / 64)
  int64_t words() const { return (positions + 63) / 64; }
  bool retained(int64_t layer, int64_t head, int64_t position) const {
    const uint64_t w = bits[static_cast<size_t>((layer * kv_heads + head) * words() + position / 64)];
    return (w >> (position % 64)) & 1u;
  }
};

// The attention that generated a line's last token (image 0; the query is the
// token fed at query_position) over the sequence positions [0, positions): per
// layer/head, or averaged (-1) over layers and/or heads. Evicted positions have
// weight 0.
struct AttentionMap {
  int64_t layer = -1, head = -1;  // -1: mean
  int64_t query_position = 0;
  int64_t positions = 0;
  std::vector<float> weights;
};

struct UnitDoneEvent {
  int64_t unit_index = 0, units_total = 0;
  double elapsed_ms = 0;
  int64_t kv_bytes_logical = 0;
  int64_t kv_bytes_allocated = 0;
  int64_t kv_bytes_full_equivalent = 0;  // what the uncompressed cache would hold now
  int64_t kv_bytes_peak = 0;
  // What the uncompressed cache holds once the whole sequence is appended (the
  // scale a chart of this run needs from its first unit on).
  int64_t kv_bytes_full_final = 0;
  std::string policy;                       // active policy spec
  std::vector<int64_t> retained_per_layer;  // image 0: retained entries per layer, summed over KV heads
  // Image 0: the entries per layer the uncompressed cache holds now, summed over
  // KV heads (every layer the same; what retained_per_layer compares with).
  int64_t full_entries_per_layer = 0;
  std::optional<RetainedMasks> retained;  // when the request asks for cache maps
  std::optional<AttentionMap> attention;  // when the request asks for attention maps
  // Families whose condition is read by cross-attention (Infinity's text): image
  // 0's attention share of each StartedEvent::condition_labels entry in this
  // unit, averaged over the layers and heads asked for and the unit's queries
  // (sums to 1); when the request asks for attention maps, else empty. The
  // others show the condition's share through `attention` instead.
  std::vector<float> condition_attention;
  std::optional<std::vector<RgbImage>> preview;  // when previews are requested
  // Masked models (MAR): the token positions (row-major grid index) of image 0
  // predicted in this unit, in generation order; empty for the other families.
  std::vector<int32_t> predicted_positions;
  // Masked models (MAR): per token position (row-major grid index) of image 0,
  // 1 when this step recomputed its features, 0 when it reused them from a
  // feature cache (LazyMAR's token cache: the tokens outside I_compute keep their
  // cached K/V and outputs from the similarity block on). All 1 at steps that
  // compute everything ("full", refresh steps); empty for the other families.
  std::vector<uint8_t> recomputed;
  // Masked models: false when LazyMAR's condition cache stood in for the
  // unconditional CFG branch at this step (only the conditional rows ran).
  bool unconditional_computed = true;
  // Masked models: the matmul/attention FLOPs executed at this step, per image
  // (engine/models/mar/mar_flops.h); 0 for the other families.
  double flops = 0;
  // GPU runs: the device's memory after this unit (caching allocator; the peak
  // is this run's). Absent on CPU runs.
  std::optional<DeviceMemoryStats> device_memory;
  // The resident memory of the process running the generation after this unit,
  // and its peak so far (engine/metrics/process_memory.h); absent where the
  // system does not report it.
  std::optional<int64_t> process_resident_bytes;
  std::optional<int64_t> process_peak_resident_bytes;
  // KV-cache families: image 0's entries evicted during this unit (whatever the
  // policy evicted since the previous unit's snapshot), per layer summed over
  // the KV heads, and their sum over the layers. Empty / 0 without a KV cache.
  std::vector<int64_t> evicted_per_layer;
  int64_t evicted_entries = 0;
  // The active policy's regions of the cache after this unit, as the policy
  // states them (CachePolicy::regions); empty for policies without regions.
  std::vector<CacheRegion> regions;
};

// A policy change requested during a run took effect (or was refused) at a line boundary.
struct PolicyChangedEvent {
  int64_t unit_index = 0;  // the change applies from the unit after this one
  std::string policy;      // the spec now active
  bool accepted = true;
  std::string message;  // why a change was refused
};

struct FinishedEvent {
  double elapsed_ms = 0;
  double flops = 0;  // masked models: matmul/attention FLOPs per image, counted (mar_flops.h); 0 otherwise
};

struct FailedEvent {
  std::string message;
  bool cancelled = false;
};

using GenerationEvent =
    std::variant<StartedEvent, TokenProgressEvent, UnitDoneEvent, PolicyChangedEvent, FinishedEvent, FailedEvent>;

class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void on_event(const GenerationEvent& event) = 0;
};

}  // namespace kvs
