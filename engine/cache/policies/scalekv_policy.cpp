#include "engine/cache/policies/scalekv_policy.h"
#include "engine/cache/policies/calibration_provider.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/core/errors.h"

namespace kvs {
namespace {

int64_t square_side(int64_t tokens, const std::string& what) {
  const auto side = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(tokens))));
  if (side * side != tokens)
    throw InvalidArgumentError("policy scalekv: " + what + " " + std::to_string(tokens) + " is not a square");
  return side;
}

}  // namespace

std::vector<int64_t> patch_centroid_tokens(int64_t side, int64_t window) {
  const int64_t grid = square_side(window, "window");
  std::vector<int64_t> tokens;
  if (side < grid) {
    // Fewer rows than patches: every token is its own patch.
    for (int64_t i = 0; i < side * side; ++i) tokens.push_back(i);
    return tokens;
  }
  auto centre = [&](int64_t band) {
    const int64_t begin = band * side / grid, end = (band + 1) * side / grid;
    return (begin + end - 1) / 2;
  };
  for (int64_t r = 0; r < grid; ++r)
    for (int64_t c = 0; c < grid; ++c) tokens.push_back(centre(r) * side + centre(c));
  return tokens;
}

std::vector<int64_t> official_window_tokens(int64_t side, int64_t window) {
  const int64_t grid = square_side(window, "window");
  std::vector<int64_t> tokens;
  if (side < grid) return tokens;
  const int64_t patch = side / grid;
  for (int64_t r = 0; r < grid; ++r)
    for (int64_t c = 0; c < grid; ++c)
      tokens.push_back((r * patch + (patch - 1) / 2) * side + c * patch + (patch - 1) / 2);
  return tokens;
}

ScaleKvPolicy::ScaleKvPolicy(const PolicyContext& context, const ScaleKvOptions& options)
    : context_(context), options_(options), queries_(static_cast<size_t>(context.n_layer)) {
  scales_ = static_cast<int64_t>(context.unit_tokens.size());
  if (scales_ < 2) throw InvalidArgumentError("policy scalekv works on next-scale (VAR) models only");
  if (!(options.drafters >= 0 && options.drafters <= 1))
    throw InvalidArgumentError("policy scalekv: drafters " + std::to_string(options.drafters) +
                               " is impossible (a share of the layer-scale pairs, 0 <= drafters <= 1)");
  if (!(options.refiner_start > 0 && options.refiner_start <= 1))
    throw InvalidArgumentError("policy scalekv: refiner_start " + std::to_string(options.refiner_start) +
                               " is impossible (a share of the uniform budget, 0 < refiner_start <= 1)");
  if (!(options.decay >= 0 && options.decay <= 1))
    throw InvalidArgumentError("policy scalekv: decay " + std::to_string(options.decay) +
                               " is impossible (a share of the uniform budget per scale, 0 <= decay <= 1)");
  if (options.window < 1) throw InvalidArgumentError("policy scalekv: window must be >= 1");
  square_side(options.window, "window");
  if (options.kernel < 1 || options.kernel % 2 == 0)
    throw InvalidArgumentError("policy scalekv: kernel must be an odd number >= 1 (pooling with same padding), got " +
                               std::to_string(options.kernel));
  if (options.top_k < 1) throw InvalidArgumentError("policy scalekv: top_k must be >= 1");
  if (options.scoring == ScaleKvScoring::Official && options.pooling != ObservationPooling::Max)
    throw InvalidArgumentError(
        "policy scalekv: scoring=official max-pools the window's logits as the release does; pooling=avg applies to "
        "scoring=paper");
  if (options.budget <= options.window)
    throw InvalidArgumentError(
        "policy scalekv: budget " + std::to_string(options.budget) + " tokens is impossible: it must hold the " +
        std::to_string(options.window) + "-token observation window and at least one selected token: at least " +
        std::to_string(options.window + 1) + " tokens (rho >= " +
        std::to_string(static_cast<double>(options.window + 1) / context.image_tokens()).substr(0, 6) + ")");
  for (int64_t k = 0; k < scales_; ++k) {
    const int64_t side = square_side(context.unit_tokens[static_cast<size_t>(k)], "scale");
    windows_.push_back(options.scoring == ScaleKvScoring::Official ? official_window_tokens(side, options.window)
                                                                   : patch_centroid_tokens(side, options.window));
  }
  const std::shared_ptr<const LayerSelectivityProfile> profile =
      context.calibrations ? context.calibrations->layer_selectivity(options.top_k) : nullptr;
  if (profile && profile->top_k != options.top_k)
    throw InvalidArgumentError("policy scalekv: the attention selectivity calibration was measured with top_k=" +
                               std::to_string(profile->top_k) +
                               ", this policy asks top_k=" + std::to_string(options.top_k));
  plan(profile ? *profile : LayerSelectivityProfile::uniform(context, options.top_k));
  calibrated_ = profile != nullptr;
}

void ScaleKvPolicy::plan(const LayerSelectivityProfile& profile) {
  profile.check_matches(context_);
  const int64_t L = context_.n_layer, B = options_.budget;
  std::vector<int64_t> compressed;
  for (int64_t k = 0; k < scales_; ++k)
    if (context_.unit_begin(k + 1) > B) compressed.push_back(k);
  const auto pairs = static_cast<double>(L * static_cast<int64_t>(compressed.size()));
  drafter_ = profile.drafters(compressed, std::llround(options_.drafters * pairs));
  budgets_.assign(static_cast<size_t>(L * scales_), 0);
  max_budget_ = 0;
  for (int64_t k = 0; k < scales_; ++k) {
    const int64_t cached = context_.unit_begin(k + 1);  // c_k
    const bool compress = std::find(compressed.begin(), compressed.end(), k) != compressed.end();
    int64_t n_d = 0;
    for (int64_t l = 0; l < L; ++l) n_d += drafter_[index(l, k)];
    const int64_t n_r = L - n_d;
    int64_t b_d = cached, b_r = cached;
    if (compress && (n_d == 0 || n_r == 0)) {
      b_d = b_r = B;
    } else if (compress) {
      // Eq. 4 at this scale: refiners decay linearly from B_r(0), drafters take the rest.
      const double step = static_cast<double>(k - compressed.front());
      const double start = options_.refiner_start * static_cast<double>(B);
      b_r = std::max(window_size(k), static_cast<int64_t>(std::floor(start - options_.decay * B * step + 1e-9)));
      b_d = (L * B - n_r * b_r) / n_d;
      if (b_d > cached) {
        // The drafters keep everything; what they cannot use goes back to the refiners.
        b_d = cached;
        b_r = std::min(cached, (L * B - n_d * cached) / n_r);
      }
    }
    for (int64_t l = 0; l < L; ++l) {
      budgets_[index(l, k)] = drafter_[index(l, k)] != 0 ? b_d : b_r;
      if (compress) max_budget_ = std::max(max_budget_, budgets_[index(l, k)]);
    }
  }
  if (max_budget_ == 0) max_budget_ = context_.image_tokens();
}

int64_t ScaleKvPolicy::window_size(int64_t scale) const {
  const std::vector<int64_t>& tokens = windows_.at(static_cast<size_t>(scale));
  if (options_.scoring == ScaleKvScoring::Official && tokens.empty())
    return std::min(options_.window, context_.unit_begin(scale + 1));  // the cache's last entries
  return static_cast<int64_t>(tokens.size());
}

int64_t ScaleKvPolicy::layer_budget(int64_t layer, int64_t scale) const { return budgets_.at(index(layer, scale)); }

bool ScaleKvPolicy::is_drafter(int64_t layer, int64_t scale) const { return drafter_.at(index(layer, scale)) != 0; }

int64_t ScaleKvPolicy::max_entries() const {
  // A scale's entries arrive before its layer's cut.
  int64_t worst = context_.unit_tokens.front();
  for (int64_t k = 1; k < scales_; ++k) {
    int64_t kept = 0;
    for (int64_t l = 0; l < context_.n_layer; ++l) kept = std::max(kept, layer_budget(l, k - 1));
    worst = std::max(worst, kept + context_.unit_tokens[static_cast<size_t>(k)]);
  }
  return std::min(context_.image_tokens(), worst);
}

int64_t ScaleKvPolicy::initial_entries() const {
  return std::min(context_.image_tokens(), options_.budget + context_.unit_tokens.back());
}

void ScaleKvPolicy::after_token(KvStore&, int64_t) {
  throw InvalidArgumentError("policy scalekv works on next-scale (VAR) models only");
}

void ScaleKvPolicy::observe_queries(int64_t layer, int64_t, const at::Tensor& queries) {
  queries_.at(static_cast<size_t>(layer)) = queries;
}

at::Tensor ScaleKvPolicy::official_window(const ImageSlots& s, int64_t unit, at::Tensor* reads) const {
  const int64_t tokens = context_.unit_tokens.at(static_cast<size_t>(unit));
  const int64_t begin = context_.condition_tokens + context_.unit_begin(unit);
  const std::vector<int64_t>& window = windows_.at(static_cast<size_t>(unit));
  // reads[r][h][t]: how many of the segment's window entries read the unit's query t.
  *reads = at::zeros({s.is_image.size(0), s.is_image.size(1), tokens}, at::kFloat);
  if (!window.empty()) {
    at::Tensor in_window = at::zeros_like(s.is_image);
    for (int64_t t : window) {
      in_window = in_window | (s.positions == begin + t);
      reads->select(2, t).fill_(1.0f);
    }
    return in_window;
  }
  // A map with fewer rows than sqrt(N): the release takes the cache's last N
  // entries, and each reads the query of its own slot counted back from the end,
  // so the entries before the current map all read the map's first query
  // (scale_kv.py clamps their index to 0).
  const at::Tensor in_window = s.is_image & (s.rank >= (s.count - options_.window).unsqueeze(-1));
  const at::Tensor index = at::clamp(s.positions - begin, 0, tokens - 1);
  reads->scatter_add_(2, at::where(in_window, index, at::zeros_like(index)), in_window.to(at::kFloat));
  return in_window;
}

at::Tensor ScaleKvPolicy::official_scores(const KvStore& store, int64_t layer, const ImageSlots& s,
                                          const at::Tensor& in_window, const at::Tensor& reads,
                                          const at::Tensor& queries) const {
  const int64_t rows = store.rows(), kv = store.kv_heads(), d = store.head_dim(), length = s.length;
  const int64_t tokens = reads.size(2), group = queries.size(1) / kv;
  // The logits q K^T / sqrt(d) summed over the window's queries (and the query
  // heads of a key/value head) are the keys against the summed query: one
  // product per entry instead of one per query.
  const at::Tensor keys = store.keys(layer, length).to(at::kFloat);  // [rows, kv, L, D]
  const at::Tensor q = queries.narrow(0, 0, rows).to(keys.device(), at::kFloat).reshape({rows, kv, group, tokens, d});
  const at::Tensor summed = at::matmul(reads.to(keys.device()).unsqueeze(2), q.sum(2));  // [rows, kv, 1, D]
  at::Tensor logits = (at::matmul(keys, summed.transpose(-1, -2)).squeeze(-1) *
                       (1.0 / std::sqrt(static_cast<double>(d))))
                          .to(at::kCPU, at::kFloat);  // [rows, kv, L]
  // The window's entries are -inf before the pooling (and so are the slots that
  // hold no image entry): a window entry's score never reaches its neighbours.
  const float minus_inf = -std::numeric_limits<float>::infinity();
  const at::Tensor candidates = s.is_image & ~in_window;
  logits = at::where(candidates, logits, at::full_like(logits, minus_inf));
  const int64_t kernel = options_.kernel;
  const at::Tensor pooled =
      at::max_pool1d(logits.reshape({rows * kv, 1, length}), {kernel}, {1}, {kernel / 2}).reshape({rows, kv, length});
  return at::where(candidates, pooled, at::full_like(pooled, minus_inf));
}

void ScaleKvPolicy::after_unit_layer(KvStore& store, int64_t layer, int64_t unit) {
  const int64_t budget = layer_budget(layer, unit);
  ImageSlots s = image_slots(store, layer, context_.condition_tokens);
  if (s.count.max().item<int64_t>() <= budget) return;
  const at::Tensor& observed = queries_.at(static_cast<size_t>(layer));
  const bool have_queries = observed.defined() &&
                            observed.size(2) == context_.unit_tokens.at(static_cast<size_t>(unit));
  if (options_.scoring == ScaleKvScoring::Official) {
    at::Tensor reads;
    const at::Tensor in_window = official_window(s, unit, &reads);
    // Not observed (a policy change mid-run): the window stays, the oldest go.
    const at::Tensor scores = have_queries ? official_scores(store, layer, s, in_window, reads, observed)
                                           : at::zeros({store.rows(), store.kv_heads(), s.length}, at::kFloat);
    const at::Tensor candidates = s.is_image & ~in_window;
    const int64_t decide = decision_rows(store, context_);
    const at::Tensor evict = at::clamp_min(s.count.narrow(0, 0, decide) - budget, 0);
    apply_keep(store, layer, keep_all_but_lowest(scores.narrow(0, 0, decide), candidates.narrow(0, 0, decide), evict),
               context_);
    return;
  }
  // The observation window W: this scale's patch-centroid tokens, always kept.
  const int64_t begin = context_.condition_tokens + context_.unit_begin(unit);
  const std::vector<int64_t>& window = windows_.at(static_cast<size_t>(unit));
  at::Tensor in_window = at::zeros_like(s.is_image);
  for (int64_t t : window) in_window = in_window | (s.positions == begin + t);
  const at::Tensor candidates = s.is_image & ~in_window;
  const at::Tensor& queries = observed;
  at::Tensor scores;
  if (have_queries) {
    const at::Tensor index = at::tensor(window, at::TensorOptions().dtype(at::kLong)).to(queries.device());
    const int64_t last = begin + context_.unit_tokens.at(static_cast<size_t>(unit)) - 1;
    // The scale attends bidirectionally: every window query sees the whole cache.
    const std::vector<int64_t> positions(window.size(), last);
    scores = observation_importance(store, layer, queries.index_select(2, index), positions, candidates,
                                    options_.kernel, options_.pooling);
  } else {
    scores = at::zeros({store.rows(), store.kv_heads(), s.length}, at::kFloat);  // not observed: the oldest go
  }
  const int64_t decide = decision_rows(store, context_);
  const at::Tensor evict = at::clamp_min(s.count.narrow(0, 0, decide) - budget, 0);
  apply_keep(store, layer, keep_all_but_lowest(scores.narrow(0, 0, decide), candidates.narrow(0, 0, decide), evict),
             context_);
}

PolicyInfo scalekv_policy_info() {
  auto params = budget_param_specs("1/4");
  params.push_back(fraction_param("drafters", "1/6", 0, 1,
                                  "share of the compressed layer-scale pairs that are drafters (lowest selectivity "
                                  "Z-scores, Eq. 3)"));
  params.push_back(fraction_param("refiner_start", "0.92", 0, 1,
                                  "initial refiner budget B_r(0) as a share of the uniform budget (Eq. 4)"));
  params.push_back(fraction_param("decay", "0.11", 0, 1,
                                  "refiner budget decay delta per scale as a share of the uniform budget (Eq. 4)"));
  params.push_back(integer_param("window", "16", 1, 4096,
                                 "observation window: patches of the current token map (a square), their centroid "
                                 "tokens always kept"));
  params.push_back(integer_param("kernel", "5", 1, 63, "pooling kernel over slot order (odd)"));
  params.push_back(choice_param("pooling", "avg", {"avg", "max"},
                                "how the window's votes are smoothed with scoring=paper: average pooling (the paper) "
                                "or max pooling; scoring=official always max-pools"));
  params.push_back(choice_param("scoring", "paper", {"paper", "official"},
                                "how entries are scored: paper = Eq. 5, the softmax attention of the window's queries; "
                                "official = the authors' release, raw logits summed with the window masked before max "
                                "pooling"));
  params.push_back(integer_param("top_k", "16", 1, 65536,
                                 "K' of the Attention Selectivity Index's history term (the calibration's)"));
  return {{"scalekv",
           "ScaleKV: drafter / refiner layers per scale by attention selectivity, window-voted token selection",
           "Li et al. 2025 (ScaleKV, arXiv 2505.19602) §3.3, Eq. 2-5",
           params,
           {"scale"}},
          [](const PolicyParams& p, const PolicyContext& c) -> std::unique_ptr<CachePolicy> {
            ScaleKvOptions o;
            o.budget = resolve_budget_tokens(p, c, "scalekv");
            o.drafters = p.real("drafters");
            o.refiner_start = p.real("refiner_start");
            o.decay = p.real("decay");
            o.window = p.integer("window");
            o.kernel = p.integer("kernel");
            o.scoring = p.text("scoring") == "official" ? ScaleKvScoring::Official : ScaleKvScoring::Paper;
            // The release max-pools; pooling is the paper scoring's choice.
            const bool max_pool = p.explicitly_set("pooling") ? p.text("pooling") == "max"
                                                              : o.scoring == ScaleKvScoring::Official;
            o.pooling = max_pool ? ObservationPooling::Max : ObservationPooling::Average;
            o.top_k = p.integer("top_k");
            return std::make_unique<ScaleKvPolicy>(c, o);
          }};
}

}  // namespace kvs
