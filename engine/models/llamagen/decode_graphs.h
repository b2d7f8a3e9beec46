#pragma once
// CUDA graphs of LlamaGen's steady decode step (docs/design.md#cuda-graphs-for-the-decode-step).
//
// At batch 1 a decode step on a GPU is bound by its kernel launches (about 80
// LibTorch operations per layer), not by the GPU. Everything of a step whose
// shapes are fixed by the batch is captured once and replayed: the token
// embedding and layer 0's norm, QKV projection and RoPE; then, for each layer l,
// layer l's output projection, residual, norm, MLP and residual together with
// layer l+1's norm, QKV projection and RoPE; then the last layer's output and
// the head. Between two graphs the attention runs eagerly: the observers see
// the queries, the store appends K and V and attends what it retains, so every
// policy's eviction, its scores and the store's ragged lengths stay exactly as
// in an eager step, and the graphs run the same kernels on the same values.
//
// One set of graphs is kept for one shape (the rows of a step; dtype and device
// are the model's): a step with other rows (CFG dropped at cfg_interval, the
// next run's batch) captures again and frees the old set. A capture that fails
// is said once in the log, and the model decodes eagerly from then on.
#include <ATen/core/Tensor.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/cache/kv_store.h"
#include "engine/core/cuda_graph_set.h"
#include "engine/models/llamagen/llamagen_gpt.h"

namespace kvs::llamagen {

class DecodeGraphs {
 public:
  // `gpt` must outlive this object (LlamaGenModel holds both). The Emulated
  // backend (tests) runs the captured pieces at each replay, on any device.
  explicit DecodeGraphs(const LlamaGenGpt& gpt, CudaGraphSet::Backend backend = CudaGraphSet::Backend::Cuda);
  ~DecodeGraphs();
  DecodeGraphs(const DecodeGraphs&) = delete;
  DecodeGraphs& operator=(const DecodeGraphs&) = delete;

  // LlamaGenGpt::decode_step through the graphs, capturing them first at a new
  // shape. Returns an undefined tensor when the step must run eagerly instead
  // (nothing of it has run then): a model on the CPU, a build without CUDA
  // graphs, a capture that failed, a position past the block size, or another
  // thread replaying these graphs. The logits are the step's own tensor.
  at::Tensor step(const at::Tensor& tokens, int64_t position, KvStore& cache, const StepObserver& observer = {});

  int64_t captures() const { return captures_.load(); }  // shapes captured so far
  bool failed() const { return failed_.load(); }         // a capture failed: eager from then on

 private:
  struct Shape;
  bool capture(int64_t rows);

  const LlamaGenGpt& gpt_;
  const CudaGraphSet::Backend backend_;
  std::mutex mutex_;  // one step at a time replays (the static buffers are shared)
  std::unique_ptr<CudaGraphSet> graphs_;
  std::unique_ptr<Shape> shape_;
  std::atomic<int64_t> captures_{0};
  std::atomic<bool> failed_{false};
};

// What a LlamaGen run reports as GenerationResult::cuda_graphs
// (engine/core/cuda_graphs.h): `requested` is the request's switch,
// `graph_steps` of `steps` decode steps replayed graphs.
std::string decode_graphs_report(bool requested, bool on_cuda, int64_t graph_steps, int64_t steps, bool failed);

}  // namespace kvs::llamagen
