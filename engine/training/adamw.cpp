#include "engine/training/adamw.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <c10/core/GradMode.h>

#include <cmath>

#include "engine/core/errors.h"

namespace kvs::training {

AdamW::AdamW(const ParameterSet& params, AdamWOptions options) : options_(options) {
  for (const auto& p : params.items())
    slots_.push_back({&p, at::zeros_like(p.tensor).detach(), at::zeros_like(p.tensor).detach()});
}

void AdamW::step(double lr) {
  c10::NoGradGuard no_grad;
  ++steps_;
  const double b1 = options_.beta1, b2 = options_.beta2;
  const double bias1 = 1.0 - std::pow(b1, static_cast<double>(steps_));
  const double bias2_sqrt = std::sqrt(1.0 - std::pow(b2, static_cast<double>(steps_)));
  const double step_size = lr / bias1;
  for (auto& s : slots_) {
    at::Tensor p = s.param->tensor;
    const at::Tensor& g = p.grad();
    if (!g.defined()) continue;
    if (s.param->weight_decay && options_.weight_decay != 0) p.mul_(1.0 - lr * options_.weight_decay);
    s.exp_avg.lerp_(g, 1.0 - b1);
    s.exp_avg_sq.mul_(b2).addcmul_(g, g, 1.0 - b2);
    at::Tensor denom = (s.exp_avg_sq.sqrt() / bias2_sqrt).add_(options_.eps);
    p.addcdiv_(s.exp_avg, denom, -step_size);
  }
}

std::vector<std::pair<std::string, at::Tensor>> AdamW::state_tensors() const {
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (const auto& s : slots_) {
    out.emplace_back(s.param->name + ".exp_avg", s.exp_avg);
    out.emplace_back(s.param->name + ".exp_avg_sq", s.exp_avg_sq);
  }
  return out;
}

void AdamW::load_state(const std::map<std::string, at::Tensor>& state, int64_t steps_taken, const std::string& origin) {
  c10::NoGradGuard no_grad;
  for (auto& s : slots_) {
    for (auto* slot : {&s.exp_avg, &s.exp_avg_sq}) {
      const std::string name = s.param->name + (slot == &s.exp_avg ? ".exp_avg" : ".exp_avg_sq");
      auto it = state.find(name);
      if (it == state.end()) throw ModelMismatchError(origin + ": optimizer state " + name + " is missing");
      if (it->second.sizes() != slot->sizes())
        throw ModelMismatchError(origin + ": optimizer state " + name + " does not match its parameter's shape");
      slot->copy_(it->second);
    }
  }
  steps_ = steps_taken;
}

double clip_grad_norm(const ParameterSet& params, double max_norm) {
  c10::NoGradGuard no_grad;
  std::vector<at::Tensor> norms;
  for (const auto& p : params.items())
    if (p.tensor.grad().defined()) norms.push_back(p.tensor.grad().norm(2).to(at::kDouble));
  if (norms.empty()) return 0.0;
  const double total = at::stack(norms).norm(2).item<double>();
  const double coef = max_norm / (total + 1e-6);
  if (coef < 1.0)
    for (const auto& p : params.items())
      if (p.tensor.grad().defined()) p.tensor.mutable_grad().mul_(coef);
  return total;
}

}  // namespace kvs::training
