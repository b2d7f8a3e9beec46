#include "engine/session/event_snapshots.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <algorithm>
#include <numeric>

#include "engine/cache/policies/cache_policy.h"
#include "engine/core/errors.h"
#include "engine/metrics/device_memory.h"
#include "engine/metrics/process_memory.h"

namespace kvs {

RgbImage to_rgb_image(const at::Tensor& nhwc_u8_single) {
  RgbImage img;
  img.height = static_cast<int>(nhwc_u8_single.size(0));
  img.width = static_cast<int>(nhwc_u8_single.size(1));
  at::Tensor c = nhwc_u8_single.contiguous();
  img.pixels.assign(c.data_ptr<uint8_t>(), c.data_ptr<uint8_t>() + c.numel());
  return img;
}

std::vector<RgbImage> to_rgb_images(const at::Tensor& nhwc_u8) {
  std::vector<RgbImage> images;
  for (int64_t i = 0; i < nhwc_u8.size(0); ++i) images.push_back(to_rgb_image(nhwc_u8[i]));
  return images;
}

RetainedMasks retained_masks(const KvStore& store, int64_t total_positions) {
  RetainedMasks masks;
  masks.n_layer = store.n_layer();
  masks.kv_heads = store.kv_heads();
  masks.positions = total_positions;
  masks.bits.assign(static_cast<size_t>(masks.n_layer * masks.kv_heads * masks.words()), 0);
  for (int64_t l = 0; l < masks.n_layer; ++l) {
    at::Tensor pos = store.positions_tensor(l)[0].contiguous();  // [kv_heads, capacity]
    const int64_t capacity = pos.size(1);
    const int64_t* p = pos.data_ptr<int64_t>();
    for (int64_t h = 0; h < masks.kv_heads; ++h)
      for (int64_t j = 0; j < capacity; ++j) {
        const int64_t position = p[h * capacity + j];
        if (position < 0 || position >= total_positions) continue;
        masks.bits[static_cast<size_t>((l * masks.kv_heads + h) * masks.words() + position / 64)] |= uint64_t{1}
                                                                                                     << (position % 64);
      }
  }
  return masks;
}

std::vector<int64_t> retained_per_layer(const KvStore& store) {
  std::vector<int64_t> out;
  for (int64_t l = 0; l < store.n_layer(); ++l) out.push_back(store.lengths_tensor(l)[0].sum().item<int64_t>());
  return out;
}

void fill_unit_memory(UnitDoneEvent& unit, int cuda_index) {
  if (cuda_index >= 0) unit.device_memory = device_memory_stats(cuda_index);
  // 0 means the system did not say (process_memory.h).
  if (const int64_t rss = process_resident_bytes(); rss > 0) unit.process_resident_bytes = rss;
  if (const int64_t peak = process_peak_resident_bytes(); peak > 0) unit.process_peak_resident_bytes = peak;
}

void fill_kv_unit(UnitDoneEvent& unit, const KvStore& store, const GenerationRequest& request, int64_t total_positions,
                  const std::string& policy, int cuda_index, const CachePolicy* active_policy) {
  const KvMemoryStats mem = store.memory();
  unit.kv_bytes_logical = mem.bytes_logical;
  unit.kv_bytes_allocated = mem.bytes_allocated;
  unit.kv_bytes_full_equivalent = mem.bytes_full_equivalent;
  unit.kv_bytes_peak = mem.bytes_peak;
  unit.policy = policy;
  fill_unit_memory(unit, cuda_index);
  unit.retained_per_layer = retained_per_layer(store);
  if (request.emit_retained_masks) unit.retained = retained_masks(store, total_positions);
  if (store.n_layer() > 0) {
    const int64_t appended = store.appended(0);
    unit.full_entries_per_layer = appended * store.kv_heads();
    if (appended > 0)
      unit.kv_bytes_full_final = static_cast<int64_t>(static_cast<double>(mem.bytes_full_equivalent) *
                                                      static_cast<double>(std::max(appended, total_positions)) /
                                                      static_cast<double>(appended));
  }
  unit.evicted_per_layer = store.evicted_first_row_since_last_report();
  unit.evicted_entries = std::accumulate(unit.evicted_per_layer.begin(), unit.evicted_per_layer.end(), int64_t{0});
  // Every layer has appended the same positions by the end of a unit.
  if (active_policy && store.n_layer() > 0) unit.regions = active_policy->regions(store.appended(0));
}

bool preview_due(const GenerationRequest& request, int64_t unit_index, int64_t units_total, double preview_ms,
                 double elapsed_ms) {
  if (request.preview_every_units <= 0 || (unit_index + 1) % request.preview_every_units != 0) return false;
  const bool last_unit = unit_index + 1 == units_total;
  return request.preview_max_share <= 0 || last_unit || preview_ms <= request.preview_max_share * elapsed_ms;
}

CacheAttentionMap::CacheAttentionMap(const GenerationRequest& request, int64_t total_positions)
    : layer_(request.attention_layer), head_(request.attention_head), positions_(total_positions) {}

void CacheAttentionMap::add(int64_t layer, int64_t query_position, const at::Tensor& mass_in,
                            const at::Tensor& positions_in) {
  if (layer_ >= 0 && layer != layer_) return;
  if (layer == 0 || layer_ >= 0) {
    sum_ = at::zeros({positions_}, at::TensorOptions().dtype(at::kFloat));
    count_ = 0;
    query_ = query_position;
  }
  at::Tensor mass = mass_in, pos = positions_in;
  if (head_ >= 0) {
    mass = mass.narrow(0, head_, 1);
    pos = pos.narrow(0, head_, 1);
  }
  const at::Tensor valid = pos >= 0;
  sum_.index_add_(0, at::where(valid, pos, at::zeros_like(pos)).reshape({-1}),
                  at::where(valid, mass, at::zeros_like(mass)).reshape({-1}));
  count_ += mass.size(0);
}

std::optional<AttentionMap> CacheAttentionMap::take() {
  if (count_ == 0) return std::nullopt;
  AttentionMap map;
  map.layer = layer_;
  map.head = head_;
  map.query_position = query_;
  map.positions = positions_;
  const at::Tensor mean = (sum_ / static_cast<double>(count_)).contiguous();
  map.weights.assign(mean.data_ptr<float>(), mean.data_ptr<float>() + positions_);
  count_ = 0;
  return map;
}

TokenProgressEvent RunClock::progress(int64_t done, int64_t total) const {
  const double ms = elapsed_ms();
  return TokenProgressEvent{done, total, ms, ms > 0 ? done * 1000.0 / ms : 0};
}

UnitDoneEvent RunClock::unit(int64_t index, int64_t total) const {
  UnitDoneEvent unit;
  unit.unit_index = index;
  unit.units_total = total;
  unit.elapsed_ms = elapsed_ms();
  return unit;
}

void RunClock::preview_if_due(UnitDoneEvent& unit, const GenerationRequest& request,
                              const std::function<std::vector<RgbImage>()>& decode) {
  if (!preview_due(request, unit.unit_index, unit.units_total, preview_ms_, unit.elapsed_ms)) return;
  const double decode_start = elapsed_ms();
  unit.preview = decode();
  preview_ms_ += elapsed_ms() - decode_start;
}

GenerationResult RunClock::result(const std::string& model_name, const RunContext& context, int64_t grid,
                                  int64_t tokens_per_image) const {
  GenerationResult result;
  result.model_name = model_name;
  result.device = context.device_description;
  result.grid_height = grid;
  result.grid_width = grid;
  const double ms = elapsed_ms();
  result.tokens_per_second = ms > 0 ? tokens_per_image * 1000.0 / ms : 0;
  return result;
}

void apply_policy_change(const RunContext& context, int64_t unit_index, std::string& policy_spec,
                         const std::function<void(const std::string&)>& install) {
  if (!context.take_policy_change) return;
  const std::optional<std::string> change = context.take_policy_change();
  if (!change) return;
  try {
    install(*change);
    policy_spec = *change;
    context.emit(PolicyChangedEvent{unit_index, policy_spec, true, ""});
  } catch (const CancelledError&) {
    throw;  // cancelled while the new policy calibrated: the run stops, the change is not refused
  } catch (const Error& e) {
    context.emit(PolicyChangedEvent{unit_index, policy_spec, false, e.what()});
  }
}

std::vector<std::vector<int32_t>> token_rows(const at::Tensor& tokens) {
  const at::Tensor t = tokens.to(at::kCPU, at::kInt).contiguous();
  std::vector<std::vector<int32_t>> rows;
  const int64_t n = t.size(1);
  for (int64_t i = 0; i < t.size(0); ++i) {
    const int32_t* p = t[i].data_ptr<int32_t>();
    rows.emplace_back(p, p + n);
  }
  return rows;
}

void fill_kv_result(GenerationResult& result, const KvMemoryStats& memory) {
  result.kv_bytes_peak = memory.bytes_peak;
  result.kv_bytes_logical_final = memory.bytes_logical;
  result.kv_bytes_full = memory.bytes_full_equivalent;
}

}  // namespace kvs
