#pragma once
// The one source of MAR's random draws: the generation orders (upstream
// sample_orders, a numpy shuffle per image) and the standard-normal draws of the
// diffusion sampler (upstream torch.randn in DiffLoss.sample, then one
// th.randn_like per reverse step in GaussianDiffusion.p_sample), asked for in
// exactly upstream's call order. Generation normally draws from a seeded
// generator; conformance checks replay the draws recorded from the official code.
#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace kvs::mar {

class MarRandom {
 public:
  virtual ~MarRandom() = default;
  // One random permutation of [0, seq_len) per image: int64 [batch, seq_len] on the CPU.
  virtual at::Tensor orders(int64_t batch, int64_t seq_len) = 0;
  // The next standard-normal draw of `shape`: float32 on the CPU.
  virtual at::Tensor normal(c10::IntArrayRef shape) = 0;
};

// Draws from a CPU generator seeded once, so the same seed gives the same image
// on the CPU and on a GPU (the draws are small: [rows, token channels] per step).
class SeededMarRandom final : public MarRandom {
 public:
  explicit SeededMarRandom(uint64_t seed);
  ~SeededMarRandom() override;
  at::Tensor orders(int64_t batch, int64_t seq_len) override;
  at::Tensor normal(c10::IntArrayRef shape) override;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Replays recorded draws: `orders` once, then `draws` in order. A recorded draw
// may hold fewer leading rows than asked for: the rest are zero rows (the
// conformance files store only the conditional CFG half of each step's noise;
// the other half never influences a result). Anything else — a missing draw, a
// different width, a second orders() call — throws InvalidArgumentError.
class ReplayMarRandom final : public MarRandom {
 public:
  ReplayMarRandom(at::Tensor orders, std::vector<at::Tensor> draws);
  at::Tensor orders(int64_t batch, int64_t seq_len) override;
  at::Tensor normal(c10::IntArrayRef shape) override;
  int64_t draws_used() const { return next_; }
  int64_t draws_total() const { return static_cast<int64_t>(draws_.size()); }

 private:
  at::Tensor orders_;
  bool orders_used_ = false;
  std::vector<at::Tensor> draws_;
  int64_t next_ = 0;
};

}  // namespace kvs::mar
