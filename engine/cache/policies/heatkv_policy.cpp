#include "engine/cache/policies/heatkv_policy.h"
#include "engine/cache/policies/calibration_provider.h"

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "engine/cache/policies/scale_attention_profile.h"
#include "engine/core/errors.h"

namespace kvs {
namespace {

// Heads (layer * H + head) sorted ascending by score; ties: the lower head
// index first, then the lower layer (the official compute_scas.py sorts by
// (score, head, layer)).
std::vector<int64_t> order_by(const std::vector<double>& score, int64_t heads) {
  std::vector<int64_t> order(score.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    const double sa = score[static_cast<size_t>(a)], sb = score[static_cast<size_t>(b)];
    if (sa != sb) return sa < sb;
    if (a % heads != b % heads) return a % heads < b % heads;
    return a / heads < b / heads;
  });
  return order;
}

}  // namespace

HeatKvPolicy::HeatKvPolicy(const PolicyContext& context, const HeatKvOptions& options)
    : context_(context), options_(options) {
  scales_ = static_cast<int64_t>(context.unit_tokens.size());
  if (scales_ < 2) throw InvalidArgumentError("policy heatkv works on next-scale (VAR) models only");
  if (!(options.budget > 0 && options.budget <= 1))
    throw InvalidArgumentError("policy heatkv: budget " + std::to_string(options.budget) +
                               " is impossible (a fraction of the cache, 0 < budget <= 1)");
  if (options.sinks < 0 || options.sinks > scales_ - 2)
    throw InvalidArgumentError("policy heatkv: sinks " + std::to_string(options.sinks) + " is impossible (0.." +
                               std::to_string(scales_ - 2) + " sink scales for " + std::to_string(scales_) +
                               " scales)");
  if (options.calibration_images < 0)
    throw InvalidArgumentError("policy heatkv: calibration_images " + std::to_string(options.calibration_images) +
                               " is impossible (0: the default calibration, N > 0: N calibration classes)");
  if (!(options.calibration_cfg >= 0) || !std::isfinite(options.calibration_cfg))
    throw InvalidArgumentError("policy heatkv: calibration_cfg " + std::to_string(options.calibration_cfg) +
                               " is impossible (0: the run's CFG, else a CFG scale >= 0)");
  sink_tokens_ = context.unit_begin(options.sinks);
  const int64_t cached = context.unit_begin(scales_ - 1);  // c_{K-1}
  const double per_head = options.budget * static_cast<double>(cached);
  if (per_head + 1e-9 < static_cast<double>(sink_tokens_))
    throw InvalidArgumentError("policy heatkv: budget " + std::to_string(options.budget) + " is impossible: the " +
                               std::to_string(options.sinks) + " sink scales alone hold " +
                               std::to_string(sink_tokens_) + " of " + std::to_string(cached) +
                               " cached tokens per head (budget >= " +
                               std::to_string(static_cast<double>(sink_tokens_) / static_cast<double>(cached)) + ")");
  total_budget_ = static_cast<int64_t>(
      std::floor(per_head * static_cast<double>(context.n_layer * context.kv_heads) + 1e-9));
  const std::shared_ptr<const ScaleAttentionProfile> profile =
      context.calibrations ? context.calibrations->scale_attention(options.calibration_images, options.calibration_cfg)
                           : nullptr;
  if (!profile)
    throw InvalidArgumentError(
        "policy heatkv needs this model's scale-attention calibration: run 'kvstudio-cli calibrate "
        "--policy heatkv --model DIR' (or let the session calibrate it)");
  profile->check_matches(context);
  plan(*profile);
}

int64_t HeatKvPolicy::budget_tokens() const { return context_.unit_begin(scales_ - 1); }

int64_t HeatKvPolicy::initial_entries() const {
  const auto per_head = static_cast<int64_t>(std::ceil(options_.budget * static_cast<double>(budget_tokens())));
  return std::min(context_.image_tokens(), per_head + context_.unit_tokens.back());
}

void HeatKvPolicy::after_token(KvStore&, int64_t) {
  throw InvalidArgumentError("policy heatkv works on next-scale (VAR) models only");
}

bool HeatKvPolicy::absent_at_start(int64_t scale, int64_t source, int64_t layer, int64_t head) const {
  return start_.at(static_cast<size_t>(scale))[index(source, layer, head)] != 0;
}

bool HeatKvPolicy::absent_at_end(int64_t scale, int64_t source, int64_t layer, int64_t head) const {
  return end_.at(static_cast<size_t>(scale))[index(source, layer, head)] != 0;
}

// CachedTokens(k, l, h, P) = c_s + sum over non-sink sources i <= k of t_i [(i, l, h) not in P].
int64_t HeatKvPolicy::cached_tokens(const HeadScaleSet& absent, int64_t scale, int64_t layer, int64_t head) const {
  int64_t n = sink_tokens_;
  for (int64_t i = options_.sinks; i <= scale; ++i)
    if (absent[index(i, layer, head)] == 0) n += context_.unit_tokens[static_cast<size_t>(i)];
  return n;
}

int64_t HeatKvPolicy::planned_size_after_layer(int64_t scale, int64_t layer) const {
  int64_t m = 0;
  for (int64_t l = 0; l < context_.n_layer; ++l)
    for (int64_t h = 0; h < context_.kv_heads; ++h)
      m += l <= layer ? cached_tokens(end_.at(static_cast<size_t>(scale)), scale, l, h)
                      : cached_tokens(start_.at(static_cast<size_t>(scale)), scale - 1, l, h);
  return m;
}

void HeatKvPolicy::plan(const ScaleAttentionProfile& profile) {
  const int64_t L = context_.n_layer, H = context_.kv_heads, T = L * H, s = options_.sinks, K = scales_;
  const auto set_size = static_cast<size_t>(K * T);
  const double cached = static_cast<double>(context_.unit_begin(K - 1));
  const auto B = static_cast<double>(total_budget_);

  std::vector<double> cas(static_cast<size_t>(T));
  for (int64_t l = 0; l < L; ++l)
    for (int64_t h = 0; h < H; ++h) cas[static_cast<size_t>(l * H + h)] = profile.cas(l, h, s);
  const std::vector<int64_t> order = order_by(cas, H);
  std::vector<std::vector<int64_t>> source_order(static_cast<size_t>(K));
  std::vector<std::vector<int64_t>> source_rank(static_cast<size_t>(K), std::vector<int64_t>(static_cast<size_t>(T)));
  std::vector<int64_t> head_rank(static_cast<size_t>(T));
  for (int64_t r = 0; r < T; ++r) head_rank[static_cast<size_t>(order[static_cast<size_t>(r)])] = r;
  for (int64_t i = s; i <= K - 2; ++i) {
    std::vector<double> scas(static_cast<size_t>(T));
    for (int64_t l = 0; l < L; ++l)
      for (int64_t h = 0; h < H; ++h) scas[static_cast<size_t>(l * H + h)] = profile.scas(l, h, i);
    source_order[static_cast<size_t>(i)] = order_by(scas, H);
    for (int64_t r = 0; r < T; ++r)
      source_rank[static_cast<size_t>(i)]
                 [static_cast<size_t>(source_order[static_cast<size_t>(i)][static_cast<size_t>(r)])] = r;
  }

  HeadScaleSet previous(set_size, 0);  // G_{k-1}
  for (int64_t k = 0; k <= K - 2; ++k) {
    int64_t n = 0;
    if (k >= s) {
      const double ck = static_cast<double>(context_.unit_begin(k + 1));
      n = static_cast<int64_t>(std::ceil(
          static_cast<double>(T) * (ck - options_.budget * cached) / (ck - static_cast<double>(sink_tokens_)) - 1e-9));
      n = std::clamp<int64_t>(n, 0, T);
    }
    n_prune_.push_back(n);
    HeadScaleSet g(set_size, 0);
    // In head terms a binary head of G_{k-1} also drops source k: extend it.
    HeadScaleSet before = previous;
    struct Candidate {
      int64_t layer, source, rank;
      std::vector<size_t> members;
    };
    std::vector<Candidate> candidates;
    if (options_.binary) {
      for (int64_t r = 0; r < n; ++r) {
        const int64_t head = order[static_cast<size_t>(r)], l = head / H, h = head % H;
        const bool was_pruned = k > s && previous[index(s, l, h)] != 0;
        Candidate c{l, k, r, {}};
        for (int64_t i = s; i <= k; ++i) {
          g[index(i, l, h)] = 1;
          if (was_pruned) before[index(i, l, h)] = 1;
          else c.members.push_back(index(i, l, h));
        }
        if (!was_pruned) candidates.push_back(std::move(c));
      }
    } else {
      for (int64_t i = s; i <= k; ++i)
        for (int64_t r = 0; r < n; ++r) {
          const int64_t head = source_order[static_cast<size_t>(i)][static_cast<size_t>(r)];
          const size_t at = index(i, head / H, head % H);
          g[at] = 1;
          // Scale k itself is not in the cache before it starts: not a candidate for early pruning.
          if (previous[at] == 0 && i < k) candidates.push_back({head / H, i, r, {at}});
        }
    }
    // GreedyEarlyPruning: by layer descending, source scale descending, rank ascending.
    std::stable_sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
      if (a.layer != b.layer) return a.layer > b.layer;
      if (a.source != b.source) return a.source > b.source;
      return a.rank < b.rank;
    });
    HeadScaleSet absent = before;  // A_k, grows with E_k
    int64_t early = 0;
    size_t next = 0;
    auto pop = [&] {
      for (size_t m : candidates[next].members) absent[m] = 1;
      ++next;
      ++early;
    };
    if (options_.naive) {
      while (next < candidates.size()) pop();
    } else {
      // The cache after `layer` ran scale k: layers up to it hold G_k's
      // retention with scale k appended; the layers after it still hold A_k's
      // retention of the scales before k (scale k is not in them yet), as the
      // official schedule counts (tools/utils.py of arm-research/heatkv).
      std::vector<int64_t> size_g(static_cast<size_t>(L), 0), size_a(static_cast<size_t>(L), 0);
      auto layer_size = [&](const HeadScaleSet& set, int64_t through, int64_t l) {
        int64_t m = 0;
        for (int64_t h = 0; h < H; ++h) m += cached_tokens(set, through, l, h);
        return m;
      };
      for (int64_t l = 0; l < L; ++l) {
        size_g[static_cast<size_t>(l)] = layer_size(g, k, l);
        size_a[static_cast<size_t>(l)] = layer_size(absent, k - 1, l);
      }
      for (int64_t layer = 0; layer < L; ++layer) {
        for (;;) {
          int64_t m = 0;
          for (int64_t l = 0; l < L; ++l)
            m += l <= layer ? size_g[static_cast<size_t>(l)] : size_a[static_cast<size_t>(l)];
          if (static_cast<double>(m) <= B) break;
          // A candidate of a layer that already ran is removed by G_k anyway: skipped.
          while (next < candidates.size() && candidates[next].layer <= layer) ++next;
          if (next >= candidates.size())
            throw InvalidArgumentError("policy heatkv: no early pruning keeps scale " + std::to_string(k) +
                                       " within budget " + std::to_string(options_.budget) + " after layer " +
                                       std::to_string(layer) + " (a larger budget or fewer sinks)");
          const int64_t l = candidates[next].layer;
          pop();
          size_a[static_cast<size_t>(l)] = layer_size(absent, k - 1, l);
        }
      }
    }
    early_count_.push_back(early);
    start_.push_back(absent);
    end_.push_back(g);
    previous = g;
  }
  // The last scale: nothing new is planned; its entries are never cached.
  n_prune_.push_back(n_prune_.back());
  early_count_.push_back(0);
  HeadScaleSet last_start = previous, last_end = previous;
  if (options_.binary)
    for (int64_t l = 0; l < L; ++l)
      for (int64_t h = 0; h < H; ++h)
        if (K - 2 >= s && previous[index(s, l, h)] != 0) last_start[index(K - 1, l, h)] = 1;
  for (int64_t l = 0; l < L; ++l)
    for (int64_t h = 0; h < H; ++h) last_end[index(K - 1, l, h)] = 1;
  start_.push_back(last_start);
  end_.push_back(last_end);
}

void HeatKvPolicy::evict(KvStore& store, int64_t layer, const HeadScaleSet& absent, int64_t max_source) const {
  const int64_t H = store.kv_heads();
  // table[h][u + 1]: entry of scale u in head h must go (column 0: empty slots).
  std::vector<uint8_t> table(static_cast<size_t>(H * (scales_ + 1)), 0);
  bool any = false;
  for (int64_t h = 0; h < H; ++h)
    for (int64_t u = 0; u <= max_source; ++u)
      if (absent[index(u, layer, h)] != 0) {
        table[static_cast<size_t>(h * (scales_ + 1) + u + 1)] = 1;
        any = true;
      }
  if (!any) return;
  const at::Tensor units = unit_of_slots(store, layer, context_);  // [rows, H, len]
  if (units.size(2) == 0) return;
  const at::Tensor lookup = at::tensor(std::vector<int64_t>(table.begin(), table.end()),
                                       at::TensorOptions().dtype(at::kLong))
                                .reshape({1, H, scales_ + 1});
  const at::Tensor drop = lookup.expand({units.size(0), H, scales_ + 1}).gather(2, units + 1) != 0;
  if (!drop.any().item<bool>()) return;
  store.retain(layer, ~drop);
}

void HeatKvPolicy::before_unit_attention(KvStore& store, int64_t layer, int64_t unit) {
  if (layer != 0) return;
  // Before scale `unit` starts: A_k (G_{k-1} and the early-pruned E_k) leaves
  // every layer; the scale's own entries stay for its self-attention.
  const HeadScaleSet& absent = start_.at(static_cast<size_t>(unit));
  for (int64_t l = 0; l < store.n_layer(); ++l) evict(store, l, absent, unit - 1);
}

void HeatKvPolicy::after_unit_layer(KvStore& store, int64_t layer, int64_t unit) {
  evict(store, layer, end_.at(static_cast<size_t>(unit)), unit);
}

PolicyInfo heatkv_policy_info() {
  std::vector<PolicyParamSpec> params = {
      fraction_param("budget", "0.1", 0, 1,
                     "share b of the cache kept over all heads (the last scale is never cached)"),
      integer_param("sinks", "3", 0, 1e6, "first scales every head keeps as attention sinks"),
      choice_param("variant", "scale", {"scale", "binary"},
                   "scale: each head drops the source scales it needs least; binary: whole heads keep only the sinks"),
      choice_param("pruning", "greedy", {"greedy", "naive"},
                   "greedy: evict early only what keeps the budget after every layer; naive: evict all of a scale's "
                   "pruning before it starts"),
      integer_param("calibration_images", "0", 0, 1e6,
                    "classes the S-CAS ranking is calibrated on: 0 = those of the bundle's heatkv_calibration.json "
                    "(else 2 classes); N = N classes spread over the model's; measured on first use unless the "
                    "bundle's file was made on them at the calibration's CFG and seed 0"),
      real_param("calibration_cfg", "0", 0, 1000,
                 "CFG scale the S-CAS calibration is measured at: 0 = the run's own CFG (the heads are ranked on the "
                 "attention of the runs they compress)"),
  };
  return {{"heatkv",
           "HeatKV: calibrated per-head scale importance, pruned to a strict budget after every layer",
           "HeatKV §3 (Eq. 2-5, Algorithms 1-2)",
           params,
           {"scale"}},
          [](const PolicyParams& p, const PolicyContext& c) -> std::unique_ptr<CachePolicy> {
            HeatKvOptions o;
            o.budget = p.real("budget");
            o.sinks = p.integer("sinks");
            o.binary = p.text("variant") == "binary";
            o.naive = p.text("pruning") == "naive";
            o.calibration_images = p.integer("calibration_images");
            o.calibration_cfg = p.real("calibration_cfg");
            return std::make_unique<HeatKvPolicy>(c, o);
          }};
}

void check_heatkv_calibration_images(int64_t images, int64_t num_classes) {
  if (images < 0 || images > num_classes)
    throw InvalidArgumentError("policy heatkv: calibration_images " + std::to_string(images) +
                               " is impossible (0: the default calibration, else 1.." + std::to_string(num_classes) +
                               ": the model has " + std::to_string(num_classes) + " classes)");
}

int64_t heatkv_calibration_images(const std::string& spec, int64_t num_classes) {
  return heatkv_calibration_images(parse_policy_spec(spec), num_classes);
}

int64_t heatkv_calibration_images(const PolicySpec& parsed, int64_t num_classes) {
  if (parsed.name != "heatkv") return 0;
  const PolicyInfo& info = find_policy(parsed.name);
  const int64_t images = PolicyParams(parsed.params, info.params, info.name).integer("calibration_images");
  check_heatkv_calibration_images(images, num_classes);
  return images;
}

double heatkv_calibration_cfg(const std::string& spec, double run_cfg) {
  const PolicySpec parsed = parse_policy_spec(spec);
  if (parsed.name != "heatkv") return run_cfg;
  const PolicyInfo& info = find_policy(parsed.name);
  const double cfg = PolicyParams(parsed.params, info.params, info.name).real("calibration_cfg");
  return cfg > 0 ? cfg : run_cfg;
}

}  // namespace kvs
