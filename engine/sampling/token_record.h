#pragma once
// The tokens of a generation as they are drawn: a host tensor [B, N] that the
// caller owns, plus, when the sampler draws on a GPU, a device copy that the
// decode loop writes without waiting. The host copy is refreshed on demand and
// at least at every `sync_every`-th token, so that a loop which reads it once
// per image line synchronises with the device once per line, not per token.
#include <ATen/core/Tensor.h>

#include <cstdint>

namespace kvs {

class TokenRecord {
 public:
  // host: int64 [B, N] on the CPU (written in place); device: where ids arrive.
  TokenRecord(at::Tensor& host, const at::Device& device, int64_t sync_every);

  // Stores ids [B] (on the record's device) as token `index`.
  void put(int64_t index, const at::Tensor& ids);
  // The host tokens [B, count]; refreshed from the device when `count` ends a
  // sync interval or is the whole sequence, else possibly behind by < sync_every.
  at::Tensor host(int64_t count);
  // The host tokens [B, count], refreshed now (one wait for the device).
  at::Tensor host_now(int64_t count);
  // The recorded tokens on the record's device [B, count] (the host tensor on a CPU).
  at::Tensor on_device(int64_t count) const;

 private:
  at::Tensor& host_;
  at::Tensor device_;  // undefined when ids arrive on the CPU
  int64_t sync_every_;
  int64_t synced_ = 0;  // host columns [0, synced_) are current
};

}  // namespace kvs
