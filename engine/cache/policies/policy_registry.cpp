#include "engine/cache/policies/policy_registry.h"

#include <cmath>
#include <sstream>

#include "engine/cache/policies/amskv_policy.h"
#include "engine/cache/policies/full_policy.h"
#include "engine/cache/policies/h2o_policy.h"
#include "engine/cache/policies/hack_policy.h"
#include "engine/cache/policies/headkv_policy.h"
#include "engine/cache/policies/heatkv_policy.h"
#include "engine/cache/policies/linear_policy.h"
#include "engine/cache/policies/random_policy.h"
#include "engine/cache/policies/rkv_policy.h"
#include "engine/cache/policies/scale_groups_policy.h"
#include "engine/cache/policies/scalekv_policy.h"
#include "engine/cache/policies/snapkv_policy.h"
#include "engine/cache/policies/streaming_policy.h"
#include "engine/core/errors.h"
#include "engine/core/number_parsing.h"

namespace kvs {
namespace {

std::string join_names(const std::vector<PolicyParamSpec>& specs) {
  std::string out;
  for (const auto& s : specs) out += (out.empty() ? "" : ", ") + s.name;
  return out.empty() ? "none" : out;
}

// LazyMAR's feature caches are built by the masked family (make_masked_feature_cache,
// lazymar_policy.h, a floor above this one); the registry holds only what it
// states about itself, so that the CLI, the window and the family's checks list
// and validate it with every other policy.
PolicyInfo lazymar_policy_info() {
  std::vector<PolicyParamSpec> params = {
      integer_param("start", "5", 0, 4096,
                    "steps before this 0-based step compute everything, and it is the first refresh (paper: 5 for 64 "
                    "steps, 4 for 32)"),
      integer_param("interval", "9", 1, 4096,
                    "refresh interval tau: a full computation every tau steps from start, the steps between reuse the "
                    "caches (paper: 9 for 64 steps, 5 for 32)"),
      choice_param("retention", "official", {"official", "constant"},
                   "fraction of tokens recomputed at lazy steps: the official 64-step table stretched over the step "
                   "count, or the constant ratio"),
      fraction_param("ratio", "1/4", 0.01, 1,
                     "recomputed fraction of the tokens at lazy steps when retention=constant (0 < ratio <= 1)"),
      integer_param("extra", "15", 0, 4096,
                    "tokens recomputed on top of those predicted at this and the previous step (official minimum)"),
      integer_param("layer", "3", 0, 64,
                    "0-based decoder block whose value similarity selects the tokens (the last block on shallower "
                    "decoders)"),
      choice_param("selection", "max_similarity",
                   {"max_similarity", "min_similarity", "random", "predicted", "unpredicted"},
                   "tokens that reuse their features at lazy steps (Table 3): the most similar (LazyMAR), the least "
                   "similar, random ones (Figure 6's random cache), the predicted or the unpredicted ones; the tokens "
                   "predicted now and at the previous step are always recomputed"),
      choice_param("token_cache", "on", {"on", "off"},
                   "reuse the features of tokens whose values barely changed (off: every token is recomputed)"),
      choice_param("condition_cache", "on", {"on", "off"},
                   "reuse the unconditional-minus-conditional difference so lazy steps run only the conditional "
                   "branch"),
      choice_param("head_cache", "off", {"on", "off"},
                   "diffusion-head cache of the official code: reuse the head's block outputs and CFG difference "
                   "between full head steps"),
      integer_param("head_threshold", "7", 1, 1000,
                    "with head_cache=on, the head runs in full at its first reverse step and every step t with t % "
                    "head_threshold == 0 (official 7)"),
  };
  return {{"lazymar",
           "LazyMAR (masked models): token cache by layer-3 value similarity + CFG condition cache, periodic refresh; "
           "optional diffusion-head cache",
           "Yan et al. 2025 (LazyMAR) §3.2.1 token cache, §3.2.2 condition cache, §4.1 settings, §4.4 selection "
           "ablation (Table 3, Figure 6); head cache: official models/diffloss_cached.py",
           params,
           {"masked"}},
          [](const PolicyParams&, const PolicyContext&) -> std::unique_ptr<CachePolicy> {
            throw InvalidArgumentError(
                "policy lazymar is a feature cache for masked (MAR) models; raster and next-scale models take "
                "KV-cache policies (see kvstudio-cli policies)");
          }};
}

}  // namespace

PolicyParams::PolicyParams(std::map<std::string, std::string> values, const std::vector<PolicyParamSpec>& specs,
                           const std::string& policy)
    : set_(values), policy_(policy) {
  for (const auto& [k, v] : values) {
    const PolicyParamSpec* spec = nullptr;
    for (const auto& s : specs)
      if (s.name == k) spec = &s;
    if (spec == nullptr)
      throw InvalidArgumentError("policy " + policy + ": unknown parameter '" + k +
                                 "' (parameters: " + join_names(specs) + ")");
    if (spec->kind != PolicyParamKind::Choice) {
      const auto number = parse_number_text(v);
      if (!number)
        throw InvalidArgumentError("policy " + policy + ": parameter " + k + " expects a number, got '" + v + "'");
      if (spec->kind == PolicyParamKind::Integer && *number != std::floor(*number))
        throw InvalidArgumentError("policy " + policy + ": parameter " + k + " expects an integer, got '" + v + "'");
    } else {
      bool ok = false;
      for (const auto& c : spec->choices) ok = ok || c == v;
      if (!ok) {
        std::string choices;
        for (const auto& c : spec->choices) choices += (choices.empty() ? "" : ", ") + c;
        throw InvalidArgumentError("policy " + policy + ": parameter " + k + " must be one of " + choices + ", got '" +
                                   v + "'");
      }
    }
  }
  for (const auto& s : specs) values_[s.name] = values.count(s.name) ? values.at(s.name) : s.default_value;
}

double PolicyParams::real(const std::string& name) const {
  auto it = values_.find(name);
  const auto v = it == values_.end() ? std::nullopt : parse_number_text(it->second);
  if (!v) throw InvalidArgumentError("policy " + policy_ + ": parameter " + name + " is not set");
  return *v;
}

int64_t PolicyParams::integer(const std::string& name) const { return static_cast<int64_t>(std::llround(real(name))); }

std::string PolicyParams::text(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) throw InvalidArgumentError("policy " + policy_ + ": parameter " + name + " is not set");
  return it->second;
}

int64_t resolve_budget_tokens(const PolicyParams& params, const PolicyContext& context, const std::string& policy) {
  const int64_t n = context.image_tokens();
  if (params.explicitly_set("budget") && params.integer("budget") != 0) {
    const int64_t b = params.integer("budget");
    if (b <= 0 || b > n)
      throw InvalidArgumentError("policy " + policy + ": budget " + std::to_string(b) +
                                 " tokens is impossible (must be in 1.." + std::to_string(n) + " for a " +
                                 std::to_string(context.grid_height) + "x" + std::to_string(context.grid_width) +
                                 " grid)");
    return b;
  }
  const double rho = params.real("rho");
  if (!(rho > 0 && rho <= 1))
    throw InvalidArgumentError("policy " + policy + ": rho " + params.text("rho") +
                               " is impossible (must be 0 < rho <= 1)");
  const int64_t b = static_cast<int64_t>(std::floor(rho * static_cast<double>(n) + 1e-9));
  if (b <= 0) throw InvalidArgumentError("policy " + policy + ": rho " + params.text("rho") + " leaves no tokens");
  return b;
}

const std::vector<PolicyInfo>& policy_registry() {
  static const std::vector<PolicyInfo> registry = {full_policy_info(),         streaming_policy_info(),
                                                   random_policy_info(),       linear_policy_info(),
                                                   headkv_policy_info(),       amskv_policy_info(),
                                                   scale_groups_policy_info(), heatkv_policy_info(),
                                                   scalekv_policy_info(),      hack_policy_info(),
                                                   lazymar_policy_info(),      h2o_policy_info(),
                                                   snapkv_policy_info(),       rkv_policy_info()};
  return registry;
}

const PolicyInfo& find_policy(const std::string& name) {
  std::string known;
  for (const auto& info : policy_registry()) {
    if (info.name == name) return info;
    known += (known.empty() ? "" : ", ") + info.name;
  }
  throw InvalidArgumentError("unknown cache policy '" + name + "' (available: " + known + ")");
}

std::unique_ptr<CachePolicy> make_policy(const std::string& text, const PolicyContext& context) {
  return make_policy(parse_policy_spec(text), context);
}

std::unique_ptr<CachePolicy> make_policy(const PolicySpec& spec, const PolicyContext& context) {
  const PolicyInfo& info = find_policy(spec.name);
  return info.create(PolicyParams(spec.params, info.params, info.name), context);
}

}  // namespace kvs
