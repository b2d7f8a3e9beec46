#pragma once
// Trainable tensors under their official state-dict names, in a fixed order.
//
// The engine's inference classes (LlamaGenGpt, VqDecoder, SceneClassifier) take
// their weights as name -> tensor maps and keep float32 contiguous tensors as
// they are (no copy). Handing them the tensors of a ParameterSet therefore gives
// a network whose forward builds an autograd graph and whose weights follow every
// in-place optimizer update: training reuses the inference code instead of
// duplicating it. Anything that replaces a tensor (rather than writing into it)
// would break that sharing, so loading a checkpoint copies values in place.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/io/tensor_spec.h"

namespace kvs::training {

struct NamedParameter {
  std::string name;
  at::Tensor tensor;
  bool weight_decay = true;  // LlamaGen: decay tensors with >= 2 dims only
};

class ParameterSet {
 public:
  // Adds `value` (moved to float32, contiguous, requiring grad). Names are unique.
  void add(const std::string& name, const at::Tensor& value);

  const std::vector<NamedParameter>& items() const { return items_; }
  bool contains(const std::string& name) const { return index_.count(name) > 0; }
  const at::Tensor& get(const std::string& name) const;  // throws ModelMismatchError
  // Overrides the >= 2-D default (VAR exempts its position/level embeddings, as
  // upstream's filter_params does); call before building the optimizer.
  void set_weight_decay(const std::string& name, bool decay);
  // Name -> tensor, sharing storage (what the engine's networks take).
  std::map<std::string, at::Tensor> as_map() const;
  int64_t numel() const;
  void zero_grad();

  // Copies `values` into the parameters in place. Every parameter must be present
  // with its shape; extra names are ignored only when `allow_extra`.
  void copy_from(const std::map<std::string, at::Tensor>& values, const std::string& origin, bool allow_extra = false);

 private:
  std::vector<NamedParameter> items_;
  std::map<std::string, size_t> index_;
};

// PyTorch's default nn.Conv2d / nn.Linear init (kaiming_uniform with a = sqrt(5)):
// weight and bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)); fan_in = prod(shape[1:]).
at::Tensor default_layer_init(const std::vector<int64_t>& shape, int64_t fan_in, at::Generator& gen);
// Initialises every expected tensor the way PyTorch builds the module: ".bias" of a
// layer default_layer_init by the matching weight's fan-in, norm weights 1 and
// biases 0 (names containing "norm"), other weights default_layer_init.
// `special(name, shape)` may return a defined tensor to override (embeddings...).
using SpecialInit =
    std::function<at::Tensor(const std::string& name, const std::vector<int64_t>& shape, at::Generator& gen)>;
ParameterSet init_parameters(const std::vector<io::ExpectedTensor>& expected, uint64_t seed, at::Device device,
                             const SpecialInit& special = {});

}  // namespace kvs::training
