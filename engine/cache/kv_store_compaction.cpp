// KvStore::retain on a GPU through the compaction kernel (kernels/segment_scoring.h).
//
// Without it a GPU eviction builds two index lists on the host (every surviving
// entry's source and destination slot) and uploads them for a gather and a
// scatter: at a line end of LlamaGen-XL at batch 128 that is 256 rows x 20 heads
// of lists per layer. Here the keep flags (one byte per slot) and one int32 array
// of segment starts and lengths go up once, one kernel launch per layer moves the
// survivors into new buffers, and the lengths it writes become the attention
// kernels' device lengths, so the next decode step uploads nothing. The
// positions (host metadata the policies read) are still compacted on the host;
// retain_layers brings every layer's mask to the host with one wait.
#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "engine/cache/kernel_element_type.h"
#include "engine/cache/kv_store.h"
#include "engine/core/errors.h"
#include "engine/core/host_upload.h"
#include "kernels/kernel_error.h"
#if KVSTUDIO_CUDA_KERNELS
#include "kernels/cuda/segment_scoring.h"
#endif

namespace kvs {
namespace {

// KVSTUDIO_CUDA_COMPACTION=off keeps GPU evictions on the index-list gather and
// scatter (to compare the two in one build).
[[maybe_unused]] bool compaction_kernel_allowed() {
  static const bool allowed = [] {
    const char* v = std::getenv("KVSTUDIO_CUDA_COMPACTION");
    return v == nullptr || std::strcmp(v, "off") != 0;
  }();
  return allowed;
}

}  // namespace

bool KvStore::compact_on_device(Layer& layer, const at::Tensor& keep, const std::vector<std::vector<int64_t>>& kept,
                                const at::Tensor& new_capacities) {
#if KVSTUDIO_CUDA_KERNELS
  const at::ScalarType dtype = layer.k.scalar_type();
  if (!layer.k.is_cuda() || !cuda_kernels_usable() || !compaction_kernel_allowed()) return false;
  if (dtype != at::kFloat && dtype != at::kBFloat16 && dtype != at::kHalf) return false;
  const int64_t segments = rows_ * kv_heads_;
  const int64_t stride = keep.size(2);
  const at::Device device = layer.k.device();
  const at::TensorOptions cpu_long = at::TensorOptions().dtype(at::kLong);

  // Host metadata of the new layout: offsets, lengths and positions.
  const at::Tensor capacities = new_capacities.contiguous();
  const at::Tensor flat_capacities = capacities.reshape({-1});
  const at::Tensor new_offsets = (at::cumsum(flat_capacities, 0) - flat_capacities).view(capacities.sizes());
  const int64_t total = flat_capacities.sum().item<int64_t>();
  const int64_t position_stride = capacities.numel() ? capacities.max().item<int64_t>() : 0;
  at::Tensor positions = at::full({rows_, kv_heads_, position_stride}, -1, cpu_long);
  at::Tensor lengths = at::zeros({rows_, kv_heads_}, cpu_long);
  const int64_t old_stride = layer.positions.size(2);
  const int64_t* old_pos = layer.positions.data_ptr<int64_t>();
  const int64_t* cap = capacities.data_ptr<int64_t>();
  int64_t* pos = positions.data_ptr<int64_t>();
  int64_t* len = lengths.data_ptr<int64_t>();
  for (int64_t s = 0; s < segments; ++s) {
    const auto& slots = kept[static_cast<size_t>(s)];
    const int64_t n = static_cast<int64_t>(slots.size());
    if (n > cap[s]) throw Error("KvStore::retain: a segment keeps more entries than its capacity");
    len[s] = n;
    for (int64_t j = 0; j < n; ++j)
      pos[s * position_stride + j] = old_pos[s * old_stride + slots[static_cast<size_t>(j)]];
  }

  // One upload of the descriptors: source starts, destination starts (with the
  // total as the last entry, what the attention kernels take), old lengths.
  const at::Tensor host_descriptors = at::cat({layer.offsets.reshape({-1}), new_offsets.reshape({-1}),
                                               at::full({1}, total, cpu_long), layer.lengths.reshape({-1})})
                                          .to(at::kInt);
  const at::Tensor descriptors = upload_without_wait(host_descriptors, device);
  const at::Tensor flags = upload_without_wait(keep.to(at::kByte), device).contiguous();
  const at::Tensor src_starts = descriptors.narrow(0, 0, segments);
  const at::Tensor dst_starts = descriptors.narrow(0, segments, segments + 1);
  const at::Tensor old_lengths = descriptors.narrow(0, 2 * segments + 1, segments);
  at::Tensor new_lengths = at::empty({segments}, at::TensorOptions().dtype(at::kInt).device(device));
  at::Tensor k = at::empty({total, head_dim_}, options_);
  at::Tensor v = at::empty({total, head_dim_}, options_);
  // Both generations of buffers exist until the old ones are released.
  update_peak(static_cast<int64_t>(k.nbytes() + v.nbytes()));

  kernels::CompactionArgs args;
  args.src_keys = layer.k.data_ptr();
  args.src_values = layer.v.data_ptr();
  args.dst_keys = k.data_ptr();
  args.dst_values = v.data_ptr();
  args.element_type = kernel_element_type(dtype);
  args.head_dim = head_dim_;
  args.segments = segments;
  args.stride = stride;
  args.src_starts = src_starts.data_ptr<int32_t>();
  args.dst_starts = dst_starts.data_ptr<int32_t>();
  args.src_slots = layer.k.size(0);
  args.dst_slots = total;
  args.lengths = old_lengths.data_ptr<int32_t>();
  args.keep = flags.data_ptr<uint8_t>();
  args.new_lengths = new_lengths.data_ptr<int32_t>();
  try {
    // The legacy default stream, as LibTorch's own work here: the uploads above
    // come before the kernel, and the old buffers, released below, are reused
    // by LibTorch's allocator only for work queued after it.
    kernels::compact_segments_cuda(args, nullptr);
  } catch (const kernels::KernelArgumentError& e) {
    throw InvalidArgumentError(e.what());
  } catch (const kernels::CudaKernelError& e) {
    throw Error(std::string("KvStore::retain on the GPU: ") + e.what());
  }
  layer.k = k;
  layer.v = v;
  layer.capacities = capacities;
  layer.offsets = new_offsets.contiguous();
  layer.positions = positions;
  layer.lengths = lengths;
  layer.regular = capacities.numel() == 0 || capacities.min().item<int64_t>() == capacities.max().item<int64_t>();
  layer.device_starts = dst_starts;
  layer.device_lengths = new_lengths;
  return true;
#else
  (void)layer;
  (void)keep;
  (void)kept;
  (void)new_capacities;
  return false;
#endif
}

void KvStore::retain_layers(const std::vector<at::Tensor>& keeps) {
  if (static_cast<int64_t>(keeps.size()) != n_layer())
    throw Error("KvStore::retain_layers: " + std::to_string(keeps.size()) + " masks for " + std::to_string(n_layer()) +
                " layers");
  std::vector<at::Tensor> host(keeps.size());
#if KVSTUDIO_CUDA_KERNELS
  // Every GPU mask is queued for a copy into page-locked host memory, then one
  // wait covers them all (the copies and the work before them share LibTorch's
  // stream, the legacy default one, which is what the wait is on).
  bool queued = false;
  for (size_t l = 0; l < keeps.size(); ++l) {
    if (!keeps[l].defined() || !keeps[l].is_cuda() || !cuda_kernels_usable()) continue;
    host[l] = at::empty(keeps[l].sizes(), at::TensorOptions().dtype(at::kBool).pinned_memory(true));
    host[l].copy_(keeps[l].to(at::kBool), /*non_blocking=*/true);
    queued = true;
  }
  if (queued) {
    try {
      kernels::cuda_scoring_synchronize(nullptr);
    } catch (const kernels::CudaKernelError& e) {
      throw Error(std::string("KvStore::retain on the GPU: ") + e.what());
    }
  }
#endif
  for (size_t l = 0; l < keeps.size(); ++l) {
    if (!keeps[l].defined()) continue;
    const int64_t layer = static_cast<int64_t>(l);
    retain_with(layer, host[l].defined() ? host[l] : keeps[l].to(at::kCPU, at::kBool).contiguous(), keeps[l]);
  }
}

}  // namespace kvs
