// The two paths of the policies' saliency (engine/cache/policies/line_saliency.h):
// KvStore::key_scores, the scoring kernels over the packed cache, against the
// LibTorch formulation kept as the reference. On random ragged stores the scores
// agree to float rounding; on a real generation LineAR and HeadKV keep the same
// positions in every layer and head whichever path scores, up to a near-tie. The path is
// chosen with set_policy_scoring() (what KVSTUDIO_POLICY_SCORING sets for a run).
#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "engine/cache/kv_store.h"
#include "engine/cache/policies/cache_policy.h"
#include "engine/cache/policies/line_saliency.h"
#include "engine/cache/policies/policy_registry.h"
#include "engine/cache/policies/snapkv_policy.h"
#include "engine/core/device.h"
#include "engine/core/errors.h"
#include "engine/io/model_bundle.h"
#include "engine/models/llamagen/llamagen_generation.h"
#include "engine/models/llamagen/llamagen_model.h"

namespace kvs {
namespace {

// Restores the path chosen before a test (the process default for the others).
class ScoringPathGuard {
 public:
  ScoringPathGuard() : before_(policy_scoring()) {}
  ~ScoringPathGuard() { set_policy_scoring(before_); }

 private:
  PolicyScoring before_;
};

struct RaggedLayout {
  std::string name;
  int64_t rows, kv_heads, n_head, head_dim, entries;
  double keep_fraction;
  bool cfg_pairs;  // evictions mirrored onto the CFG partner rows; only the first half decides
};

std::vector<RaggedLayout> ragged_layouts() {
  return {
      {"mha", 2, 3, 3, 32, 30, 0.6, false},
      {"gqa", 3, 2, 8, 64, 45, 0.5, false},
      {"cfg-gqa", 4, 2, 6, 16, 40, 0.4, true},
      {"cfg-mha-long", 2, 4, 4, 64, 120, 0.3, true},
  };
}

// A one-layer CPU store holding positions 0..entries-1 (0: the condition entry),
// then evicted at random per segment so that segments hold different counts.
KvStore ragged_store(const RaggedLayout& l, at::ScalarType dtype, at::Generator& gen,
                     at::Device device = at::Device(at::kCPU)) {
  KvStore store(1, l.rows, l.kv_heads, l.head_dim, 4, at::TensorOptions().dtype(dtype).device(device));
  std::vector<int64_t> positions;
  for (int64_t i = 0; i < l.entries; ++i) positions.push_back(i);
  store.append(0, at::randn({l.rows, l.kv_heads, l.entries, l.head_dim}, gen).to(device, dtype),
               at::randn({l.rows, l.kv_heads, l.entries, l.head_dim}, gen).to(device, dtype), positions);
  const int64_t decide = l.cfg_pairs ? l.rows / 2 : l.rows;
  at::Tensor keep = at::rand({decide, l.kv_heads, l.entries}, gen) < l.keep_fraction;
  keep.select(2, 0).fill_(true);
  if (l.cfg_pairs) store.retain_pairs(0, keep);
  else store.retain(0, keep);
  return store;
}

TEST(PolicyScoringPaths, KernelSaliencyEqualsTheLibTorchFormulationOnRaggedStores) {
  ScoringPathGuard guard;
  set_policy_scoring(PolicyScoring::Kernels);
  for (at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
    for (const RaggedLayout& l : ragged_layouts()) {
      SCOPED_TRACE(l.name + " " + c10::toString(dtype));
      at::Generator gen = at::detail::createCPUGenerator(17);
      KvStore store = ragged_store(l, dtype, gen);
      ASSERT_FALSE(store.uniform(0)) << "the layout should leave segments of different lengths";
      const ImageSlots s = image_slots(store, 0, 1);
      // Candidates as LineAR's mid region: past two anchors, older than the last 8 positions.
      const at::Tensor mid = s.is_image & (s.rank >= 2) & (s.positions < l.entries - 8);
      const at::Tensor queries = at::randn({l.rows, l.n_head, 5, l.head_dim}, gen).to(dtype);
      for (int64_t rows_scored : {l.rows, l.cfg_pairs ? l.rows / 2 : int64_t{1}}) {
        const at::Tensor reference = line_saliency_torch(store, 0, queries, mid, rows_scored);
        const at::Tensor kernel = line_saliency(store, 0, queries, mid, rows_scored);
        ASSERT_EQ(kernel.sizes(), (std::vector<int64_t>{rows_scored, l.kv_heads, s.length}));
        EXPECT_EQ(kernel.scalar_type(), at::kFloat);
        EXPECT_TRUE(kernel.device().is_cpu());
        const double err = (kernel - reference).abs().max().item<double>();
        EXPECT_LE(err, 1e-5) << "rows " << rows_scored << ": largest difference " << err;
        // Each segment with candidates sums to 1 over them, and 0 is what the others get.
        const at::Tensor flags = mid.narrow(0, 0, rows_scored);
        EXPECT_EQ(kernel.masked_select(~flags).abs().max().item<float>(), 0.0f);
        const at::Tensor has = flags.any(-1);
        const at::Tensor sums = kernel.sum(-1);
        EXPECT_LE((sums.masked_select(has) - 1.0).abs().max().item<double>(), 1e-5);
        EXPECT_EQ(sums.masked_select(~has).abs().sum().item<double>(), 0.0);
      }
    }
  }
}

// The same on a GPU store: the CUDA kernel reads the device buffers in place.
TEST(PolicyScoringPaths, OnAGpuTheCudaKernelEqualsTheLibTorchFormulation) {
  if (!cuda_available()) GTEST_SKIP() << "LibTorch sees no CUDA device here";
  ScoringPathGuard guard;
  set_policy_scoring(PolicyScoring::Kernels);
  for (at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
    for (const RaggedLayout& l : ragged_layouts()) {
      SCOPED_TRACE(l.name + " " + c10::toString(dtype));
      at::Generator gen = at::detail::createCPUGenerator(19);
      KvStore store = ragged_store(l, dtype, gen, at::Device(at::kCUDA));
      if (!store.key_scores_in_place()) GTEST_SKIP() << "the CUDA scoring kernels are not built or find no device";
      const ImageSlots s = image_slots(store, 0, 1);
      const at::Tensor mid = s.is_image & (s.rank >= 2) & (s.positions < l.entries - 8);
      const at::Tensor queries = at::randn({l.rows, l.n_head, 5, l.head_dim}, gen).to(at::kCUDA, dtype);
      const int64_t rows_scored = l.cfg_pairs ? l.rows / 2 : l.rows;
      const at::Tensor reference = line_saliency_torch(store, 0, queries, mid, rows_scored);
      const at::Tensor kernel = line_saliency(store, 0, queries, mid, rows_scored);
      ASSERT_TRUE(kernel.device().is_cpu());
      const double err = (kernel - reference).abs().max().item<double>();
      EXPECT_LE(err, 1e-5) << "largest difference " << err;
    }
  }
}

// SnapKV's / R-KV's / ScaleKV's window votes: causal (each window query sees the
// entries up to its own position), summed over queries and grouped heads, then
// pooled over the candidates' slot order. Both paths on the same ragged stores.
void expect_same_observation_importance(const at::Device& device) {
  ScoringPathGuard guard;
  for (at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
    for (const RaggedLayout& l : ragged_layouts()) {
      SCOPED_TRACE(l.name + " " + c10::toString(dtype));
      at::Generator gen = at::detail::createCPUGenerator(23);
      KvStore store = ragged_store(l, dtype, gen, device);
      const ImageSlots s = image_slots(store, 0, 1);
      // A window of the last 6 positions: the older entries are the candidates,
      // and the window's own entries are seen by the later window queries only.
      const int64_t w = 6, first = l.entries - w;
      std::vector<int64_t> qpos;
      for (int64_t i = 0; i < w; ++i) qpos.push_back(first + i);
      const at::Tensor candidates = s.is_image & (s.positions < first);
      const at::Tensor queries = at::randn({l.rows, l.n_head, w, l.head_dim}, gen).to(device, dtype);
      const double scale = 1.0 / std::sqrt(static_cast<double>(l.head_dim));
      const at::Tensor reference = observation_votes_torch(store, 0, queries, qpos);
      const at::Tensor votes = store.key_scores(0, queries, at::Tensor(), kernels::KeyScoreReduction::Sum, scale,
                                                l.rows, s.length, qpos);
      EXPECT_LE((votes - reference).abs().max().item<double>(), 1e-5);
      // Every query sees at least the entry at position 0: its votes sum to the
      // group's query count per segment with entries.
      const at::Tensor sums = votes.sum(-1), has = store.lengths_tensor(0) > 0;
      EXPECT_LE((sums.masked_select(has) - static_cast<double>(w * (l.n_head / l.kv_heads))).abs().max().item<double>(),
                1e-3);
      for (ObservationPooling pooling : {ObservationPooling::Max, ObservationPooling::Average}) {
        set_policy_scoring(PolicyScoring::Kernels);
        const at::Tensor on_kernels = observation_importance(store, 0, queries, qpos, candidates, 3, pooling);
        set_policy_scoring(PolicyScoring::Torch);
        const at::Tensor on_torch = observation_importance(store, 0, queries, qpos, candidates, 3, pooling);
        ASSERT_TRUE(at::equal(at::isinf(on_kernels), at::isinf(on_torch)));
        const at::Tensor finite = ~at::isinf(on_torch);
        EXPECT_LE((on_kernels.masked_select(finite) - on_torch.masked_select(finite)).abs().max().item<double>(), 1e-5);
      }
    }
  }
}

TEST(PolicyScoringPaths, WindowVotesAreTheSameOnBothPaths) { expect_same_observation_importance(at::Device(at::kCPU)); }

TEST(PolicyScoringPaths, OnAGpuTheWindowVotesKernelEqualsTheLibTorchFormulation) {
  if (!cuda_available()) GTEST_SKIP() << "LibTorch sees no CUDA device here";
  KvStore probe(1, 1, 1, 8, 1, at::TensorOptions().device(at::kCUDA));
  if (!probe.key_scores_in_place()) GTEST_SKIP() << "the CUDA scoring kernels are not built or find no device";
  expect_same_observation_importance(at::Device(at::kCUDA));
}

TEST(PolicyScoringPaths, KeyScoresWidenToTheStrideAndRefuseBadArguments) {
  at::Generator gen = at::detail::createCPUGenerator(3);
  const RaggedLayout l{"gqa", 2, 2, 4, 32, 20, 0.5, false};
  KvStore store = ragged_store(l, at::kFloat, gen);
  const int64_t longest = store.max_length(0), wide = longest + 5;
  const at::Tensor queries = at::randn({2, 4, 3, 32}, gen);
  const at::Tensor every = at::ones({2, 2, wide}, at::kBool);
  const double scale = 0.125;
  const at::Tensor sum = store.key_scores(0, queries, at::Tensor(), kernels::KeyScoreReduction::Sum, scale, 2, wide);
  ASSERT_EQ(sum.sizes(), (std::vector<int64_t>{2, 2, wide}));
  // Sum reduction, no candidates: each segment's weights sum to its 2 x 3 queries.
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t h = 0; h < 2; ++h) {
      const int64_t length = store.length(0, r, h);
      EXPECT_NEAR(sum[r][h].sum().item<double>(), 6.0, 1e-4);
      EXPECT_EQ(sum[r][h].narrow(0, length, wide - length).abs().sum().item<double>(), 0.0);
    }
  // Mean with every entry a candidate is the sum over the queries' count.
  const at::Tensor mean = store.key_scores(0, queries, every, kernels::KeyScoreReduction::Mean, scale, 2, wide);
  EXPECT_LE((mean * 6.0 - sum).abs().max().item<double>(), 1e-5);
  EXPECT_THROW(store.key_scores(0, queries, every, kernels::KeyScoreReduction::Mean, scale, 2, longest - 1),
               InvalidArgumentError);
  EXPECT_THROW(store.key_scores(0, queries, every, kernels::KeyScoreReduction::Mean, scale, 3, wide),
               InvalidArgumentError);
  EXPECT_THROW(store.key_scores(0, queries.narrow(3, 0, 16), every, kernels::KeyScoreReduction::Mean, scale, 2, wide),
               InvalidArgumentError);
  EXPECT_THROW(store.key_scores(0, queries, every.narrow(2, 0, 4), kernels::KeyScoreReduction::Mean, scale, 2, wide),
               InvalidArgumentError);
  EXPECT_THROW(store.key_scores(0, queries, every, kernels::KeyScoreReduction::Sum, scale, 2, wide, {5, 6}),
               InvalidArgumentError);
}

TEST(PolicyScoringPaths, TheChosenPathIsWhatPolicyScoringReports) {
  ScoringPathGuard guard;
  for (PolicyScoring p : {PolicyScoring::Torch, PolicyScoring::Kernels, PolicyScoring::Automatic}) {
    set_policy_scoring(p);
    EXPECT_EQ(policy_scoring(), p);
  }
}

// The retained positions of every layer after every token of a real generation.
std::vector<at::Tensor> positions_of_a_run(const llamagen::LlamaGenModel& model, const std::string& spec,
                                           PolicyScoring path, int64_t* evicted) {
  set_policy_scoring(path);
  const auto& cfg = model.gpt->config();
  const PolicyContext context = llamagen::raster_policy_context(cfg, /*batch=*/2, /*cfg=*/true, /*seed=*/9);
  auto policy = make_policy(spec, context);
  raster::RasterHooks hooks;
  hooks.policy = [&] { return policy.get(); };
  hooks.cache_capacity_tokens = policy->initial_entries();
  std::vector<at::Tensor> seen;
  hooks.on_token = [&](int64_t, const at::Tensor&, const KvStore& store) {
    for (int64_t l = 0; l < store.n_layer(); ++l) seen.push_back(store.positions_tensor(l).clone());
  };
  raster::RasterParams params;
  params.cfg_scale = 4.0;
  params.seed = 9;
  const auto result = llamagen::generate_raster(*model.gpt, at::tensor({3, 7}, at::kLong), params, hooks);
  *evicted = result.memory.bytes_full_equivalent - result.memory.bytes_logical;
  return seen;
}

// The positions one snapshot keeps in segment (row, head) that the other does not.
int64_t positions_only_in(const at::Tensor& a, const at::Tensor& b, int64_t row, int64_t head) {
  const at::Tensor kept_a = a[row][head], kept_b = b[row][head];
  const at::Tensor in_b = at::isin(kept_a, kept_b.masked_select(kept_b >= 0));
  return ((kept_a >= 0) & ~in_b).sum().item<int64_t>();
}

// Both paths on a real generation of the demo bundle: the same retained positions
// in every layer after every token, f32 and bf16, but for near-ties. The two paths
// round differently (the kernels sum in a fixed order, the BLAS matmul in its
// own), so two entries whose scores agree to the last bits can swap ranks, and
// the runs part from there on. What a near-tie looks like is checked at the first
// snapshot where the runs part: one decision (a segment, with its CFG partner when
// evictions are mirrored) keeps one position the other path does not. A wrong
// score (a head, row or mask mixed up) parts the runs at the first line end in
// many segments at once.
void expect_same_positions_on_both_paths(const std::vector<std::string>& specs) {
  ScoringPathGuard guard;
  const io::ModelBundle bundle = io::ModelBundle::open(std::string(KVSTUDIO_SOURCE_DIR) +
                                                       "/resources/models/llamagen-demo");
  for (at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
    const llamagen::LlamaGenModel model = llamagen::LlamaGenModel::load(bundle, at::Device(at::kCPU), dtype);
    for (const std::string& spec : specs) {
      SCOPED_TRACE(spec + " " + c10::toString(dtype));
      int64_t evicted_kernels = 0, evicted_torch = 0;
      const auto kernels = positions_of_a_run(model, spec, PolicyScoring::Kernels, &evicted_kernels);
      const auto torch = positions_of_a_run(model, spec, PolicyScoring::Torch, &evicted_torch);
      EXPECT_GT(evicted_kernels, 0) << "the policy should have evicted entries";
      EXPECT_EQ(evicted_kernels, evicted_torch);
      ASSERT_EQ(kernels.size(), torch.size());
      size_t first = 0;
      while (first < kernels.size() && at::equal(kernels[first], torch[first])) ++first;
      if (first == kernels.size()) continue;
      const at::Tensor& a = kernels[first];
      const at::Tensor& b = torch[first];
      ASSERT_EQ(a.sizes(), b.sizes()) << "snapshot " << first;
      const int64_t rows = a.size(0), half = rows / 2;
      int64_t decisions = 0;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t h = 0; h < a.size(1); ++h) {
          if (at::equal(a[r][h], b[r][h])) continue;
          // A CFG partner row mirrors its conditional row's decision.
          const bool mirror = r >= half && at::equal(a[r][h], a[r - half][h]) && at::equal(b[r][h], b[r - half][h]);
          decisions += !mirror;
          EXPECT_EQ(positions_only_in(a, b, r, h), 1) << "snapshot " << first << ", row " << r << ", head " << h;
          EXPECT_EQ(positions_only_in(b, a, r, h), 1) << "snapshot " << first << ", row " << r << ", head " << h;
        }
      EXPECT_EQ(decisions, 1) << "the paths part at snapshot " << first << " of " << kernels.size();
    }
  }
}

TEST(PolicyScoringPaths, LineArKeepsTheSamePositionsOnBothPaths) {
  expect_same_positions_on_both_paths({"linear:rho=1/4", "linear:rho=1/2,cfg_decision=both,n_init=0"});
}

TEST(PolicyScoringPaths, HeadKvKeepsTheSamePositionsOnBothPaths) {
  expect_same_positions_on_both_paths({"headkv:rho=1/4", "headkv:rho=1/4,cfg_decision=both"});
}

TEST(PolicyScoringPaths, SnapKvAndRKvKeepTheSamePositionsOnBothPaths) {
  expect_same_positions_on_both_paths({"snapkv:rho=1/4", "rkv:rho=1/4"});
}

}  // namespace
}  // namespace kvs
