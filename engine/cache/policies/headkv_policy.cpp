#include "engine/cache/policies/headkv_policy.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "engine/cache/policies/line_saliency.h"
#include "engine/core/errors.h"
#include "engine/core/host_upload.h"

namespace kvs {
namespace {

std::string number_text(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

}  // namespace

HeadKvPolicy::HeadKvPolicy(const PolicyContext& context, const HeadKvOptions& options)
    : context_(context),
      options_(options),
      budget_(options.budget_tokens / context.grid_width * context.grid_width),
      window_(options.local_window > 0 ? options.local_window : 2 * context.grid_width),
      recent_(options.recent_lines * context.grid_width),
      max_entries_(0),
      line_queries_(context.n_layer),
      last_query_token_(context.n_layer, -1),
      grouped_rows_(context.n_layer, 0),
      global_(context.n_layer),
      global_budget_(context.n_layer) {
  const int64_t n = context.grid_width, big_n = context.image_tokens();
  const std::string grid = std::to_string(context.grid_height) + "x" + std::to_string(n) + " grid";
  if (!(options.tau > 0 && options.tau <= 1))
    throw InvalidArgumentError("policy headkv: tau " + number_text(options.tau) +
                               " is impossible (must be 0 < tau <= 1)");
  if (!(options.alpha >= 0 && options.alpha <= 1))
    throw InvalidArgumentError("policy headkv: alpha " + number_text(options.alpha) +
                               " is impossible (must be 0 <= alpha <= 1)");
  const int64_t last_length = context.condition_tokens + big_n - 1;  // longest cache an after_token sees
  if (options.threshold < 1 || options.threshold > last_length)
    throw InvalidArgumentError("policy headkv: threshold " + std::to_string(options.threshold) +
                               " is impossible (must be in 1.." + std::to_string(last_length) +
                               " cache entries, condition included, for a " + grid + ")");
  if (options.recent_lines < 1)
    throw InvalidArgumentError("policy headkv: recent_lines " + std::to_string(options.recent_lines) +
                               " is impossible: the recent window holds at least the line being generated (>= 1)");
  if (options.local_window != 0 && options.local_window < n)
    throw InvalidArgumentError("policy headkv: local_window " + std::to_string(options.local_window) +
                               " tokens is impossible: a local head's window holds the line being generated (" +
                               std::to_string(n) +
                               " tokens, the one-line buffer of periodic updates) and must be "
                               "at least that long (0 = two lines)");
  // Two lines at least: a local head keeps one line or more, and less than a global one.
  const int64_t minimum = std::max(recent_, 2 * n);
  if (budget_ < minimum)
    throw InvalidArgumentError(
        "policy headkv: budget " + std::to_string(options.budget_tokens) + " tokens is impossible: B (" +
        std::to_string(budget_) + " after rounding down to whole lines of " + std::to_string(n) + ") must hold the " +
        std::to_string(options.recent_lines) +
        " recent line(s) of global heads (the line being generated among "
        "them) and more than a local head's one line: at least " +
        std::to_string(minimum) + " tokens (rho >= " +
        std::to_string(static_cast<double>(minimum) / static_cast<double>(big_n)).substr(0, 6) + ")");
  // A local head's budget is "always smaller than that of global heads" (§5.1):
  // the default window is two lines, or one line less than B when B is shorter.
  if (options.local_window == 0) window_ = std::max(n, std::min(2 * n, budget_ - n));
  if (window_ >= budget_)
    throw InvalidArgumentError("policy headkv: local_window " + std::to_string(window_) +
                               " tokens is impossible with B = " + std::to_string(budget_) +
                               ": a local head keeps less than a global head (local_window must be in " +
                               std::to_string(n) + ".." + std::to_string(budget_ - 1) + ")");
  int64_t global_max = budget_;
  if (options.match_total && context.kv_heads > 1)
    global_max = context.kv_heads * budget_ - (context.kv_heads - 1) * window_;
  global_max = std::min(global_max, big_n);
  max_entries_ = std::min(big_n, std::max({options.threshold - context.condition_tokens, window_, global_max}));
}

int64_t HeadKvPolicy::initial_entries() const {
  return std::min(max_entries_, std::max(options_.threshold - context_.condition_tokens, budget_));
}

bool HeadKvPolicy::is_global(int64_t layer, int64_t row, int64_t head) const {
  const int64_t rows = grouped_rows_.at(layer);
  const int64_t kv = rows > 0 ? static_cast<int64_t>(global_.at(layer).size()) / rows : 0;
  if (row < 0 || row >= rows || head < 0 || head >= kv)
    throw InvalidArgumentError("policy headkv: no head type for layer " + std::to_string(layer) + ", row " +
                               std::to_string(row) + ", head " + std::to_string(head) + " (not grouped yet?)");
  return global_.at(layer)[row * kv + head] != 0;
}

int64_t HeadKvPolicy::global_budget(int64_t layer, int64_t row) const {
  if (row < 0 || row >= grouped_rows_.at(layer))
    throw InvalidArgumentError("policy headkv: no global budget for layer " + std::to_string(layer) + ", row " +
                               std::to_string(row) + " (not grouped yet?)");
  return global_budget_.at(layer)[row];
}

void HeadKvPolicy::observe_queries(int64_t layer, int64_t token_index, const at::Tensor& queries) {
  buffer_line_query(line_queries_[layer], queries, token_index % context_.grid_width, context_.grid_width);
  last_query_token_[layer] = token_index;
}

void HeadKvPolicy::after_token(KvStore& store, int64_t token_index) {
  const int64_t n = context_.grid_width;
  const int64_t cache_length = context_.condition_tokens + token_index + 1;
  const bool line_end = (token_index + 1) % n == 0;
  // Every layer decides first, then all evict together (one wait on a GPU).
  std::vector<at::Tensor> keeps(static_cast<size_t>(store.n_layer()));
  for (int64_t layer = 0; layer < store.n_layer(); ++layer) {
    if (grouped_rows_[layer] < decision_rows(store, context_)) {
      // Prefilling: nothing is evicted before the grouping step (which needs this step's query).
      if (cache_length < options_.threshold || last_query_token_[layer] != token_index) continue;
      group(store, layer, token_index);
      keeps[static_cast<size_t>(layer)] = compress(store, layer, token_index);
    } else if (line_end) {
      keeps[static_cast<size_t>(layer)] = compress(store, layer, token_index);
    }
  }
  apply_keeps(store, keeps, context_);
}

void HeadKvPolicy::group(const KvStore& store, int64_t layer, int64_t token_index) {
  const int64_t n = context_.grid_width, rows = store.rows(), kv = store.kv_heads();
  const int64_t group_size = context_.n_head / kv, cond = context_.condition_tokens;
  const int64_t length = store.max_length(layer);
  const int64_t current = cond + token_index;  // position of the current token
  const double scale = 1.0 / std::sqrt(static_cast<double>(store.head_dim()));
  // The current token's attention over the cache, per query head: [rows, kv, group, L].
  at::Tensor q = line_queries_[layer].narrow(0, 0, rows).narrow(2, token_index % n, 1).to(at::kFloat);
  q = q.reshape({rows, kv, group_size, store.head_dim()});
  at::Tensor keys = store.keys(layer, length).to(at::kFloat);
  at::Tensor positions = store.positions_tensor(layer).narrow(2, 0, length).contiguous();
  at::Tensor logits = at::matmul(q, keys.transpose(-1, -2)) * scale;
  at::Tensor present = (positions >= 0).to(logits.device()).unsqueeze(2);
  logits = logits.masked_fill(~present, -std::numeric_limits<float>::infinity());
  at::Tensor probs = at::softmax(logits, -1).to(at::kCPU, at::kDouble).contiguous();
  auto p = probs.accessor<double, 4>();
  auto pos = positions.accessor<int64_t, 3>();

  // Minimal span (in positions back from the current token) holding tau of the mass.
  auto span_of = [&](int64_t r, int64_t g, int64_t j) -> int64_t {
    double cond_mass = 0, image_mass = 0;
    for (int64_t s = 0; s < length; ++s) {
      if (pos[r][g][s] < 0) continue;
      (pos[r][g][s] < cond ? cond_mass : image_mass) += p[r][g][j][s];
    }
    double target = 0, sum = 0;
    switch (options_.cond_mass) {
      case CondMass::Exclude: target = options_.tau * image_mass; break;
      case CondMass::Free:
        target = options_.tau * (cond_mass + image_mass);
        sum = cond_mass;
        break;
      case CondMass::Include: target = options_.tau * (cond_mass + image_mass); break;
    }
    if (sum >= target) return 0;
    for (int64_t s = length - 1; s >= 0; --s) {  // slot order = position order: newest last
      if (pos[r][g][s] < cond) continue;
      sum += p[r][g][j][s];
      if (sum >= target) return current - pos[r][g][s] + 1;
    }
    return current - cond + 2;  // only reached with the condition (Include) or by rounding: beyond every image token
  };

  const int64_t decide = decision_rows(store, context_);
  const bool both = options_.decide_on_both && decide != rows;
  std::vector<uint8_t> types(decide * kv, 0);
  std::vector<int64_t> budgets(decide, budget_);
  for (int64_t r = 0; r < decide; ++r) {
    int64_t n_global = 0;
    for (int64_t g = 0; g < kv; ++g) {
      bool global = false;
      for (int64_t j = 0; j < group_size && !global; ++j) {
        global = span_of(r, g, j) >= window_;
        if (both) global = global || span_of(r + decide, g, j) >= window_;
      }
      types[r * kv + g] = global ? 1 : 0;
      n_global += global ? 1 : 0;
    }
    if (options_.match_total && n_global > 0) {
      const int64_t left = kv * budget_ - (kv - n_global) * window_;
      budgets[r] = std::min(left / n_global, context_.image_tokens());
    }
  }
  global_[layer] = std::move(types);
  global_budget_[layer] = std::move(budgets);
  grouped_rows_[layer] = decide;
}

at::Tensor HeadKvPolicy::compress(const KvStore& store, int64_t layer, int64_t token_index) {
  const int64_t n = context_.grid_width, rows = store.rows(), kv = store.kv_heads();
  const int64_t k = (token_index + 1) % n;  // tokens of the current line already in the cache
  const int64_t decide = decision_rows(store, context_);
  ImageSlots s = image_slots(store, layer, context_.condition_tokens);
  at::Tensor count = s.count.narrow(0, 0, decide).contiguous();
  auto c = count.accessor<int64_t, 2>();
  at::Tensor keep_last = at::zeros({decide, kv}, count.options());  // local: entries kept (newest)
  at::Tensor history = at::zeros({decide, kv}, count.options());    // global: oldest entries open to STE
  at::Tensor long_len = at::zeros({decide, kv}, count.options());
  at::Tensor evict_long = at::zeros({decide, kv}, count.options());
  at::Tensor evict_near = at::zeros({decide, kv}, count.options());
  at::Tensor global = at::zeros({decide, kv}, at::TensorOptions().dtype(at::kBool));
  auto kl = keep_last.accessor<int64_t, 2>();
  auto hi = history.accessor<int64_t, 2>();
  auto ll = long_len.accessor<int64_t, 2>();
  auto el = evict_long.accessor<int64_t, 2>();
  auto en = evict_near.accessor<int64_t, 2>();
  auto gl = global.accessor<bool, 2>();
  bool any_eviction = false, any_ste = false;
  for (int64_t r = 0; r < decide; ++r) {
    for (int64_t g = 0; g < kv; ++g) {
      const int64_t have = c[r][g];
      if (!is_global(layer, r, g)) {
        kl[r][g] = window_ - n + k;  // the window W holds the line under way
        any_eviction = any_eviction || have > kl[r][g];
        continue;
      }
      gl[r][g] = true;
      // The recent window (R lines) ends with the line under way: its k tokens and
      // the R - 1 lines before them are kept; the history is everything older.
      const int64_t target = global_budget(layer, r) - n + k;  // >= recent - n + k (checked at construction)
      const int64_t hist = std::max<int64_t>(0, have - (recent_ - n + k));
      const int64_t m = std::min(hist, std::max<int64_t>(0, have - target));
      const int64_t long_part = std::llround(options_.alpha * static_cast<double>(hist));
      int64_t m_long = std::min(long_part, static_cast<int64_t>(std::llround(options_.alpha * static_cast<double>(m))));
      int64_t m_near = m - m_long;
      if (m_near > hist - long_part) {
        m_long += m_near - (hist - long_part);
        m_near = hist - long_part;
      }
      hi[r][g] = hist;
      ll[r][g] = long_part;
      el[r][g] = m_long;
      en[r][g] = m_near;
      any_ste = any_ste || m > 0;
    }
  }
  if (!any_eviction && !any_ste) return at::Tensor();
  at::Tensor is_image = s.is_image.narrow(0, 0, decide), rank = s.rank.narrow(0, 0, decide);
  at::Tensor keep = ~is_image | (rank >= (count - keep_last).unsqueeze(-1));  // local heads: the newest entries
  if (any_ste) {
    // Stratified Token Eviction on the global heads' history: long-range = oldest part.
    at::Tensor hist_mask = is_image & (rank < history.unsqueeze(-1)) & global.unsqueeze(-1);
    at::Tensor long_mask = hist_mask & (rank < long_len.unsqueeze(-1));
    at::Tensor near_mask = hist_mask & ~long_mask;
    // The saliency of each part: the buffered line's queries, softmax over the
    // part's keys only, mean over the queries and grouped heads (line_saliency,
    // LineAR's formula), on the rows that decide.
    const int64_t scored = options_.decide_on_both ? rows : decide;
    auto all_rows = [&](const at::Tensor& m) { return scored == decide ? m : at::cat({m, m}, 0); };
    auto score = [&](const at::Tensor& part) {
      // On a GPU the scores stay there, and so do the ranking and the mask.
      at::Tensor sal = line_saliency(store, layer, line_queries_[layer], all_rows(part), scored,
                                     /*on_store_device=*/true);
      at::Tensor out = sal.narrow(0, 0, decide);
      if (options_.decide_on_both && decide != rows) out = out + sal.narrow(0, decide, decide);
      return out;
    };
    at::Tensor keep_global = keep_all_but_lowest(score(long_mask), long_mask, evict_long) &
                             keep_all_but_lowest(score(near_mask), near_mask, evict_near);
    const at::Device device = keep_global.device();
    keep = at::where(upload_without_wait(global.unsqueeze(-1), device), keep_global, upload_without_wait(keep, device));
  } else {
    keep = keep | global.unsqueeze(-1);
  }
  return keep;
}

int64_t headkv_default_threshold(int64_t image_tokens) {
  // A.2 gives T per model: 100 for LlamaGen and Janus-Pro (576 image tokens),
  // 300 for Lumina-mGPT at 768 px (2,352) and 500 at 1024 px (4,160).
  if (image_tokens <= 1024) return 100;
  if (image_tokens <= 3000) return 300;
  return 500;
}

PolicyInfo headkv_policy_info() {
  auto params = budget_param_specs("1/6");
  params.push_back(
      integer_param("threshold", "0", 0, 65536,
                    "cache length (condition included) at which heads are grouped; no compression before (0: "
                    "A.2's value for the image size: 100 up to 1,024 image tokens, 300 up to 3,000 (Lumina-mGPT "
                    "at 768 px), 500 above (1,024 px))"));
  params.push_back(
      real_param("tau", "0.9", 0.01, 1, "attention mass the span must hold, accumulated backwards (0 < tau <= 1)"));
  params.push_back(integer_param("local_window", "0", 0, 65536,
                                 "local window W in tokens, the line under way included: heads needing a shorter span "
                                 "are local and keep only W recent tokens (0 = two lines, or one line less than B when "
                                 "B is shorter)"));
  params.push_back(integer_param("recent_lines", "2", 1, 64,
                                 "recent lines R always kept by global heads, the line under way included"));
  params.push_back(fraction_param("alpha", "0.5", 0, 1,
                                  "long-range share of the history in Stratified Token Eviction (reconstruction: the "
                                  "paper's default was lost)"));
  params.push_back(choice_param("match_total", "false", {"true", "false"},
                                "false: global heads keep B and local heads only their window, as the paper (Table 4); "
                                "true: global heads also get what local heads leave, so the mean per head is B"));
  params.push_back(
      choice_param("cond_mass", "exclude", {"exclude", "free", "include"},
                   "condition token's attention in grouping: left out, counted as covered, or reached last"));
  params.push_back(choice_param("cfg_decision", "cond", {"cond", "both"},
                                "CFG pairs: decide on the conditional row, or on both rows"));
  return {{"headkv",
           "HeadKV: local heads keep a sliding window, global heads recent lines + stratified eviction",
           "Liang et al., HeadKV §4; memory: §5.1, Table 4",
           params,
           // Budgets and decisions count token lines: raster models only (VAR refuses them, supports_units()).
           {"raster"}},
          [](const PolicyParams& p, const PolicyContext& c) {
            HeadKvOptions o;
            o.budget_tokens = resolve_budget_tokens(p, c, "headkv");
            o.threshold = p.integer("threshold");
            if (o.threshold == 0) o.threshold = headkv_default_threshold(c.image_tokens());
            o.tau = p.real("tau");
            o.local_window = p.integer("local_window");
            o.recent_lines = p.integer("recent_lines");
            o.alpha = p.real("alpha");
            o.match_total = p.text("match_total") == "true";
            const std::string cm = p.text("cond_mass");
            o.cond_mass = cm == "free" ? CondMass::Free : cm == "include" ? CondMass::Include : CondMass::Exclude;
            o.decide_on_both = p.text("cfg_decision") == "both";
            return std::make_unique<HeadKvPolicy>(c, o);
          }};
}

}  // namespace kvs
