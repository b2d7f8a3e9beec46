#include "engine/cache/policies/line_saliency.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <cmath>
#include <limits>

namespace kvs {

at::Tensor line_saliency(const KvStore& store, int64_t layer, const at::Tensor& line_queries, const at::Tensor& mid) {
  // The finished line's queries against every slot's key, softmax restricted to
  // the mid region, mean over queries (and grouped heads).
  const double scale = 1.0 / std::sqrt(static_cast<double>(store.head_dim()));
  const int64_t rows = store.rows(), kv = store.kv_heads(), group = line_queries.size(1) / kv;
  const int64_t n = line_queries.size(2);
  at::Tensor keys = store.keys(layer, mid.size(-1));  // [rows, kv, L, D]
  at::Tensor q = line_queries.narrow(0, 0, rows).reshape({rows, kv, group * n, store.head_dim()});
  at::Tensor logits = at::matmul(q, keys.transpose(-1, -2)) * scale;  // [rows, kv, g*n, L]
  at::Tensor mid_dev = mid.to(logits.device()).unsqueeze(2);
  logits = logits.masked_fill(~mid_dev, -std::numeric_limits<float>::infinity());
  return at::nan_to_num(at::softmax(logits, -1, at::kFloat), 0.0).mean(2).to(at::kCPU);  // [rows, kv, L]
}

}  // namespace kvs
