#include "engine/cache/policies/snapkv_policy.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/cache/policies/line_saliency.h"
#include "engine/core/errors.h"
#include "engine/core/host_upload.h"

namespace kvs {

ObservationWindow::ObservationWindow(int64_t n_layer, int64_t window)
    : window_(window), buffers_(n_layer), tokens_(n_layer, std::vector<int64_t>(window, -1)) {}

void ObservationWindow::observe(int64_t layer, int64_t token_index, const at::Tensor& queries) {
  at::Tensor& buffer = buffers_.at(layer);
  std::vector<int64_t>& tokens = tokens_.at(layer);
  const int64_t rows = queries.size(0);
  const bool same_shape = buffer.defined() && buffer.size(1) == queries.size(1) && buffer.size(3) == queries.size(3);
  // CFG dropped: the conditional rows come first, so their window stays valid.
  if (same_shape && buffer.size(0) > rows) buffer = buffer.narrow(0, 0, rows).clone();
  if (!same_shape || buffer.size(0) != rows) {
    buffer = at::zeros({rows, queries.size(1), window_, queries.size(3)}, queries.options());
    tokens.assign(window_, -1);
  }
  const int64_t slot = token_index % window_;
  buffer.narrow(2, slot, 1).copy_(queries);
  tokens[slot] = token_index;
}

at::Tensor ObservationWindow::recent(int64_t layer, int64_t token_index, std::vector<int64_t>* token_indices) const {
  const at::Tensor& buffer = buffers_.at(layer);
  const std::vector<int64_t>& tokens = tokens_.at(layer);
  std::vector<int64_t> slots;
  token_indices->clear();
  for (int64_t s = 0; s < window_; ++s) {
    const int64_t t = tokens[s];
    if (t >= 0 && t <= token_index && t > token_index - window_) {
      slots.push_back(s);
      token_indices->push_back(t);
    }
  }
  if (slots.empty() || !buffer.defined()) return at::Tensor();
  at::Tensor index = at::tensor(slots, at::TensorOptions().dtype(at::kLong)).to(buffer.device());
  return buffer.index_select(2, index);
}

at::Tensor observation_votes_torch(const KvStore& store, int64_t layer, const at::Tensor& queries,
                                   const std::vector<int64_t>& query_positions) {
  const int64_t rows = store.rows(), kv = store.kv_heads(), d = store.head_dim();
  const int64_t length = store.max_length(layer);
  const int64_t group = queries.size(1) / kv, w = queries.size(2);
  at::Tensor keys = store.keys(layer, length).to(at::kFloat);  // [rows, kv, L, D]
  at::Tensor q = queries.narrow(0, 0, rows).to(keys.device(), at::kFloat).reshape({rows, kv, group * w, d});
  at::Tensor logits = at::matmul(q, keys.transpose(-1, -2)) *
                      (1.0 / std::sqrt(static_cast<double>(d)));  // [rows, kv, g*w, L]
  // Causal visibility, as in the model's own attention: entry position <= query position.
  at::Tensor positions = store.positions_tensor(layer).narrow(2, 0, length).unsqueeze(2);  // [rows, kv, 1, L]
  at::Tensor query_pos = at::tensor(query_positions, at::TensorOptions().dtype(at::kLong)).view({1, 1, w, 1});
  at::Tensor visible = (positions >= 0) & (positions <= query_pos);  // [rows, kv, w, L]
  visible = visible.unsqueeze(2).expand({rows, kv, group, w, length}).reshape({rows, kv, group * w, length});
  logits = logits.masked_fill(~visible.to(logits.device()), -std::numeric_limits<float>::infinity());
  return at::nan_to_num(at::softmax(logits, -1), 0.0).sum(2).to(at::kCPU, at::kFloat);  // [rows, kv, L]
}

at::Tensor observation_importance(const KvStore& store, int64_t layer, const at::Tensor& queries,
                                  const std::vector<int64_t>& query_positions, const at::Tensor& candidates_in,
                                  int64_t kernel, ObservationPooling pooling, bool on_store_device) {
  const int64_t rows = store.rows(), kv = store.kv_heads(), d = store.head_dim();
  const int64_t length = store.max_length(layer);
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  // The votes: on the scoring kernels (the keys read in place, one score per
  // entry), or the LibTorch formulation (line_saliency.h says which runs where).
  const at::Tensor votes = policy_scoring_on_kernels(store)
                               ? store.key_scores(layer, queries, at::Tensor(), kernels::KeyScoreReduction::Sum, scale,
                                                  rows, length, query_positions, on_store_device)
                               : observation_votes_torch(store, layer, queries, query_positions);
  // The pooling runs where the votes are (on a GPU with on_store_device).
  const at::Tensor candidates = upload_without_wait(candidates_in, votes.device());
  const float minus_inf = -std::numeric_limits<float>::infinity();
  at::Tensor pooled;
  if (pooling == ObservationPooling::Max) {
    // Max pooling over the candidates' slot order (others are -inf, so they never win).
    at::Tensor masked = at::where(candidates, votes, at::full_like(votes, minus_inf));
    pooled =
        at::max_pool1d(masked.reshape({rows * kv, 1, length}), {kernel}, {1}, {kernel / 2}).reshape({rows, kv, length});
  } else {
    // Average over the candidates within the kernel: the pooled sum over the pooled count.
    const at::Tensor flags = candidates.to(at::kFloat).reshape({rows * kv, 1, length});
    const at::Tensor sums =
        at::avg_pool1d(at::where(candidates, votes, at::zeros_like(votes)).reshape({rows * kv, 1, length}), {kernel},
                       {1}, {kernel / 2});
    const at::Tensor counts = at::avg_pool1d(flags, {kernel}, {1}, {kernel / 2});
    pooled = (sums / counts.clamp_min(1e-12)).reshape({rows, kv, length});
  }
  return at::where(candidates, pooled, at::full_like(pooled, minus_inf));
}

void check_observation_budget(const std::string& policy, const PolicyContext& context, int64_t budget_tokens,
                              int64_t window, int64_t kernel) {
  if (window < 1)
    throw InvalidArgumentError("policy " + policy + ": window must be >= 1 (queries in the observation window), got " +
                               std::to_string(window));
  if (kernel < 1 || kernel % 2 == 0)
    throw InvalidArgumentError("policy " + policy +
                               ": kernel must be an odd number >= 1 (max pooling with same padding), got " +
                               std::to_string(kernel));
  const int64_t n = context.grid_width;
  const int64_t minimum = window + n + 1;
  if (budget_tokens < minimum)
    throw InvalidArgumentError(
        "policy " + policy + ": budget " + std::to_string(budget_tokens) + " tokens is impossible: B must hold the " +
        std::to_string(window) + "-token observation window, the one-line buffer (" + std::to_string(n) +
        " tokens) and at least one scored token: at least " + std::to_string(minimum) +
        " tokens (rho >= " + std::to_string(static_cast<double>(minimum) / context.image_tokens()).substr(0, 6) + ")");
}

SnapKvPolicy::SnapKvPolicy(const PolicyContext& context, int64_t budget_tokens, int64_t window, int64_t kernel,
                           bool decide_on_both)
    : context_(context),
      budget_(budget_tokens),
      kernel_(kernel),
      decide_on_both_(decide_on_both),
      window_(context.n_layer, window < 1 ? 1 : window),
      unit_queries_(static_cast<size_t>(context.n_layer)) {
  if (context.unit_tokens.empty()) {
    check_observation_budget("snapkv", context, budget_tokens, window, kernel);
  } else if (kernel < 1 || kernel % 2 == 0) {
    // Next-scale models: the window is the current scale, any B >= 1 leaves room.
    throw InvalidArgumentError(
        "policy snapkv: kernel must be an odd number >= 1 (max pooling with same padding), got " +
        std::to_string(kernel));
  }
}

int64_t SnapKvPolicy::max_entries() const {
  // VAR: a whole scale arrives before after_unit_layer cuts.
  if (context_.unit_tokens.empty()) return budget_;
  return std::min(context_.image_tokens(), budget_ + context_.unit_tokens.back());
}

void SnapKvPolicy::observe_queries(int64_t layer, int64_t token_index, const at::Tensor& queries) {
  if (!context_.unit_tokens.empty()) unit_queries_.at(static_cast<size_t>(layer)) = queries;
  else window_.observe(layer, token_index, queries);
}

void SnapKvPolicy::after_unit_layer(KvStore& store, int64_t layer, int64_t unit) {
  ImageSlots s = image_slots(store, layer, context_.condition_tokens);
  if (s.count.max().item<int64_t>() <= budget_) return;
  const int64_t t = context_.unit_tokens.at(static_cast<size_t>(unit));
  const int64_t begin = context_.condition_tokens + context_.unit_begin(unit);
  // The window (this scale) stays whole when it leaves room for older entries.
  const at::Tensor candidates = t < budget_ ? (s.is_image & (s.positions < begin)) : s.is_image;
  const at::Tensor& queries = unit_queries_.at(static_cast<size_t>(layer));
  at::Tensor scores;
  if (queries.defined() && queries.size(2) == t) {
    // The scale attends bidirectionally: every query sees the whole cache.
    const std::vector<int64_t> positions(static_cast<size_t>(t), begin + t - 1);
    scores = observation_importance(store, layer, queries, positions, candidates, kernel_);
  } else {
    scores = at::zeros({store.rows(), store.kv_heads(), s.length}, at::kFloat);  // not observed: the oldest go
  }
  const int64_t decide = decision_rows(store, context_);
  at::Tensor decision = scores.narrow(0, 0, decide);
  if (decide_on_both_ && decide != store.rows()) decision = decision + scores.narrow(0, decide, decide);
  const at::Tensor evict = at::clamp_min(s.count.narrow(0, 0, decide) - budget_, 0);
  apply_keep(store, layer, keep_all_but_lowest(decision, candidates.narrow(0, 0, decide), evict), context_);
}

void evict_at_line_end(KvStore& store, int64_t token_index, const PolicyContext& context, int64_t budget_tokens,
                       const ObservationWindow& window, bool decide_on_both, const ObservationScorer& score) {
  const int64_t n = context.grid_width;
  if ((token_index + 1) % n != 0) return;
  const int64_t target = budget_tokens - n;
  const int64_t window_from = context.condition_tokens + token_index + 1 - window.window();  // first window position
  // Every layer decides first, then all evict together (one wait on a GPU).
  std::vector<at::Tensor> keeps(static_cast<size_t>(store.n_layer()));
  for (int64_t layer = 0; layer < store.n_layer(); ++layer) {
    ImageSlots s = image_slots(store, layer, context.condition_tokens);
    if (s.count.max().item<int64_t>() <= target) continue;
    at::Tensor candidates = s.is_image & (s.positions < window_from);
    std::vector<int64_t> tokens, query_positions;
    at::Tensor queries = window.recent(layer, token_index, &tokens);
    for (int64_t t : tokens) query_positions.push_back(context.condition_tokens + t);
    at::Tensor scores = score(layer, s, candidates, queries, query_positions);  // [rows, kv, L]
    const int64_t decide = decision_rows(store, context);
    at::Tensor decision = scores.narrow(0, 0, decide);
    if (decide_on_both && decide != store.rows()) decision = decision + scores.narrow(0, decide, decide);
    at::Tensor evict = at::clamp_min(s.count.narrow(0, 0, decide) - target, 0);
    keeps[static_cast<size_t>(layer)] = keep_all_but_lowest(decision, candidates.narrow(0, 0, decide), evict);
  }
  apply_keeps(store, keeps, context);
}

void SnapKvPolicy::after_token(KvStore& store, int64_t token_index) {
  evict_at_line_end(store, token_index, context_, budget_, window_, decide_on_both_,
                    [&](int64_t layer, const ImageSlots& s, const at::Tensor& candidates, const at::Tensor& queries,
                        const std::vector<int64_t>& query_positions) {
                      if (!queries.defined()) return at::zeros({store.rows(), store.kv_heads(), s.length}, at::kFloat);
                      // On a GPU the votes, their pooling and the ranking stay there.
                      return observation_importance(store, layer, queries, query_positions, candidates, kernel_,
                                                    ObservationPooling::Max, /*on_store_device=*/true);
                    });
}

PolicyInfo snapkv_policy_info() {
  auto params = budget_param_specs("1/4");
  params.push_back(integer_param("window", "0", 0, 65536,
                                 "observation window in queries (0: one line; VAR models: the current scale), always "
                                 "kept"));
  params.push_back(integer_param("kernel", "7", 1, 63, "max-pooling kernel over slot order (odd)"));
  params.push_back(choice_param("cfg_decision", "cond", {"cond", "both"},
                                "CFG pairs: score on the conditional row, or on both rows"));
  return {{"snapkv",
           "SnapKV: observation-window attention votes, max-pooled; cut to B - n at each line end (VAR models: "
           "the current scale votes, cut to B after every layer)",
           "Li et al. 2024 (SnapKV) §4; over scales as the ScaleKV and HeatKV papers' baseline", params},
          [](const PolicyParams& p, const PolicyContext& c) {
            if (!c.unit_tokens.empty() && p.integer("window") != 0)
              throw InvalidArgumentError(
                  "policy snapkv: window does not apply to next-scale models (the observation window is the current "
                  "scale)");
            const int64_t window = p.integer("window") == 0 ? c.grid_width : p.integer("window");
            return std::make_unique<SnapKvPolicy>(c, resolve_budget_tokens(p, c, "snapkv"), window, p.integer("kernel"),
                                                  p.text("cfg_decision") == "both");
          }};
}

}  // namespace kvs
