#include "engine/sampling/token_record.h"

#include <ATen/Functions.h>

#include <algorithm>

namespace kvs {

TokenRecord::TokenRecord(at::Tensor& host, const at::Device& device, int64_t sync_every)
    : host_(host), sync_every_(std::max<int64_t>(sync_every, 1)) {
  if (!device.is_cpu()) device_ = at::zeros(host.sizes(), host.options().device(device));
}

void TokenRecord::put(int64_t index, const at::Tensor& ids) {
  at::Tensor& target = device_.defined() ? device_ : host_;
  target.select(1, index).copy_(ids.reshape({-1}));
}

at::Tensor TokenRecord::host_now(int64_t count) {
  if (device_.defined() && count > synced_) {
    host_.narrow(1, synced_, count - synced_).copy_(device_.narrow(1, synced_, count - synced_));
    synced_ = count;
  }
  return host_.narrow(1, 0, count);
}

at::Tensor TokenRecord::host(int64_t count) {
  if (count % sync_every_ == 0 || count >= host_.size(1)) return host_now(count);
  return host_.narrow(1, 0, count);
}

at::Tensor TokenRecord::on_device(int64_t count) const {
  return (device_.defined() ? device_ : host_).narrow(1, 0, count);
}

}  // namespace kvs
