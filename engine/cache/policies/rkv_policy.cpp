#include "engine/cache/policies/rkv_policy.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <limits>

#include "engine/core/errors.h"
#include "engine/core/host_upload.h"

namespace kvs {

at::Tensor key_redundancy(const KvStore& store, int64_t layer, const at::Tensor& is_image_host) {
  const int64_t length = is_image_host.size(-1);
  at::Tensor keys = store.keys(layer, length).to(at::kFloat);  // [rows, kv, L, D], on the store's device
  // Computed where the keys are: on a GPU nothing comes back to the host.
  const at::Tensor is_image = upload_without_wait(is_image_host, keys.device());
  at::Tensor unit = keys / at::clamp_min(at::sqrt((keys * keys).sum(-1, /*keepdim=*/true)), 1e-12);
  at::Tensor similarity = at::matmul(unit, unit.transpose(-1, -2));  // [rows, kv, L, L]
  at::Tensor others =
      is_image.unsqueeze(2) &
      ~at::eye(length, at::TensorOptions().dtype(at::kBool).device(keys.device())).view({1, 1, length, length});
  at::Tensor total = (similarity * others.to(at::kFloat)).sum(-1);  // [rows, kv, L]
  at::Tensor count = at::clamp_min(is_image.sum(-1, /*keepdim=*/true) - 1, 1).to(at::kFloat);
  return at::where(is_image, total / count, at::zeros_like(total));
}

RkvPolicy::RkvPolicy(const PolicyContext& context, int64_t budget_tokens, double lambda, int64_t window, int64_t kernel,
                     bool decide_on_both)
    : context_(context),
      budget_(budget_tokens),
      kernel_(kernel),
      lambda_(lambda),
      decide_on_both_(decide_on_both),
      window_(context.n_layer, window < 1 ? 1 : window) {
  if (!(lambda_ >= 0 && lambda_ <= 1))
    throw InvalidArgumentError("policy rkv: lambda " + std::to_string(lambda_) +
                               " is impossible (must be 0 <= lambda <= 1)");
  check_observation_budget("rkv", context, budget_tokens, window, kernel);
}

void RkvPolicy::observe_queries(int64_t layer, int64_t token_index, const at::Tensor& queries) {
  window_.observe(layer, token_index, queries);
}

void RkvPolicy::after_token(KvStore& store, int64_t token_index) {
  const float minus_inf = -std::numeric_limits<float>::infinity();
  evict_at_line_end(store, token_index, context_, budget_, window_, decide_on_both_,
                    [&](int64_t layer, const ImageSlots& s, const at::Tensor& candidates, const at::Tensor& queries,
                        const std::vector<int64_t>& query_positions) {
                      // Everything on the store's device: on a GPU the line end waits once (apply_keeps).
                      const at::Device device = store.device();
                      const at::Tensor flags = upload_without_wait(candidates, device);
                      // Importance: the SnapKV vote, normalised over the candidates.
                      at::Tensor importance = at::zeros({store.rows(), store.kv_heads(), s.length},
                                                        at::TensorOptions().dtype(at::kFloat).device(device));
                      if (queries.defined()) {
                        at::Tensor votes = observation_importance(store, layer, queries, query_positions, candidates,
                                                                  kernel_, ObservationPooling::Max,
                                                                  /*on_store_device=*/true)
                                               .to(device);
                        votes = at::where(flags, votes, at::zeros_like(votes));
                        importance = votes /
                                     at::clamp_min(votes.sum(-1, /*keepdim=*/true), std::numeric_limits<float>::min());
                      }
                      // Redundancy: mean key similarity, softmax-normalised over the candidates.
                      at::Tensor similarity = key_redundancy(store, layer, s.is_image);
                      at::Tensor redundancy = at::nan_to_num(
                          at::softmax(at::where(flags, similarity, at::full_like(similarity, minus_inf)), -1), 0.0);
                      return importance * lambda_ - redundancy * (1.0 - lambda_);  // Z, [rows, kv, L]
                    });
}

PolicyInfo rkv_policy_info() {
  auto params = budget_param_specs("1/4");
  params.push_back(
      real_param("lambda", "0.1", 0, 1, "weight of importance against redundancy, Z = lambda I - (1 - lambda) R"));
  params.push_back(integer_param("window", "0", 0, 65536,
                                 "observation window in queries (0: one line; R-KV's alpha is 8), always kept"));
  params.push_back(integer_param("kernel", "7", 1, 63, "max-pooling kernel of the importance over slot order (odd)"));
  params.push_back(choice_param("cfg_decision", "cond", {"cond", "both"},
                                "CFG pairs: score on the conditional row, or on both rows"));
  return {{"rkv",
           "R-KV: importance minus key redundancy; cut to B - n at each line end",
           "Cai et al. 2025 (R-KV) §3, baseline in LineAR §4.2 / HeadKV §5.2",
           params,
           // Budgets and decisions count token lines: raster models only (VAR refuses them, supports_units()).
           {"raster"}},
          [](const PolicyParams& p, const PolicyContext& c) {
            const int64_t window = p.integer("window") == 0 ? c.grid_width : p.integer("window");
            return std::make_unique<RkvPolicy>(c, resolve_budget_tokens(p, c, "rkv"), p.real("lambda"), window,
                                               p.integer("kernel"), p.text("cfg_decision") == "both");
          }};
}

}  // namespace kvs
