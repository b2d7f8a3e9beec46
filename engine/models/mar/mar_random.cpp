#include "engine/models/mar/mar_random.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Functions.h>

#include "engine/core/errors.h"

namespace kvs::mar {
namespace {

std::string shape_text(c10::IntArrayRef shape) { return c10::str(shape); }

}  // namespace

struct SeededMarRandom::State {
  at::Generator gen;
};

SeededMarRandom::SeededMarRandom(uint64_t seed) : state_(std::make_unique<State>()) {
  state_->gen = at::detail::createCPUGenerator(seed);
}

SeededMarRandom::~SeededMarRandom() = default;

at::Tensor SeededMarRandom::orders(int64_t batch, int64_t seq_len) {
  std::vector<at::Tensor> rows;
  rows.reserve(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b)
    rows.push_back(at::randperm(seq_len, state_->gen, at::TensorOptions().dtype(at::kLong)));
  return batch > 0 ? at::stack(rows) : at::empty({0, seq_len}, at::TensorOptions().dtype(at::kLong));
}

at::Tensor SeededMarRandom::normal(c10::IntArrayRef shape) {
  return at::randn(shape, state_->gen, at::TensorOptions().dtype(at::kFloat));
}

ReplayMarRandom::ReplayMarRandom(at::Tensor orders, std::vector<at::Tensor> draws)
    : orders_(std::move(orders)), draws_(std::move(draws)) {}

at::Tensor ReplayMarRandom::orders(int64_t batch, int64_t seq_len) {
  if (orders_used_) throw InvalidArgumentError("replayed randomness: orders were asked for twice");
  orders_used_ = true;
  if (!orders_.defined() || orders_.dim() != 2 || orders_.size(0) != batch || orders_.size(1) != seq_len)
    throw InvalidArgumentError("replayed randomness: recorded orders have shape " +
                               (orders_.defined() ? shape_text(orders_.sizes()) : std::string("(none)")) +
                               ", generation asks for [" + std::to_string(batch) + ", " + std::to_string(seq_len) +
                               "]");
  return orders_.to(at::kCPU, at::kLong);
}

at::Tensor ReplayMarRandom::normal(c10::IntArrayRef shape) {
  if (next_ >= static_cast<int64_t>(draws_.size()))
    throw InvalidArgumentError("replayed randomness: draw " + std::to_string(next_) + " of shape " + shape_text(shape) +
                               " was asked for, but only " + std::to_string(draws_.size()) + " were recorded");
  at::Tensor d = draws_[static_cast<size_t>(next_)].to(at::kCPU, at::kFloat);
  const bool rows_fit = d.dim() == static_cast<int64_t>(shape.size()) && !shape.empty() && d.size(0) <= shape[0] &&
                        d.sizes().slice(1) == shape.slice(1);
  if (!rows_fit)
    throw InvalidArgumentError("replayed randomness: draw " + std::to_string(next_) + " was recorded with shape " +
                               shape_text(d.sizes()) + ", generation asks for " + shape_text(shape));
  ++next_;
  if (d.size(0) == shape[0]) return d;
  at::Tensor full = at::zeros(shape, at::TensorOptions().dtype(at::kFloat));
  full.narrow(0, 0, d.size(0)).copy_(d);
  return full;
}

}  // namespace kvs::mar
