#pragma once
// Host tensors sent to a GPU without waiting for it.
//
// A plain `tensor.to(cuda)` from pageable host memory makes LibTorch wait for
// everything queued on the stream before it returns (it copies and then
// synchronises), so a policy that uploads a mask per layer would wait once per
// layer. Staged through page-locked memory, the copy is queued like a kernel and
// the host goes on; LibTorch keeps the staging block until the copy is done.
#include <ATen/core/Tensor.h>

namespace kvs {

// `host` on `device`: queued without a wait when `device` is a GPU and `host` is
// on the CPU; otherwise what `host.to(device)` gives.
at::Tensor upload_without_wait(const at::Tensor& host, const at::Device& device);

}  // namespace kvs
