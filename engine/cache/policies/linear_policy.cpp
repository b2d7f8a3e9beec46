#include "engine/cache/policies/linear_policy.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/cache/policies/line_saliency.h"
#include "engine/core/errors.h"

namespace kvs {

LinearPolicy::LinearPolicy(const PolicyContext& context, int64_t budget_tokens, int64_t n_init, int64_t recent_lines,
                           bool decide_on_both, LineGuidance guidance)
    : context_(context),
      budget_(budget_tokens / context.grid_width * context.grid_width),
      n_init_(n_init),
      recent_lines_(recent_lines),
      decide_on_both_(decide_on_both),
      guidance_(guidance),
      line_queries_(context.n_layer) {
  if (guidance_ == LineGuidance::AttnAcc)
    accumulated_ = std::make_unique<AttentionAccumulator>(context.n_layer,
                                                          context.condition_tokens + context.image_tokens());
  const int64_t n = context.grid_width;
  if (n_init_ < 0 || recent_lines_ < 0) throw InvalidArgumentError("policy linear: n_init and r must be >= 0");
  const int64_t minimum = n_init_ + (recent_lines_ + 1) * n;
  if (budget_ < minimum)
    throw InvalidArgumentError(
        "policy linear: budget " + std::to_string(budget_tokens) + " tokens is impossible: B (" +
        std::to_string(budget_) + " after rounding down to whole lines of " + std::to_string(n) + ") must hold " +
        std::to_string(n_init_) + " anchors, " + std::to_string(recent_lines_) +
        " recent line(s) and the one-line buffer: at least " + std::to_string(minimum) +
        " tokens (rho >= " + std::to_string(static_cast<double>(minimum) / context.image_tokens()).substr(0, 6) + ")");
}

void LinearPolicy::observe_queries(int64_t layer, int64_t token_index, const at::Tensor& queries) {
  buffer_line_query(line_queries_[layer], queries, token_index % context_.grid_width, context_.grid_width);
}

void LinearPolicy::observe_attention(int64_t layer, int64_t, const at::Tensor& key_mass, const at::Tensor& positions) {
  if (accumulated_) accumulated_->add(layer, key_mass, positions);
}

void LinearPolicy::after_token(KvStore& store, int64_t token_index) {
  const int64_t n = context_.grid_width;
  if ((token_index + 1) % n != 0) return;
  const int64_t lines_done = (token_index + 1) / n;
  const int64_t target = budget_ - n;
  const int64_t recent_from = context_.condition_tokens + (lines_done - recent_lines_) * n;  // first recent position
  // Every layer decides first, then all evict together: on a GPU the scores and
  // rankings of all layers run back to back and the line end waits once.
  std::vector<at::Tensor> keeps(static_cast<size_t>(store.n_layer()));
  for (int64_t layer = 0; layer < store.n_layer(); ++layer) {
    ImageSlots s = image_slots(store, layer, context_.condition_tokens);
    if (s.count.max().item<int64_t>() < budget_) continue;
    // Regions by age: anchors = first n_init visual entries, recent = last r lines.
    at::Tensor mid = s.is_image & (s.rank >= n_init_) & (s.positions < recent_from);
    const int64_t rows = store.rows(), decide = decision_rows(store, context_);
    at::Tensor score = guidance_ == LineGuidance::AttnAcc
                           ? accumulated_->slot_scores(layer, s.positions, rows, decide, decide_on_both_)
                           : inter_line_saliency(store, layer, s, mid, decide);
    at::Tensor evict = at::clamp_min(s.count.narrow(0, 0, decide) - target, 0);
    keeps[static_cast<size_t>(layer)] = keep_all_but_lowest(score, mid.narrow(0, 0, decide), evict);
  }
  apply_keeps(store, keeps, context_);
}

at::Tensor LinearPolicy::inter_line_saliency(const KvStore& store, int64_t layer, const ImageSlots& s,
                                             const at::Tensor& mid, int64_t decide) const {
  (void)s;  // the slots' length is mid's
  const int64_t rows = store.rows();
  // Only the rows that decide are scored (both halves of a CFG pair with cfg_decision=both).
  const int64_t scored = decide_on_both_ ? rows : decide;
  // On a GPU the scores stay there and the ranking (keep_all_but_lowest) runs
  // there too: at a large batch that sort is the line end's largest cost.
  at::Tensor saliency = line_saliency(store, layer, line_queries_[layer], mid, scored, /*on_store_device=*/true);
  at::Tensor score = saliency.narrow(0, 0, decide);
  if (decide_on_both_ && decide != rows) score = score + saliency.narrow(0, decide, decide);
  return score;
}

std::vector<CacheRegion> LinearPolicy::regions(int64_t positions) const {
  const int64_t n = context_.grid_width, cond = context_.condition_tokens;
  if (n <= 0) return {};
  const int64_t done = std::clamp<int64_t>(positions - cond, 0, context_.image_tokens());
  // The partition of the last line end (after_token): anchors, the middle it
  // evicts from once the cache is full, the r lines before it; the entries of
  // the line under way since then are the one-line buffer.
  const int64_t lines_done = done / n;
  const int64_t recent_begin = std::max<int64_t>(0, (lines_done - recent_lines_) * n);
  const int64_t anchors_end = std::min(n_init_, done);
  const int64_t recent_from = std::max(recent_begin, anchors_end), line_end = std::max(lines_done * n, anchors_end);
  std::vector<CacheRegion> out;
  if (recent_begin > anchors_end)
    out.push_back({"middle", "mid (evicted by saliency)", cond + anchors_end, cond + recent_begin});
  if (line_end > recent_from) out.push_back({"recent", "recent lines", cond + recent_from, cond + line_end});
  if (done > line_end) out.push_back({"buffer", "line buffer", cond + line_end, cond + done});
  if (anchors_end > 0) out.push_back({"anchors", "anchors", cond, cond + anchors_end});
  return out;
}

PolicyInfo linear_policy_info() {
  auto params = budget_param_specs("1/6");
  params.push_back(integer_param("n_init", "4", 0, 4096, "initial anchor tokens P_init always kept (N_init)"));
  params.push_back(integer_param("r", "1", 0, 64, "recent lines P_rec always kept"));
  params.push_back(choice_param("cfg_decision", "cond", {"cond", "both"},
                                "CFG pairs: score on the conditional row, or on both rows"));
  params.push_back(
      choice_param("guidance", "inter_line", {"inter_line", "attn_acc"},
                   "how mid tokens are ranked: the finished line's queries (inter-line guidance, Eq. 8-9), "
                   "or attention accumulated since each entered the cache (AttAcc ablation, Table 6)"));
  return {{"linear",
           "LineAR: anchors + recent lines + inter-line guided eviction of n tokens per line",
           "Qin et al., LineAR §3.3; guidance=attn_acc: §4.4, Table 6",
           params,
           // Budgets and decisions count token lines: raster models only (VAR refuses them, supports_units()).
           {"raster"}},
          [](const PolicyParams& p, const PolicyContext& c) {
            const LineGuidance guidance = p.text("guidance") == "attn_acc" ? LineGuidance::AttnAcc
                                                                           : LineGuidance::InterLine;
            return std::make_unique<LinearPolicy>(c, resolve_budget_tokens(p, c, "linear"), p.integer("n_init"),
                                                  p.integer("r"), p.text("cfg_decision") == "both", guidance);
          }};
}

}  // namespace kvs
