// The CPU twins of the scoring and compaction kernels (kernels/cpu/segment_scoring.h)
// against the policies' own scoring on the same cache: KvStore::attend's key mass
// (H2O, the scale policies), SnapKV's / R-KV's observation_importance (votes,
// max and average pooling), LineAR's line_saliency (softmax over the mid
// keys only, mean over queries and grouped heads) and KvStore::retain
// (eviction). Random ragged layouts (empty and one-entry segments, grouped query
// heads, CFG pairs) in f32, bf16 and f16. These run everywhere; the GPU kernels
// are compared with these twins in test_cuda_scoring.cpp.
#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "engine/cache/kv_store.h"
#include "engine/cache/policies/cache_policy.h"
#include "engine/cache/policies/line_saliency.h"
#include "engine/cache/policies/snapkv_policy.h"
#include "kernels/cpu/segment_scoring.h"
#include "kernels/kernel_error.h"

namespace kvs {
namespace {

using kernels::KeyScoreReduction;
using kernels::ScoreElementType;

struct Layout {
  std::string name;
  int64_t rows, kv_heads, n_head, head_dim;
  int64_t entries;       // positions appended (position 0 is the condition token)
  double keep_fraction;  // share of image entries each segment keeps
  bool empty_segment;    // segment (0, 0) loses every entry
  bool one_entry;        // the last segment keeps a single entry
  bool cfg_pairs;        // evictions mirrored onto the CFG partner rows
};

std::vector<Layout> layouts() {
  return {
      {"uniform", 2, 2, 4, 32, 12, 1.0, false, false, false},
      {"ragged-gqa", 3, 2, 8, 64, 40, 0.5, false, true, false},
      {"empty-segment", 2, 3, 6, 16, 17, 0.6, true, false, false},
      {"cfg-pairs", 4, 2, 4, 32, 33, 0.4, false, false, true},
      {"mha", 1, 4, 4, 64, 30, 0.3, false, true, false},
  };
}

ScoreElementType element_type(at::ScalarType dtype) {
  switch (dtype) {
    case at::kBFloat16: return ScoreElementType::bf16;
    case at::kHalf: return ScoreElementType::f16;
    default: return ScoreElementType::f32;
  }
}

// A one-layer CPU store of `dtype` holding positions 0..entries-1, then evicted
// per segment at random (the condition entry at position 0 stays unless a
// segment is emptied on purpose).
KvStore make_store(const Layout& l, at::ScalarType dtype, at::Generator& gen) {
  KvStore store(1, l.rows, l.kv_heads, l.head_dim, 4, at::TensorOptions().dtype(dtype));
  std::vector<int64_t> positions;
  for (int64_t i = 0; i < l.entries; ++i) positions.push_back(i);
  store.append(0, at::randn({l.rows, l.kv_heads, l.entries, l.head_dim}, gen).to(dtype),
               at::randn({l.rows, l.kv_heads, l.entries, l.head_dim}, gen).to(dtype), positions);
  const int64_t decide = l.cfg_pairs ? l.rows / 2 : l.rows;
  at::Tensor keep = at::rand({decide, l.kv_heads, l.entries}, gen) < l.keep_fraction;
  keep.select(2, 0).fill_(true);
  if (l.empty_segment) keep[0][0].fill_(false);
  if (l.one_entry) {
    keep[decide - 1][l.kv_heads - 1].fill_(false);
    keep[decide - 1][l.kv_heads - 1][l.entries / 2] = true;
  }
  if (l.cfg_pairs) store.retain_pairs(0, keep);
  else store.retain(0, keep);
  return store;
}

// The store's layer as the twins read it: the padded copy [segments * L, D] of the
// keys (segment s starts at slot s * L), int32 starts and lengths, positions [segments, L].
struct TwinLayer {
  at::Tensor keys, values, starts, lengths, positions;
  int64_t stride = 0;
  kernels::SegmentKeys view(const KvStore& store) const {
    kernels::SegmentKeys k;
    k.keys = keys.data_ptr();
    k.element_type = element_type(keys.scalar_type());
    k.starts = starts.data_ptr<int32_t>();
    k.lengths = lengths.data_ptr<int32_t>();
    k.rows = store.rows();
    k.kv_heads = store.kv_heads();
    k.head_dim = store.head_dim();
    k.stride = stride;
    k.total_slots = keys.size(0);
    k.positions = positions.data_ptr<int64_t>();
    return k;
  }
};

TwinLayer twin_layer(const KvStore& store, int64_t layer) {
  TwinLayer t;
  t.stride = store.max_length(layer);
  const int64_t segments = store.rows() * store.kv_heads();
  t.keys = store.keys(layer, t.stride).contiguous().reshape({segments * t.stride, store.head_dim()});
  t.values = store.values(layer, t.stride).contiguous().reshape({segments * t.stride, store.head_dim()});
  t.starts = (at::arange(segments, at::kLong) * t.stride).to(at::kInt);
  t.lengths = store.lengths_tensor(layer).reshape({-1}).to(at::kInt).contiguous();
  t.positions = store.positions_tensor(layer).narrow(2, 0, t.stride).contiguous();
  return t;
}

at::Tensor twin_scores(const KvStore& store, const TwinLayer& t, const at::Tensor& queries,
                       const std::vector<int64_t>& query_positions, bool causal, const at::Tensor& candidates,
                       KeyScoreReduction reduction) {
  const at::Tensor q = queries.to(at::kFloat).contiguous();
  const at::Tensor flags = candidates.defined() ? candidates.to(at::kByte).contiguous() : at::Tensor();
  at::Tensor scores = at::full({store.rows(), store.kv_heads(), t.stride}, 7.0f);  // every element is written
  kernels::KeyScoreArgs args;
  args.queries = q.data_ptr<float>();
  args.n_head = q.size(1);
  args.T = q.size(2);
  args.causal = causal;
  args.query_positions = query_positions.data();
  args.candidates = flags.defined() ? flags.data_ptr<uint8_t>() : nullptr;
  args.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(store.head_dim())));
  args.reduction = reduction;
  args.scores = scores.data_ptr<float>();
  kernels::attention_key_scores_cpu(t.view(store), args);
  return scores;
}

at::Tensor twin_pool(const at::Tensor& votes, const at::Tensor& candidates, int64_t kernel,
                     kernels::VotePooling pooling) {
  const at::Tensor v = votes.contiguous(), c = candidates.to(at::kByte).contiguous();
  at::Tensor pooled = at::zeros_like(v);
  kernels::PoolArgs args;
  args.votes = v.data_ptr<float>();
  args.candidates = c.data_ptr<uint8_t>();
  args.segments = v.size(0) * v.size(1);
  args.stride = v.size(2);
  args.kernel = kernel;
  args.pooling = pooling;
  args.pooled = pooled.data_ptr<float>();
  kernels::pool_candidate_scores_cpu(args);
  return pooled;
}

// Largest difference, with -inf required in the same places.
double max_difference(const at::Tensor& a, const at::Tensor& b) {
  const at::Tensor finite_a = at::isfinite(a), finite_b = at::isfinite(b);
  EXPECT_TRUE(at::equal(finite_a, finite_b)) << "the -inf slots differ";
  if (!finite_a.any().item<bool>()) return 0.0;
  return (a.masked_select(finite_a) - b.to(a.scalar_type()).masked_select(finite_a)).abs().max().item<double>();
}

// Tolerance of a score summed over `terms` softmax weights: float32 arithmetic
// in both, but the f16 dense path and LineAR's matmul round their logits to the
// cache's dtype where the twin keeps float32.
double tolerance(at::ScalarType dtype, int64_t terms, bool logits_in_dtype) {
  if (!logits_in_dtype || dtype == at::kFloat) return 2e-6 * static_cast<double>(terms);
  return (dtype == at::kHalf ? 4e-3 : 3e-2) * static_cast<double>(terms);
}

const at::ScalarType kDtypes[] = {at::kFloat, at::kBFloat16, at::kHalf};

TEST(SegmentScoringTwin, KeyMassEqualsKvStoreAttend) {
  for (at::ScalarType dtype : kDtypes) {
    for (const Layout& l : layouts()) {
      for (bool causal : {true, false}) {
        SCOPED_TRACE(l.name + " " + c10::toString(dtype) + (causal ? " causal" : " whole"));
        at::Generator gen = at::detail::createCPUGenerator(11);
        KvStore store = make_store(l, dtype, gen);
        // Three queries at positions inside the cache: causality hides later entries.
        const std::vector<int64_t> qpos = {l.entries / 3, l.entries / 2, l.entries - 1};
        const at::Tensor q = at::randn({l.rows, l.n_head, 3, l.head_dim}, gen).to(dtype);
        const at::Tensor reference = store.attend(0, q, qpos, causal, false, true).key_mass;
        const at::Tensor twin = twin_scores(store, twin_layer(store, 0), q, qpos, causal, at::Tensor(),
                                            KeyScoreReduction::Sum);
        ASSERT_EQ(reference.sizes(), twin.sizes());
        // KvStore's CPU kernel reads f32 / bf16 in float32; its f16 path is a dense half matmul.
        const double err = max_difference(reference, twin);
        EXPECT_LE(err, tolerance(dtype, 3 * l.n_head / l.kv_heads, dtype == at::kHalf)) << "largest difference " << err;
      }
    }
  }
}

TEST(SegmentScoringTwin, WindowVotesAndPoolingEqualObservationImportance) {
  for (at::ScalarType dtype : kDtypes) {
    for (const Layout& l : layouts()) {
      for (kernels::VotePooling pooling : {kernels::VotePooling::Max, kernels::VotePooling::Average}) {
        for (int64_t kernel : {1, 3, 7}) {
          SCOPED_TRACE(l.name + " " + c10::toString(dtype) + " kernel " + std::to_string(kernel));
          at::Generator gen = at::detail::createCPUGenerator(23);
          KvStore store = make_store(l, dtype, gen);
          // A window of the last four positions observes; older image entries are the candidates.
          const int64_t window = 4, window_from = l.entries - window;
          std::vector<int64_t> qpos;
          for (int64_t p = window_from; p < l.entries; ++p) qpos.push_back(p);
          const at::Tensor q = at::randn({l.rows, l.n_head, window, l.head_dim}, gen);
          const ImageSlots s = image_slots(store, 0, 1);
          const at::Tensor candidates = s.is_image & (s.positions < window_from);
          const ObservationPooling policy_pooling = pooling == kernels::VotePooling::Max ? ObservationPooling::Max
                                                                                         : ObservationPooling::Average;
          const at::Tensor reference = observation_importance(store, 0, q, qpos, candidates, kernel, policy_pooling);
          const TwinLayer t = twin_layer(store, 0);
          const at::Tensor votes = twin_scores(store, t, q, qpos, true, at::Tensor(), KeyScoreReduction::Sum);
          const at::Tensor twin = twin_pool(votes, candidates, kernel, pooling);
          ASSERT_EQ(reference.sizes(), twin.sizes());
          const double err = max_difference(reference, twin);
          EXPECT_LE(err, tolerance(at::kFloat, window * l.n_head / l.kv_heads, false)) << "largest difference " << err;
        }
      }
    }
  }
}

TEST(SegmentScoringTwin, MidSaliencyEqualsLineArInterLineSaliency) {
  for (at::ScalarType dtype : kDtypes) {
    for (const Layout& l : layouts()) {
      SCOPED_TRACE(l.name + " " + c10::toString(dtype));
      at::Generator gen = at::detail::createCPUGenerator(31);
      KvStore store = make_store(l, dtype, gen);
      // A finished line of n = 5 queries (model dtype, as the policy stores them);
      // mid = image entries past two anchors and older than the last 6 positions.
      const int64_t n = 5;
      const at::Tensor line_queries = at::randn({l.rows, l.n_head, n, l.head_dim}, gen).to(dtype);
      const ImageSlots s = image_slots(store, 0, 1);
      const at::Tensor mid = s.is_image & (s.rank >= 2) & (s.positions < l.entries - 6);
      const at::Tensor reference = line_saliency(store, 0, line_queries, mid);
      const at::Tensor twin = twin_scores(store, twin_layer(store, 0), line_queries, {}, false, mid,
                                          KeyScoreReduction::Mean);
      ASSERT_EQ(reference.sizes(), twin.sizes());
      // The policy multiplies in the cache's dtype: its logits are rounded there.
      const double err = max_difference(reference, twin);
      EXPECT_LE(err, tolerance(dtype, 1, true)) << "largest difference " << err;
      // Outside the mid region the saliency is 0 in both.
      EXPECT_EQ(twin.masked_select(~mid).abs().max().item<float>(), 0.0f);
    }
  }
}

TEST(SegmentScoringTwin, CompactionEqualsKvStoreRetain) {
  for (at::ScalarType dtype : kDtypes) {
    for (const Layout& l : layouts()) {
      SCOPED_TRACE(l.name + " " + c10::toString(dtype));
      at::Generator gen = at::detail::createCPUGenerator(47);
      KvStore store = make_store(l, dtype, gen);
      const TwinLayer before = twin_layer(store, 0);
      const int64_t segments = l.rows * l.kv_heads, d = l.head_dim;
      at::Tensor keep = at::rand({l.rows, l.kv_heads, before.stride}, gen) < 0.6;
      if (l.cfg_pairs) keep.narrow(0, l.rows / 2, l.rows / 2).copy_(keep.narrow(0, 0, l.rows / 2));
      const at::Tensor flags = keep.to(at::kByte).contiguous();
      at::Tensor dst_keys = at::zeros_like(before.keys), dst_values = at::zeros_like(before.values);
      at::Tensor new_lengths = at::zeros({segments}, at::kInt);
      at::Tensor new_positions = at::zeros({segments, before.stride}, at::kLong);
      kernels::CompactionArgs args;
      args.src_keys = before.keys.data_ptr();
      args.src_values = before.values.data_ptr();
      args.dst_keys = dst_keys.data_ptr();
      args.dst_values = dst_values.data_ptr();
      args.element_type = element_type(dtype);
      args.head_dim = d;
      args.segments = segments;
      args.stride = before.stride;
      args.src_starts = args.dst_starts = before.starts.data_ptr<int32_t>();
      args.src_slots = args.dst_slots = before.keys.size(0);
      args.lengths = before.lengths.data_ptr<int32_t>();
      args.keep = flags.data_ptr<uint8_t>();
      args.new_lengths = new_lengths.data_ptr<int32_t>();
      args.positions = before.positions.data_ptr<int64_t>();
      args.new_positions = new_positions.data_ptr<int64_t>();
      kernels::compact_segments_cpu(args);

      store.retain(0, keep);
      const TwinLayer after = twin_layer(store, 0);
      ASSERT_TRUE(at::equal(new_lengths, after.lengths));
      EXPECT_TRUE(
          at::equal(new_positions.narrow(1, 0, after.stride), after.positions.reshape({segments, after.stride})));
      if (after.stride < before.stride) {
        EXPECT_TRUE((new_positions.narrow(1, after.stride, before.stride - after.stride) == -1).all().item<bool>());
      }
      for (int64_t s = 0; s < segments; ++s) {
        const int64_t n = new_lengths[s].item<int64_t>();
        // Bit copies: equal, not close.
        EXPECT_TRUE(at::equal(dst_keys.narrow(0, s * before.stride, n), after.keys.narrow(0, s * after.stride, n)));
        EXPECT_TRUE(at::equal(dst_values.narrow(0, s * before.stride, n), after.values.narrow(0, s * after.stride, n)));
      }
    }
  }
}

// A hand-made case: the twin's key mass is a softmax per query, summed; a
// segment past its length is never read (NaN there), an empty segment scores 0.
TEST(SegmentScoringTwin, HandComputedMassAndUnreadSlots) {
  // Two segments (one row, two KV heads, one query head each), stride 3:
  // segment 0 holds 2 entries at slots 0-1, segment 1 none; slot 2 holds NaN.
  const std::vector<float> keys = {1, 0, 0, 1, NAN, NAN};
  const std::vector<int32_t> starts = {0, 2}, lengths = {2, 0};
  const std::vector<float> queries = {2, 0, 5, 5};  // head 0: (2, 0); head 1: unused
  std::vector<float> scores(6, -1.0f);
  kernels::SegmentKeys k;
  k.keys = keys.data();
  k.starts = starts.data();
  k.lengths = lengths.data();
  k.rows = 1;
  k.kv_heads = 2;
  k.head_dim = 2;
  k.stride = 3;
  k.total_slots = 3;
  kernels::KeyScoreArgs args;
  args.queries = queries.data();
  args.n_head = 2;
  args.T = 1;
  args.scores = scores.data();
  kernels::attention_key_scores_cpu(k, args);
  const double e2 = std::exp(2.0);
  EXPECT_NEAR(scores[0], e2 / (e2 + 1.0), 1e-6);
  EXPECT_NEAR(scores[1], 1.0 / (e2 + 1.0), 1e-6);
  for (int i = 2; i < 6; ++i) EXPECT_EQ(scores[i], 0.0f) << "slot " << i;

  // Mean over one query with a candidate mask of slot 1 only: all its weight there.
  const std::vector<uint8_t> only_second = {0, 1, 0, 0, 0, 0};
  args.candidates = only_second.data();
  args.reduction = KeyScoreReduction::Mean;
  kernels::attention_key_scores_cpu(k, args);
  EXPECT_EQ(scores[0], 0.0f);
  EXPECT_FLOAT_EQ(scores[1], 1.0f);
}

TEST(SegmentScoringTwin, BadArgumentsThrowBeforeWriting) {
  const std::vector<float> keys(8, 0.0f), queries(8, 0.0f);
  const std::vector<int32_t> starts = {0, 2}, too_long = {2, 3};
  std::vector<float> scores(4, 9.0f);
  kernels::SegmentKeys k;
  k.keys = keys.data();
  k.starts = starts.data();
  k.lengths = too_long.data();
  k.rows = 1;
  k.kv_heads = 2;
  k.head_dim = 2;
  k.stride = 2;  // segment 1's length 3 exceeds it
  k.total_slots = 4;
  kernels::KeyScoreArgs args;
  args.queries = queries.data();
  args.n_head = 2;
  args.T = 1;
  args.scores = scores.data();
  EXPECT_THROW(kernels::attention_key_scores_cpu(k, args), kernels::KernelArgumentError);
  EXPECT_EQ(scores, std::vector<float>(4, 9.0f));
  const std::vector<int32_t> fine = {2, 2};
  k.lengths = fine.data();
  args.n_head = 3;  // not a multiple of kv_heads
  EXPECT_THROW(kernels::attention_key_scores_cpu(k, args), kernels::KernelArgumentError);
  args.n_head = 2;
  args.causal = true;  // without positions
  EXPECT_THROW(kernels::attention_key_scores_cpu(k, args), kernels::KernelArgumentError);

  kernels::PoolArgs pool;
  pool.votes = scores.data();
  const std::vector<uint8_t> flags(4, 1);
  pool.candidates = flags.data();
  pool.pooled = scores.data();
  pool.segments = 2;
  pool.stride = 2;
  pool.kernel = 2;  // even
  EXPECT_THROW(kernels::pool_candidate_scores_cpu(pool), kernels::KernelArgumentError);
}

}  // namespace
}  // namespace kvs
