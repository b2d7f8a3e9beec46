// KvStore::key_scores and attend()'s key mass on a GPU: the scoring kernels
// (kernels/segment_scoring.h) fed with the store's own segment descriptors, so
// that a policy scores the packed entries in place instead of building a padded
// key copy and a probability tensor.
#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/cache/kernel_element_type.h"
#include "engine/cache/kv_store.h"
#include "engine/core/errors.h"
#include "engine/core/host_upload.h"
#include "kernels/cpu/segment_scoring.h"
#include "kernels/kernel_error.h"
#if KVSTUDIO_CUDA_KERNELS
#include "kernels/cuda/segment_scoring.h"
#endif

namespace kvs {

kernels::ScoreElementType kernel_element_type(at::ScalarType dtype) {
  switch (dtype) {
    case at::kFloat: return kernels::ScoreElementType::f32;
    case at::kBFloat16: return kernels::ScoreElementType::bf16;
    case at::kHalf: return kernels::ScoreElementType::f16;
    default:
      throw InvalidArgumentError(std::string("key scores: a cache of ") + c10::toString(dtype) +
                                 " has no scoring kernel (float32, bf16 and f16 have)");
  }
}

bool KvStore::cuda_kernels_usable() {
#if KVSTUDIO_CUDA_KERNELS
  static const bool usable = kernels::cuda_scoring_available();
  return usable;
#else
  return false;
#endif
}

at::Tensor KvStore::key_mass_on_device(const Layer& layer, const at::Tensor& queries,
                                       const std::vector<int64_t>& query_positions, bool causal) const {
  if (!layer.k.is_cuda() || !cuda_kernels_usable()) return at::Tensor();
  // key_scores over every row, summed, left on the device: the key mass. Only
  // a causal block over itself needs the positions; a decode step's query is
  // later than every entry.
  const int64_t index = &layer - layers_.data();
  return key_scores(index, queries, at::Tensor(), kernels::KeyScoreReduction::Sum,
                    1.0 / std::sqrt(static_cast<double>(head_dim_)), rows_, max_length_of(layer),
                    causal ? query_positions : std::vector<int64_t>(), /*on_store_device=*/true);
}

bool KvStore::key_scores_in_place() const { return !options_.device().is_cuda() || cuda_kernels_usable(); }

at::Tensor KvStore::key_scores(int64_t layer_index, const at::Tensor& queries, const at::Tensor& candidates,
                               kernels::KeyScoreReduction reduction, double scale, int64_t rows_scored, int64_t stride,
                               const std::vector<int64_t>& query_positions, bool on_store_device) const {
  const Layer& layer = layers_.at(layer_index);
  if (rows_scored < 0 || rows_scored > rows_)
    throw InvalidArgumentError("key scores: " + std::to_string(rows_scored) + " rows asked of a store of " +
                               std::to_string(rows_));
  if (stride < max_length_of(layer))
    throw InvalidArgumentError("key scores: stride " + std::to_string(stride) + " is shorter than layer " +
                               std::to_string(layer_index) + "'s longest segment (" +
                               std::to_string(max_length_of(layer)) + " entries)");
  if (queries.dim() != 4 || queries.size(0) < rows_scored || queries.size(3) != head_dim_)
    throw InvalidArgumentError("key scores: queries must be [>= " + std::to_string(rows_scored) + ", n_head, T, " +
                               std::to_string(head_dim_) + "]");
  if (candidates.defined() && (candidates.dim() != 3 || candidates.size(0) < rows_scored ||
                               candidates.size(1) != kv_heads_ || candidates.size(2) < stride))
    throw InvalidArgumentError("key scores: candidates must be bool [>= " + std::to_string(rows_scored) + ", " +
                               std::to_string(kv_heads_) + ", >= " + std::to_string(stride) + "]");
  const bool causal = !query_positions.empty();
  if (causal && static_cast<int64_t>(query_positions.size()) != queries.size(2))
    throw InvalidArgumentError("key scores: " + std::to_string(query_positions.size()) + " query positions for " +
                               std::to_string(queries.size(2)) + " queries");
  const int64_t segments = rows_scored * kv_heads_;
  const bool on_gpu = layer.k.is_cuda() && cuda_kernels_usable();
  // The CPU twin reads host memory: a GPU store without the CUDA kernels is copied.
  const at::Device device = on_gpu ? layer.k.device() : at::Device(at::kCPU);
  const at::Tensor keys_buffer = layer.k.to(device).contiguous();

  const at::Tensor q = queries.narrow(0, 0, rows_scored).to(device, at::kFloat).contiguous();
  at::Tensor flags;
  if (candidates.defined())
    flags = upload_without_wait(candidates.narrow(0, 0, rows_scored).narrow(2, 0, stride).to(at::kByte), device)
                .contiguous();
  at::Tensor scores = at::empty({rows_scored, kv_heads_, stride}, at::TensorOptions().dtype(at::kFloat).device(device));
  // Causal scores read every entry's position in the kernels' [segments, stride] layout.
  at::Tensor positions, query_pos;
  if (causal) {
    const at::TensorOptions longs = at::TensorOptions().dtype(at::kLong);
    positions = at::full({rows_scored, kv_heads_, stride}, -1, longs);
    const int64_t held = std::min(stride, layer.positions.size(2));
    positions.narrow(2, 0, held).copy_(layer.positions.narrow(0, 0, rows_scored).narrow(2, 0, held));
    positions = upload_without_wait(positions, device);
    query_pos = upload_without_wait(at::tensor(query_positions, longs), device);
  }

  kernels::SegmentKeys keys;
  keys.keys = keys_buffer.data_ptr();
  keys.element_type = kernel_element_type(keys_buffer.scalar_type());
  keys.rows = rows_scored;
  keys.kv_heads = kv_heads_;
  keys.head_dim = head_dim_;
  keys.stride = stride;
  keys.total_slots = keys_buffer.size(0);
  keys.positions = causal ? positions.data_ptr<int64_t>() : nullptr;
  kernels::KeyScoreArgs args;
  args.queries = q.data_ptr<float>();
  args.n_head = q.size(1);
  args.T = q.size(2);
  args.causal = causal;
  args.query_positions = causal ? query_pos.data_ptr<int64_t>() : nullptr;
  args.candidates = flags.defined() ? flags.data_ptr<uint8_t>() : nullptr;
  args.scale = static_cast<float>(scale);
  args.reduction = reduction;
  args.scores = scores.data_ptr<float>();
  try {
#if KVSTUDIO_CUDA_KERNELS
    if (on_gpu) {
      // The store keeps int32 starts and lengths on the device (uploaded once
      // after a change); the first `segments` of them are the scored rows'.
      const Layer& l = with_device_segments(layer);
      keys.starts = l.device_starts.data_ptr<int32_t>();
      keys.lengths = l.device_lengths.data_ptr<int32_t>();
      // LibTorch queues on the legacy default stream unless told otherwise, and so
      // do these kernels (nullptr): the uploads above are ordered before them.
      kernels::attention_key_scores_cuda(keys, args, nullptr);
      // On the device the scores stay queued behind the kernel: whatever reads
      // them next runs on the same stream.
      if (on_store_device) return scores;
      kernels::cuda_scoring_synchronize(nullptr);
      return scores.to(at::kCPU);
    }
#endif
    const at::Tensor starts = layer.offsets.reshape({-1}).narrow(0, 0, segments).to(at::kInt).contiguous();
    const at::Tensor lengths = layer.lengths.reshape({-1}).narrow(0, 0, segments).to(at::kInt).contiguous();
    keys.starts = starts.data_ptr<int32_t>();
    keys.lengths = lengths.data_ptr<int32_t>();
    kernels::attention_key_scores_cpu(keys, args);
  } catch (const kernels::KernelArgumentError& e) {
    // kernels/ sits below the engine and cannot throw its typed errors.
    throw InvalidArgumentError(e.what());
  }
  return scores;
}

}  // namespace kvs
