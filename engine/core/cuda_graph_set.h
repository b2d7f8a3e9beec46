#pragma once
// CUDA graphs for one shape of a step: a sequence of bodies (functions that
// queue LibTorch work on tensors kept between calls, the "static" inputs and
// outputs), each captured once as a graph and then replayed on the current
// stream, in order, with eager work in between (docs/design.md#cuda-graphs-for-the-decode-step).
//
// Capture follows what PyTorch requires: the bodies are warmed up on a side
// stream (cuBLAS handles and workspaces, lazy initialisation), then captured on
// that stream, all into one private memory pool (they are replayed in the order
// they were captured, which is what makes sharing it safe). A body must not
// wait for the host (no .item(), no copies to the host) and must allocate only
// through LibTorch. Capture uses the thread-local mode, so that another thread
// working on the same GPU (the window's compare panes) neither breaks nor is
// broken by it.
//
// Header free of torch and CUDA headers; a build without LibTorch's CUDA part
// (cuda_graphs_built() false) has the class, and a Cuda capture() always throws.
//
// The Emulated backend captures nothing: it keeps the bodies and runs them at
// each replay, on any device. The data still flows only through the tensors
// the bodies share, so tests on a machine without a GPU check how a step is cut
// into bodies and fed between replays.
#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

namespace kvs {

class CudaGraphSet {
 public:
  enum class Backend { Cuda, Emulated };
  explicit CudaGraphSet(Backend backend = Backend::Cuda);
  ~CudaGraphSet();  // waits for the device's current stream if graphs are held
  CudaGraphSet(const CudaGraphSet&) = delete;
  CudaGraphSet& operator=(const CudaGraphSet&) = delete;

  // Drops what was captured, then warms each body up `warmup_runs` times (all
  // bodies in order, so that each reads what the one before produced) and
  // captures each as one graph, on GPU `device_index`. The device's current
  // stream is waited for before and the side stream after, so the warm-ups see
  // the inputs written before the call and finish before anything queued after
  // it. Throws DeviceError with LibTorch's or CUDA's message when a body cannot
  // be captured; nothing is kept then, and the device is usable.
  // Emulated: the warm-ups run on the calling thread and the bodies are kept.
  void capture(int device_index, const std::vector<std::function<void()>>& bodies, int warmup_runs = 3);

  // Queues graph `index` on the device's current stream.
  void replay(size_t index) const;

  size_t size() const;
  // Drops the graphs and their pool (waits for the device's current stream first).
  void clear();

 private:
  struct Impl;
  void capture_cuda(int device_index, const std::vector<std::function<void()>>& bodies, int warmup_runs);

  Backend backend_;
  std::vector<std::function<void()>> emulated_;  // Emulated: the bodies, run at each replay
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvs
