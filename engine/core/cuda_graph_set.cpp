#include "engine/core/cuda_graph_set.h"

#include <exception>
#include <string>
#include <utility>

#include "engine/core/errors.h"

#if KVSTUDIO_CUDA_GRAPHS
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#endif

namespace kvs {

#if KVSTUDIO_CUDA_GRAPHS

struct CudaGraphSet::Impl {
  c10::DeviceIndex device = -1;
  std::vector<std::unique_ptr<at::cuda::CUDAGraph>> graphs;

  void drop() {
    if (graphs.empty()) return;
    // A replay still queued reads the pool's memory: let it finish first.
    c10::cuda::CUDAGuard guard(device);
    c10::cuda::getCurrentCUDAStream(device).synchronize();
    graphs.clear();
  }
};

void CudaGraphSet::capture_cuda(int device_index, const std::vector<std::function<void()>>& bodies, int warmup_runs) {
  const c10::DeviceIndex device = device_index >= 0 ? static_cast<c10::DeviceIndex>(device_index)
                                                    : c10::cuda::current_device();
  c10::cuda::CUDAGuard device_guard(device);
  const c10::cuda::CUDAStream current = c10::cuda::getCurrentCUDAStream(device);
  const c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device);
  std::vector<std::unique_ptr<at::cuda::CUDAGraph>> graphs;
  at::cuda::CUDAGraph* capturing = nullptr;
  // The side stream stays current until the end, the clean-up below included:
  // a capture ends on the stream it began on.
  c10::cuda::CUDAStreamGuard stream_guard(side);
  try {
    // Once per shape: waiting here is simpler than events, and the inputs
    // written on the current stream are there for the warm-ups.
    current.synchronize();
    for (int run = 0; run < warmup_runs; ++run)
      for (const auto& body : bodies) body();
    side.synchronize();
    for (const auto& body : bodies) {
      graphs.push_back(std::make_unique<at::cuda::CUDAGraph>());
      capturing = graphs.back().get();
      // Every graph after the first shares the first one's private pool.
      using Pool = decltype(std::declval<at::cuda::CUDAGraph&>().pool());
      const Pool pool = graphs.size() > 1 ? graphs.front()->pool() : Pool{0, 0};
      capturing->capture_begin(pool, cudaStreamCaptureModeThreadLocal);
      body();
      capturing->capture_end();
      capturing = nullptr;
    }
  } catch (const std::exception& e) {
    const std::string message = e.what();
    if (capturing != nullptr) {
      try {
        capturing->capture_end();  // ends the stream's capture; reports the invalidated graph
      } catch (const std::exception&) {
      }
    }
    // Whatever happened above, the side stream must not stay in capture mode.
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(side.stream(), &status) == cudaSuccess && status != cudaStreamCaptureStatusNone) {
      cudaGraph_t abandoned = nullptr;
      if (cudaStreamEndCapture(side.stream(), &abandoned) == cudaSuccess && abandoned != nullptr)
        (void)cudaGraphDestroy(abandoned);
    }
    graphs.clear();
    (void)cudaGetLastError();  // a capture's error is not sticky: no later launch should report it
    throw DeviceError("CUDA graph capture failed: " + message.substr(0, message.find('\n')));
  }
  impl_->device = device;
  impl_->graphs = std::move(graphs);
}

void CudaGraphSet::clear() {
  emulated_.clear();
  impl_->drop();
}

size_t CudaGraphSet::size() const { return backend_ == Backend::Emulated ? emulated_.size() : impl_->graphs.size(); }

void CudaGraphSet::replay(size_t index) const {
  if (backend_ == Backend::Emulated) emulated_.at(index)();
  else impl_->graphs.at(index)->replay();
}

#else

struct CudaGraphSet::Impl {
  void drop() {}
};

void CudaGraphSet::capture_cuda(int, const std::vector<std::function<void()>>&, int) {
  throw DeviceError("CUDA graphs are not in this build (it does not link LibTorch's CUDA part)");
}

void CudaGraphSet::clear() { emulated_.clear(); }

size_t CudaGraphSet::size() const { return emulated_.size(); }

void CudaGraphSet::replay(size_t index) const {
  if (backend_ != Backend::Emulated) throw DeviceError("CUDA graphs are not in this build");
  emulated_.at(index)();
}

#endif

CudaGraphSet::CudaGraphSet(Backend backend) : backend_(backend), impl_(std::make_unique<Impl>()) {}

CudaGraphSet::~CudaGraphSet() {
  try {
    impl_->drop();
  } catch (const std::exception&) {
    // The device failed; its memory goes with the process.
  }
}

void CudaGraphSet::capture(int device_index, const std::vector<std::function<void()>>& bodies, int warmup_runs) {
  clear();
  if (backend_ == Backend::Cuda) return capture_cuda(device_index, bodies, warmup_runs);
  for (int run = 0; run < warmup_runs; ++run)
    for (const auto& body : bodies) body();
  emulated_ = bodies;
}

}  // namespace kvs
