#pragma once
// The scoring and compaction kernels on a GPU: every pointer in the arguments
// (kernels/segment_scoring.h) is device memory, and the work is queued on
// `stream` (nullptr: the legacy default stream) and returns before it is done.
// The CPU twins (kernels/cpu/segment_scoring.h) define what they compute and are
// what tests/engine/test_cuda_scoring.cpp compares them with.
//
// Compiled by nvcc in every build (kvs_cuda_kernels, kernels/CMakeLists.txt), free
// of torch headers, so that the library needs neither LibTorch's CUDA CMake nor
// its toolkit version. The segment descriptors are on the device, so only their
// sizes are checked here (KernelArgumentError); a length above the stride is
// clamped to it rather than read past. CUDA failures (no device, a launch error)
// throw CudaKernelError with the runtime's message.
#include <stdexcept>

#include "kernels/segment_scoring.h"

struct CUstream_st;  // cudaStream_t is a CUstream_st*: no CUDA header needed here

namespace kvs::kernels {

using CudaStream = CUstream_st*;

class CudaKernelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Whether a CUDA device is usable by these kernels (driver present, device count > 0).
bool cuda_scoring_available();

void attention_key_scores_cuda(const SegmentKeys& keys, const KeyScoreArgs& args, CudaStream stream);
void pool_candidate_scores_cuda(const PoolArgs& args, CudaStream stream);
void compact_segments_cuda(const CompactionArgs& args, CudaStream stream);

// Waits for the work queued on `stream`; throws CudaKernelError for an error a
// kernel hit while it ran.
void cuda_scoring_synchronize(CudaStream stream);

}  // namespace kvs::kernels
