#include "engine/cache/policies/attention_selectivity_meter.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/core/errors.h"

namespace kvs {

AttentionSelectivityMeter::AttentionSelectivityMeter(const PolicyContext& context, int64_t top_k)
    : context_(context), top_k_(top_k), queries_(static_cast<size_t>(context.n_layer)) {
  if (context.unit_tokens.size() < 2)
    throw InvalidArgumentError("the attention-selectivity calibration needs a next-scale (VAR) model");
  if (top_k < 1) throw InvalidArgumentError("the attention-selectivity calibration needs top_k >= 1");
  const auto n = static_cast<size_t>(context.n_layer) * context.unit_tokens.size();
  current_sum_.assign(n, 0.0);
  top_sum_.assign(n, 0.0);
  weight_.assign(n, 0.0);
}

void AttentionSelectivityMeter::after_token(KvStore&, int64_t) {
  throw InvalidArgumentError("the attention-selectivity calibration works on next-scale (VAR) models only");
}

void AttentionSelectivityMeter::observe_queries(int64_t layer, int64_t, const at::Tensor& queries) {
  queries_.at(static_cast<size_t>(layer)) = queries;
}

void AttentionSelectivityMeter::before_unit_attention(KvStore& store, int64_t layer, int64_t unit) {
  const at::Tensor& queries = queries_.at(static_cast<size_t>(layer));
  if (!queries.defined()) return;
  const int64_t rows = decision_rows(store, context_), kv = store.kv_heads(), d = store.head_dim();
  const int64_t length = store.max_length(layer), t = queries.size(2), group = queries.size(1) / kv;
  if (layer == 0 && unit == 0) images_ += rows;
  const at::Tensor keys = store.keys(layer, length).narrow(0, 0, rows).to(at::kFloat);  // [rows, kv, L, d]
  const at::Tensor q = queries.narrow(0, 0, rows).to(keys.device(), at::kFloat).reshape({rows, kv, group * t, d});
  at::Tensor logits = at::matmul(q, keys.transpose(-1, -2)) * (1.0 / std::sqrt(static_cast<double>(d)));
  const at::Tensor positions = store.positions_tensor(layer).narrow(0, 0, rows).narrow(2, 0, length).unsqueeze(2);
  const int64_t begin = context_.unit_begin(unit), end = begin + context_.unit_tokens.at(static_cast<size_t>(unit));
  const at::Tensor present = (positions >= 0).to(logits.device());
  logits = logits.masked_fill(~present, -std::numeric_limits<float>::infinity());
  const at::Tensor alpha = at::softmax(logits, -1);  // [rows, kv, g*t, L]
  const at::Tensor current = ((positions >= begin) & (positions < end)).to(alpha.device());
  const at::Tensor history = ((positions >= 0) & (positions < begin)).to(alpha.device());
  const double current_mass = (alpha * current).sum().item<double>();
  double top_mass = 0;
  const int64_t k = std::min(top_k_, length);
  if (unit > 0 && k > 0) {
    // Entries outside the history score -1, below every probability, and count 0.
    const at::Tensor on_history = at::where(history, alpha, at::full_like(alpha, -1.0f));
    top_mass = std::get<0>(at::topk(on_history, k, -1)).clamp_min(0).sum().item<double>();
  }
  const auto slot = static_cast<size_t>(layer * static_cast<int64_t>(context_.unit_tokens.size()) + unit);
  current_sum_[slot] += current_mass;
  top_sum_[slot] += top_mass;
  weight_[slot] += static_cast<double>(rows * kv * group * t);
}

LayerSelectivityProfile AttentionSelectivityMeter::profile(const std::vector<int64_t>& classes) const {
  LayerSelectivityProfile p;
  p.layers = context_.n_layer;
  p.unit_tokens = context_.unit_tokens;
  p.top_k = top_k_;
  p.samples = images_;
  p.classes = classes;
  for (size_t i = 0; i < weight_.size(); ++i) {
    p.current_ratio.push_back(weight_[i] > 0 ? current_sum_[i] / weight_[i] : 0.0);
    p.history_top_k.push_back(weight_[i] > 0 ? top_sum_[i] / weight_[i] : 0.0);
  }
  return p;
}

}  // namespace kvs
