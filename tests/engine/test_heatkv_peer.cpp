// HeatKV beside the official code (arm-research/heatkv, commit 96dc288). Its
// pruning runs only on CUDA with Triton, head width 128 and Infinity's 13-scale
// 1:1 schedule; without a GPU the peer here is a re-implementation of its
// selection rule, written from the official schedule code and structured as it
// is, not as HeatKvPolicy is:
//   - compute_scas.py: S-CAS[l, h, s] = the attention mass of every later scale
//     t (sink < t <= K-1) on source scale s, averaged over t (and prompts);
//     one order per source scale s in [sink, K-2], ascending by (score, head,
//     layer);
//   - utils.py pruned_heads_for_budget: P = tokens of scales 0..K-2,
//     I_j = tokens of scales 0..j-1, x_j = ceil(T (I_j - b P) / (I_j - c_sink))
//     (0 when I_j <= b P), clipped to [0, T]; after scale t the first x_{t+1}
//     pairs of every source order s <= min(K-2, t) are gone (G_t);
//   - utils.py strict_pruning_schedule_for_budget_scale_specific: during scale
//     t, after each layer l, the logical total (sinks in every head; each
//     non-sink source scale in every head that keeps it, G_t for layers <= l,
//     the active set for later ones; scale t counted only in layers <= l) must
//     not exceed b T P, else atoms of G_t are activated early one at a time
//     (layer descending, source descending, rank ascending; never a layer <= l,
//     never source t). The set in force during scale t is G_{t-1} plus those.
// The tests compare that schedule with HeatKvPolicy's plan on the official
// geometries (2B: 32 layers x 16 heads, 8B: 40 x 28) and budgets, check the
// counts against what the official schedule code prints for them, and check
// that a generation on an Infinity of the official shape (head width 128, the
// 13 scales of 1M at 1:1) keeps exactly the positions the schedule says.
// A run of the official Triton path on a GPU is the comparison this stands in
// for (docs/policies.md#heatkv).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <numeric>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "engine/cache/policies/calibration_provider.h"
#include "engine/cache/policies/heatkv_policy.h"
#include "engine/cache/policies/policy_registry.h"
#include "engine/cache/policies/scale_attention_profile.h"
#include "engine/io/model_bundle.h"
#include "engine/models/generation_session.h"
#include "engine/models/infinity/infinity_calibration.h"
#include "engine/models/infinity/infinity_model.h"
#include "engine/models/infinity/infinity_random_init.h"
#include "tests/engine/scale_context.h"
#include "tests/engine/test_helpers.h"

using namespace kvs;

namespace {

// Infinity's 13 scales of the 1M budget at 1:1 (the schedule the official code hard-codes).
const std::vector<int64_t> kOneMegapixel = {1, 4, 16, 36, 64, 144, 256, 400, 576, 1024, 1600, 2304, 4096};

// A calibration with attention spread by a fixed hash, with exact ties between
// some heads (the order's tie-break matters) and softmax-like rows.
ScaleAttentionProfile hashed_profile(const PolicyContext& c, uint64_t salt) {
  ScaleAttentionProfile p = ScaleAttentionProfile::uniform(c);
  auto weight = [&](int64_t l, int64_t h, int64_t k2) {
    // Heads 2m and 2m+1 of even layers lean alike: ties in every order.
    const int64_t head = (l % 2 == 0) ? h / 2 : h;
    uint64_t x = salt ^ (static_cast<uint64_t>(l) * 1000003u) ^ (static_cast<uint64_t>(head) * 7919u) ^
                 (static_cast<uint64_t>(k2) * 104729u);
    x ^= x >> 13;
    x *= 0x9E3779B97F4A7C15ull;
    x ^= x >> 29;
    return 0.05 + static_cast<double>(x % 1000) / 1000.0;
  };
  for (int64_t l = 0; l < p.layers; ++l)
    for (int64_t h = 0; h < p.heads; ++h)
      for (int64_t k1 = 0; k1 < p.scales(); ++k1) {
        double sum = 0;
        for (int64_t k2 = 0; k2 <= k1; ++k2) sum += weight(l, h, k2);
        for (int64_t k2 = 0; k2 <= k1; ++k2) p.beta_at(l, h, k1, k2) = weight(l, h, k2) / sum;
      }
  return p;
}

// The official schedule, re-implemented (see the file's comment).
class OfficialSchedule {
 public:
  OfficialSchedule(const ScaleAttentionProfile& profile, double budget, int64_t sink)
      : L_(profile.layers), H_(profile.heads), K_(profile.scales()), tokens_(profile.unit_tokens), sink_(sink) {
    const int64_t T = L_ * H_, last_source = K_ - 2;
    // compute_scas.py: scores and one order of (head, layer) pairs per source scale.
    orders_.resize(static_cast<size_t>(K_));
    for (int64_t s = sink_; s <= last_source; ++s) {
      std::vector<std::tuple<double, int64_t, int64_t>> scored;  // (score, head, layer)
      for (int64_t l = 0; l < L_; ++l)
        for (int64_t h = 0; h < H_; ++h) {
          double sum = 0;
          for (int64_t t = s + 1; t <= K_ - 1; ++t) sum += profile.beta_at(l, h, t, s);
          scored.emplace_back(sum / static_cast<double>(K_ - 1 - s), h, l);
        }
      std::sort(scored.begin(), scored.end());
      for (const auto& [score, h, l] : scored) orders_[static_cast<size_t>(s)].push_back({h, l});
    }
    // utils.py pruned_heads_for_budget.
    const double P = static_cast<double>(prefix(K_ - 1)), c_sink = static_cast<double>(prefix(sink_));
    threshold_ = budget * static_cast<double>(T) * P;
    x_.assign(static_cast<size_t>(K_) + 1, 0);
    for (int64_t j = 1; j <= K_ - 1; ++j) {
      const double I = static_cast<double>(prefix(j));
      if (I <= budget * P) continue;
      const double x = std::ceil(static_cast<double>(T) * (I - budget * P) / (I - c_sink) - 1e-9);
      x_[static_cast<size_t>(j)] = std::clamp<int64_t>(static_cast<int64_t>(x), 0, T);
    }
    // G_t and the strict schedule with greedy early activation.
    std::vector<uint8_t> previous(atoms(), 0);
    for (int64_t t = 0; t <= last_source; ++t) {
      std::vector<uint8_t> g(atoms(), 0);
      const int64_t count = x_[static_cast<size_t>(t) + 1];
      for (int64_t s = sink_; s <= std::min(last_source, t); ++s)
        for (int64_t r = 0; r < count; ++r) {
          const auto [h, l] = orders_[static_cast<size_t>(s)][static_cast<size_t>(r)];
          g[at(s, l, h)] = 1;
        }
      // Candidates: G_t minus the active set, layer descending, source descending, rank ascending.
      std::vector<std::tuple<int64_t, int64_t, int64_t, size_t>> candidates;  // (-layer, -source, rank, atom)
      for (int64_t s = sink_; s <= std::min(last_source, t); ++s)
        for (int64_t r = 0; r < count; ++r) {
          const auto [h, l] = orders_[static_cast<size_t>(s)][static_cast<size_t>(r)];
          if (!previous[at(s, l, h)]) candidates.emplace_back(-l, -s, r, at(s, l, h));
        }
      std::sort(candidates.begin(), candidates.end());
      std::vector<uint8_t> active = previous;
      for (int64_t layer = 0; layer < L_; ++layer)
        while (total_after(t, layer, g, active) > threshold_) {
          bool activated = false;
          for (const auto& [neg_layer, neg_source, rank, atom] : candidates) {
            if (active[atom] || -neg_layer <= layer || -neg_source == t) continue;
            active[atom] = 1;
            activated = true;
            break;
          }
          if (!activated) throw std::runtime_error("the official schedule is infeasible here");
        }
      in_force_.push_back(active);
      end_.push_back(g);
      previous = g;
    }
  }

  int64_t x(int64_t j) const { return x_.at(static_cast<size_t>(j)); }
  bool removed_during(int64_t t, int64_t s, int64_t l, int64_t h) const {
    return in_force_.at(static_cast<size_t>(t))[at(s, l, h)] != 0;
  }
  bool removed_after(int64_t t, int64_t s, int64_t l, int64_t h) const {
    return end_.at(static_cast<size_t>(t))[at(s, l, h)] != 0;
  }
  int64_t early(int64_t t) const {
    int64_t n = 0;
    for (size_t a = 0; a < atoms(); ++a)
      n += in_force_.at(static_cast<size_t>(t))[a] && (t == 0 || !end_.at(static_cast<size_t>(t) - 1)[a]);
    return n;
  }

 private:
  size_t atoms() const { return static_cast<size_t>(K_ * L_ * H_); }
  size_t at(int64_t s, int64_t l, int64_t h) const { return static_cast<size_t>((s * L_ + l) * H_ + h); }
  int64_t prefix(int64_t j) const { return std::accumulate(tokens_.begin(), tokens_.begin() + j, int64_t{0}); }
  // _strict_scale_specific_cache_total_after_layer.
  double total_after(int64_t t, int64_t layer, const std::vector<uint8_t>& g,
                     const std::vector<uint8_t>& active) const {
    double total = static_cast<double>(L_ * H_ * prefix(sink_));
    for (int64_t s = sink_; s <= std::min(K_ - 2, t); ++s)
      for (int64_t l = 0; l < L_; ++l) {
        if (s == t && l > layer) continue;  // scale t is not in the layers that have not run
        const std::vector<uint8_t>& removed = l <= layer ? g : active;
        int64_t kept = 0;
        for (int64_t h = 0; h < H_; ++h) kept += removed[at(s, l, h)] ? 0 : 1;
        total += static_cast<double>(kept * tokens_[static_cast<size_t>(s)]);
      }
    return total;
  }

  int64_t L_, H_, K_;
  std::vector<int64_t> tokens_;
  int64_t sink_;
  double threshold_ = 0;
  std::vector<std::vector<std::pair<int64_t, int64_t>>> orders_;
  std::vector<int64_t> x_;
  std::vector<std::vector<uint8_t>> in_force_, end_;
};

std::unique_ptr<CachePolicy> heatkv_on(PolicyContext& c, const ScaleAttentionProfile& profile,
                                       const std::string& spec) {
  auto calibrations = std::make_shared<FixedCalibrations>();
  calibrations->attention = std::make_shared<const ScaleAttentionProfile>(profile);
  c.calibrations = calibrations;
  return make_policy(spec, c);
}

void expect_same_plan(int64_t layers, int64_t heads, double budget, uint64_t salt, bool with_early = true) {
  PolicyContext c = test::scale_context(kOneMegapixel, layers, heads);
  const ScaleAttentionProfile profile = hashed_profile(c, salt);
  const OfficialSchedule official(profile, budget, 3);
  auto policy = heatkv_on(c, profile, "heatkv:budget=" + std::to_string(budget));
  const auto& heat = dynamic_cast<const HeatKvPolicy&>(*policy);
  const int64_t K = static_cast<int64_t>(kOneMegapixel.size());
  int64_t early_atoms = 0, differences = 0;
  for (int64_t t = 0; t <= K - 2; ++t) {
    EXPECT_EQ(heat.heads_to_prune(t), official.x(t + 1)) << "scale " << t;
    EXPECT_EQ(heat.early_pruned(t), official.early(t)) << "scale " << t;
    early_atoms += official.early(t);
    for (int64_t s = 0; s <= t; ++s)
      for (int64_t l = 0; l < layers; ++l)
        for (int64_t h = 0; h < heads; ++h) {
          differences += heat.absent_at_start(t, s, l, h) != official.removed_during(t, s, l, h);
          differences += heat.absent_at_end(t, s, l, h) != official.removed_after(t, s, l, h);
        }
  }
  EXPECT_EQ(differences, 0) << layers << "x" << heads << " at " << budget;
  if (with_early) {
    EXPECT_GT(early_atoms, 0) << "the geometry exercises early pruning";
  }
}

}  // namespace

TEST(HeatKvPeer, PruneCountsAreTheOfficialSchedulesOnInfinity2BAnd8B) {
  // What the official schedule code (tools/utils.py) prints for these geometries.
  struct Case {
    int64_t layers, heads;
    double budget;
    std::vector<std::pair<int64_t, int64_t>> counts;  // (scale after which, heads pruned)
  };
  const std::vector<Case> cases = {
      {32, 16, 0.1, {{6, 0}, {7, 159}, {8, 297}, {9, 385}, {10, 435}, {11, 463}}},
      {32, 16, 0.2, {{7, 0}, {8, 74}, {9, 254}, {10, 355}, {11, 411}}},
      {40, 28, 0.1, {{7, 347}, {8, 649}, {9, 842}, {10, 951}, {11, 1012}}},
  };
  for (const Case& k : cases) {
    PolicyContext c = test::scale_context(kOneMegapixel, k.layers, k.heads);
    auto policy = heatkv_on(c, ScaleAttentionProfile::uniform(c), "heatkv:budget=" + std::to_string(k.budget));
    const auto& heat = dynamic_cast<const HeatKvPolicy&>(*policy);
    for (const auto& [scale, heads] : k.counts)
      EXPECT_EQ(heat.heads_to_prune(scale), heads)
          << k.layers << "x" << k.heads << " b=" << k.budget << " scale " << scale;
  }
}

TEST(HeatKvPeer, TheRemovedHeadScalesAreTheOfficialSchedulesAtEveryScale) {
  expect_same_plan(32, 16, 0.1, 1);  // Infinity-2B's heads
  expect_same_plan(32, 16, 0.04, 2);
  expect_same_plan(32, 16, 0.2, 3);
  expect_same_plan(40, 28, 0.1, 4);       // Infinity-8B's
  expect_same_plan(3, 4, 0.1, 5, false);  // a small model: few heads, ties in every order
}

TEST(HeatKvPeer, AGenerationKeepsExactlyThePositionsTheOfficialScheduleSays) {
  // An Infinity of the shape the official code needs: head width 128, the 1M budget's 13 scales at 1:1.
  infinity::InfinityModelConfig config = infinity::random_infinity_config("infinity-tiny");
  config.transformer.depth = 3;
  config.transformer.block_chunks = 3;
  config.transformer.embed_dim = 256;
  config.transformer.num_heads = 2;
  config.pixel_budget = "1M";
  const test::TempDir dir;
  const std::string bundle_dir = dir.file("peer");
  infinity::write_random_infinity_bundle(bundle_dir, "infinity-peer", config, 3, "f32");
  const infinity::InfinityImageSize size = infinity::parse_infinity_image_size(config, "");
  const infinity::InfinitySchedule schedule = infinity::schedule_of(size);
  ASSERT_EQ(schedule.grids.size(), kOneMegapixel.size());

  // The calibration the run uses: stored in the bundle for its size, made as a run would ask.
  PolicyContext c = test::scale_context(kOneMegapixel, 3, 2);
  ScaleAttentionProfile profile = hashed_profile(c, 9);
  profile.model = "infinity-peer";
  profile.classes = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  profile.cfg = 3.0;
  profile.seed = 0;
  profile.samples = 10;
  profile.save(infinity::stored_calibration_path(bundle_dir, kScaleAttentionProfileFile, size));
  const OfficialSchedule official(profile, 0.1, 3);

  GenerationRequest request;
  request.model_path = bundle_dir;
  request.prompt = "a red fox in the snow";
  request.cfg_scale = 3.0;
  request.sampling.temperature = 0.5;
  request.sampling.top_k = 900;
  request.sampling.top_p = 0.97;
  request.policy = parse_policy_spec("heatkv:budget=0.1");
  request.emit_retained_masks = true;
  struct Masks : EventSink {
    std::vector<RetainedMasks> after_scale;
    void on_event(const GenerationEvent& e) override {
      if (auto* u = std::get_if<UnitDoneEvent>(&e); u && u->retained) after_scale.push_back(*u->retained);
    }
  } masks;
  GenerationSession session;
  session.run(io::ModelBundle::open(bundle_dir), request, &masks);
  const int64_t K = static_cast<int64_t>(kOneMegapixel.size());
  ASSERT_EQ(static_cast<int64_t>(masks.after_scale.size()), K);
  int64_t checked = 0, differences = 0;
  for (int64_t t = 0; t <= K - 2; ++t) {
    const RetainedMasks& m = masks.after_scale[static_cast<size_t>(t)];
    ASSERT_EQ(m.n_layer, 3);
    ASSERT_EQ(m.kv_heads, 2);
    ASSERT_GE(m.positions, std::accumulate(kOneMegapixel.begin(), kOneMegapixel.begin() + t + 1, int64_t{0}));
    int64_t position = 0;
    for (int64_t s = 0; s <= t; ++s)
      for (int64_t i = 0; i < kOneMegapixel[static_cast<size_t>(s)]; ++i, ++position)
        for (int64_t l = 0; l < 3; ++l)
          for (int64_t h = 0; h < 2; ++h) {
            ++checked;
            differences += m.retained(l, h, position) == official.removed_after(t, s, l, h);
          }
  }
  EXPECT_GT(checked, 0);
  EXPECT_EQ(differences, 0) << "of " << checked << " (position, layer, head) checks";
}
