#pragma once
// AdamW (Loshchilov & Hutter) with PyTorch's update rule (torch.optim.AdamW,
// non-amsgrad), written out so that its state has names and goes into the same
// safetensors checkpoint as the weights, and so that no torch/optim header is
// needed:
//   p *= 1 - lr * weight_decay            (only tensors marked weight_decay)
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//   p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/training/parameter_set.h"

namespace kvs::training {

struct AdamWOptions {
  double beta1 = 0.9;
  double beta2 = 0.95;  // LlamaGen's train_c2i.py / train_vq.py
  double eps = 1e-8;
  double weight_decay = 0.05;
};

class AdamW {
 public:
  AdamW(const ParameterSet& params, AdamWOptions options);

  // One update at learning rate `lr` from the parameters' .grad() (tensors without
  // a gradient are left alone, as PyTorch does).
  void step(double lr);
  int64_t steps_taken() const { return steps_; }
  const AdamWOptions& options() const { return options_; }

  // "<param>.exp_avg" / "<param>.exp_avg_sq" for the checkpoint.
  std::vector<std::pair<std::string, at::Tensor>> state_tensors() const;
  void load_state(const std::map<std::string, at::Tensor>& state, int64_t steps_taken, const std::string& origin);

 private:
  struct Slot {
    const NamedParameter* param;
    at::Tensor exp_avg, exp_avg_sq;
  };
  AdamWOptions options_;
  std::vector<Slot> slots_;
  int64_t steps_ = 0;
};

// Scales all gradients so that their global L2 norm is at most `max_norm`
// (torch.nn.utils.clip_grad_norm_); returns the norm before clipping.
double clip_grad_norm(const ParameterSet& params, double max_norm);

}  // namespace kvs::training
