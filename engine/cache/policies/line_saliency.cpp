#include "engine/cache/policies/line_saliency.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace kvs {
namespace {

PolicyScoring scoring_from_environment() {
  const char* v = std::getenv("KVSTUDIO_POLICY_SCORING");
  if (v == nullptr) return PolicyScoring::Automatic;
  if (std::strcmp(v, "torch") == 0) return PolicyScoring::Torch;
  if (std::strcmp(v, "kernels") == 0) return PolicyScoring::Kernels;
  return PolicyScoring::Automatic;
}

// -1: not chosen yet (the environment decides at the first call).
std::atomic<int> chosen_scoring{-1};

// Automatic on the CPU: the LibTorch matmul. In a first, loaded measurement of
// LineAR at batch 8 the kernels' CPU twin made the run 2.6x slower than the full
// cache (docs/benchmarks.md), so the CPU keeps the BLAS path; GPUs use the kernels.
constexpr bool kCpuPrefersKernels = false;

}  // namespace

bool policy_scoring_on_kernels(const KvStore& store) {
  switch (policy_scoring()) {
    case PolicyScoring::Kernels: return true;
    case PolicyScoring::Torch: return false;
    case PolicyScoring::Automatic: break;
  }
  if (store.device().is_cpu()) return kCpuPrefersKernels;
  // A GPU without the CUDA kernels would copy the cache to the host for the twin.
  return store.key_scores_in_place();
}

namespace {

int64_t rows_of(const KvStore& store, int64_t rows_scored) { return rows_scored < 0 ? store.rows() : rows_scored; }

double scale_of(const KvStore& store) { return 1.0 / std::sqrt(static_cast<double>(store.head_dim())); }

}  // namespace

PolicyScoring policy_scoring() {
  int v = chosen_scoring.load();
  if (v < 0) {
    int expected = -1;
    chosen_scoring.compare_exchange_strong(expected, static_cast<int>(scoring_from_environment()));
    v = chosen_scoring.load();
  }
  return static_cast<PolicyScoring>(v);
}

void set_policy_scoring(PolicyScoring scoring) { chosen_scoring.store(static_cast<int>(scoring)); }

at::Tensor line_saliency(const KvStore& store, int64_t layer, const at::Tensor& line_queries,
                         const at::Tensor& candidates, int64_t rows_scored, bool on_store_device) {
  if (!policy_scoring_on_kernels(store))
    return line_saliency_torch(store, layer, line_queries, candidates, rows_scored);
  return store.key_scores(layer, line_queries, candidates, kernels::KeyScoreReduction::Mean, scale_of(store),
                          rows_of(store, rows_scored), candidates.size(-1), {}, on_store_device);
}

at::Tensor line_saliency_torch(const KvStore& store, int64_t layer, const at::Tensor& line_queries,
                               const at::Tensor& candidates, int64_t rows_scored) {
  // The queries against every slot's key in float32 (as the kernels compute),
  // softmax restricted to the candidates, mean over queries (and grouped heads).
  const int64_t rows = rows_of(store, rows_scored), kv = store.kv_heads(), group = line_queries.size(1) / kv;
  const int64_t n = line_queries.size(2), length = candidates.size(-1);
  at::Tensor keys = store.keys(layer, length).narrow(0, 0, rows).to(at::kFloat);  // [rows, kv, L, D]
  at::Tensor q = line_queries.narrow(0, 0, rows).to(at::kFloat).reshape({rows, kv, group * n, store.head_dim()});
  at::Tensor logits = at::matmul(q, keys.transpose(-1, -2)) * scale_of(store);  // [rows, kv, g*n, L]
  at::Tensor mask = candidates.narrow(0, 0, rows).to(logits.device()).unsqueeze(2);
  logits = logits.masked_fill(~mask, -std::numeric_limits<float>::infinity());
  return at::nan_to_num(at::softmax(logits, -1), 0.0).mean(2).to(at::kCPU);  // [rows, kv, L]
}

void buffer_line_query(at::Tensor& buffer, const at::Tensor& queries, int64_t slot, int64_t n) {
  const int64_t rows = queries.size(0);
  if (buffer.defined() && buffer.size(0) > rows && buffer.size(1) == queries.size(1))
    buffer = buffer.narrow(0, 0, rows).clone();  // CFG dropped: keep the conditional rows
  if (!buffer.defined() || buffer.size(0) != rows || buffer.size(1) != queries.size(1))
    buffer = at::zeros({rows, queries.size(1), n, queries.size(3)}, queries.options());
  buffer.narrow(2, slot, 1).copy_(queries);
}

}  // namespace kvs
