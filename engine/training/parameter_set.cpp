#include "engine/training/parameter_set.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <c10/core/GradMode.h>

#include <cmath>

#include "engine/core/errors.h"

namespace kvs::training {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string shape_text(at::IntArrayRef shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(shape[i]);
  }
  s += "]";
  return s;
}

int64_t fan_in_of(const std::vector<int64_t>& shape) {
  int64_t fan_in = 1;
  for (size_t i = 1; i < shape.size(); ++i) fan_in *= shape[i];
  return fan_in;
}

}  // namespace

void ParameterSet::add(const std::string& name, const at::Tensor& value) {
  if (index_.count(name)) throw InvalidArgumentError("parameter " + name + " added twice");
  at::Tensor t = value.to(at::kFloat).contiguous().detach();
  t.set_requires_grad(true);
  index_[name] = items_.size();
  items_.push_back({name, t, t.dim() >= 2});
}

const at::Tensor& ParameterSet::get(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end()) throw ModelMismatchError("no parameter named " + name);
  return items_[it->second].tensor;
}

void ParameterSet::set_weight_decay(const std::string& name, bool decay) {
  auto it = index_.find(name);
  if (it == index_.end()) throw ModelMismatchError("no parameter named " + name);
  items_[it->second].weight_decay = decay;
}

std::map<std::string, at::Tensor> ParameterSet::as_map() const {
  std::map<std::string, at::Tensor> out;
  for (const auto& p : items_) out[p.name] = p.tensor;
  return out;
}

int64_t ParameterSet::numel() const {
  int64_t n = 0;
  for (const auto& p : items_) n += p.tensor.numel();
  return n;
}

void ParameterSet::zero_grad() {
  for (auto& p : items_) {
    at::Tensor g = p.tensor.mutable_grad();
    if (g.defined()) g.zero_();
  }
}

void ParameterSet::copy_from(const std::map<std::string, at::Tensor>& values, const std::string& origin,
                             bool allow_extra) {
  std::string missing, mismatched;
  for (const auto& p : items_) {
    auto it = values.find(p.name);
    if (it == values.end()) {
      if (!missing.empty()) missing += ", ";
      missing += p.name;
    } else if (it->second.sizes() != p.tensor.sizes()) {
      mismatched += "; tensor " + p.name + " has shape " + shape_text(it->second.sizes()) + ", expected " +
                    shape_text(p.tensor.sizes());
    }
  }
  std::string extra;
  if (!allow_extra)
    for (const auto& [name, t] : values)
      if (!index_.count(name)) {
        if (!extra.empty()) extra += ", ";
        extra += name;
      }
  if (!missing.empty() || !mismatched.empty() || !extra.empty()) {
    std::string message = origin + ":";
    if (!missing.empty()) message += " missing tensors: " + missing;
    if (!extra.empty()) message += " unexpected tensors: " + extra;
    message += mismatched;
    throw ModelMismatchError(message);
  }
  c10::NoGradGuard no_grad;
  for (auto& p : items_) p.tensor.copy_(values.at(p.name));
}

at::Tensor default_layer_init(const std::vector<int64_t>& shape, int64_t fan_in, at::Generator& gen) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(fan_in, 1)));
  return at::empty(shape, at::TensorOptions().dtype(at::kFloat)).uniform_(-bound, bound, gen);
}

ParameterSet init_parameters(const std::vector<io::ExpectedTensor>& expected, uint64_t seed, at::Device device,
                             const SpecialInit& special) {
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& e : expected) shapes[e.name] = e.shape;
  at::Generator gen = at::detail::createCPUGenerator(seed);
  ParameterSet params;
  for (const auto& e : expected) {
    at::Tensor t;
    if (special) t = special(e.name, e.shape, gen);
    if (!t.defined()) {
      const bool is_norm = e.name.find("norm") != std::string::npos && e.shape.size() == 1;
      if (is_norm) {
        t = ends_with(e.name, ".bias") ? at::zeros(e.shape) : at::ones(e.shape);
      } else if (ends_with(e.name, ".bias")) {
        const std::string weight = e.name.substr(0, e.name.size() - 5) + ".weight";
        auto it = shapes.find(weight);
        t = default_layer_init(e.shape, it == shapes.end() ? e.shape[0] : fan_in_of(it->second), gen);
      } else {
        t = default_layer_init(e.shape, fan_in_of(e.shape), gen);
      }
    }
    params.add(e.name, t.to(device));
  }
  return params;
}

}  // namespace kvs::training
