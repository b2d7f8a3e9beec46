// KvStore's packed layout: segments with their own capacities grow and shrink
// (unit headroom), entries and positions survive every repack, attention over an
// irregular layout equals attention over the same entries laid out densely, and
// allocated bytes follow the segments' capacities.
#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/cache/kv_store.h"
#include "engine/core/errors.h"

using namespace kvs;

namespace {

const at::TensorOptions kFloat = at::TensorOptions().dtype(at::kFloat);

// Appends `count` tokens one by one from `first` on; entry values are
// position * 10 + segment so that every entry is recognisable after moves.
void append_tokens(KvStore& store, int64_t layer, int64_t first, int64_t count) {
  const int64_t rows = store.rows(), kv = store.kv_heads(), d = store.head_dim();
  for (int64_t p = first; p < first + count; ++p) {
    at::Tensor segment = at::arange(rows * kv, kFloat).view({rows, kv, 1, 1});
    at::Tensor k = (segment + static_cast<float>(p * 10)).expand({rows, kv, 1, d}).contiguous();
    store.append(layer, k, -k, {p});
  }
}

// Keep mask that keeps, in segment (row, head), only the slots listed.
at::Tensor keep_only(const KvStore& store, int64_t layer, const std::vector<std::vector<int64_t>>& per_segment) {
  at::Tensor keep = at::zeros({store.rows(), store.kv_heads(), store.max_length(layer)}, at::kBool);
  for (size_t s = 0; s < per_segment.size(); ++s)
    for (int64_t slot : per_segment[s]) keep[s / store.kv_heads()][s % store.kv_heads()][slot] = true;
  return keep;
}

// Checks that every retained entry still holds its own key and value.
void expect_entries_intact(const KvStore& store, int64_t layer) {
  const int64_t length = store.max_length(layer);
  at::Tensor keys = store.keys(layer, length), values = store.values(layer, length);
  for (int64_t r = 0; r < store.rows(); ++r)
    for (int64_t h = 0; h < store.kv_heads(); ++h) {
      const auto positions = store.positions(layer, r, h);
      for (size_t j = 0; j < positions.size(); ++j) {
        const float expected = static_cast<float>(positions[j] * 10 + r * store.kv_heads() + h);
        ASSERT_EQ(keys[r][h][static_cast<int64_t>(j)][0].item<float>(), expected) << "row " << r << " head " << h;
        ASSERT_EQ(values[r][h][static_cast<int64_t>(j)][1].item<float>(), -expected);
      }
    }
}

}  // namespace

TEST(KvStore, SegmentsShrinkToTheirHeadroomAfterEvictionAndGrowWhenNeeded) {
  KvStore store(1, 1, 2, 4, 10, kFloat);
  store.set_unit_headroom(3);
  EXPECT_EQ(store.allocated_slots(0), 20);
  append_tokens(store, 0, 0, 10);
  // Head 0 keeps 2 entries (a "local" head), head 1 keeps 8 (a "global" head).
  store.retain(0, keep_only(store, 0, {{8, 9}, {0, 1, 2, 3, 4, 5, 6, 7}}));
  EXPECT_EQ(store.segment_capacity(0, 0, 0), 5);   // 2 + headroom
  EXPECT_EQ(store.segment_capacity(0, 0, 1), 10);  // 8 + 3 > 10: unchanged
  EXPECT_EQ(store.allocated_slots(0), 15);
  EXPECT_EQ(store.memory().bytes_allocated, 15 * store.bytes_per_entry());
  EXPECT_EQ(store.positions(0, 0, 0), (std::vector<int64_t>{8, 9}));
  expect_entries_intact(store, 0);
  // Head 1 needs room for a third token: it grows to length + 1 + headroom.
  append_tokens(store, 0, 10, 3);
  EXPECT_EQ(store.segment_capacity(0, 0, 0), 5);
  EXPECT_EQ(store.segment_capacity(0, 0, 1), 8 + 3 + 3);
  EXPECT_EQ(store.positions(0, 0, 0), (std::vector<int64_t>{8, 9, 10, 11, 12}));
  EXPECT_EQ(store.length(0, 0, 1), 11);
  expect_entries_intact(store, 0);
  EXPECT_EQ(store.allocated_per_head()[0], (std::vector<int64_t>{5, 14}));
  EXPECT_EQ(store.retained_per_head()[0], (std::vector<int64_t>{5, 11}));
  // Peak counts the moment both generations of buffers existed.
  EXPECT_GE(store.memory().bytes_peak, (20 + 15) * store.bytes_per_entry());
}

// VAR's last scale: with a headroom of 0 a segment grows to exactly what it needs
// and, once the scale's entries are dropped, shrinks to exactly what it keeps.
TEST(KvStore, AZeroHeadroomFitsSegmentsExactly) {
  KvStore store(1, 1, 2, 4, 3, kFloat);
  store.set_unit_headroom(0);
  append_tokens(store, 0, 0, 3);
  EXPECT_EQ(store.allocated_slots(0), 6);
  append_tokens(store, 0, 3, 4);  // one token at a time: every append grows by exactly one
  EXPECT_EQ(store.segment_capacity(0, 0, 0), 7);
  EXPECT_EQ(store.segment_capacity(0, 0, 1), 7);
  store.retain(0, keep_only(store, 0, {{0, 1}, {0, 1, 2}}));
  EXPECT_EQ(store.segment_capacity(0, 0, 0), 2);
  EXPECT_EQ(store.segment_capacity(0, 0, 1), 3);
  EXPECT_EQ(store.memory().bytes_allocated, store.memory().bytes_logical);
  expect_entries_intact(store, 0);
}

TEST(KvStore, WithoutHeadroomCapacitiesOnlyGrow) {
  KvStore store(1, 2, 1, 4, 4, kFloat);
  append_tokens(store, 0, 0, 4);
  store.retain(0, keep_only(store, 0, {{3}, {0, 2}}));
  EXPECT_EQ(store.allocated_slots(0), 8);
  append_tokens(store, 0, 4, 3);  // row 1 needs 5 slots: doubles to 16 (at least 16)
  EXPECT_EQ(store.segment_capacity(0, 0, 0), 4);
  EXPECT_EQ(store.segment_capacity(0, 1, 0), 16);
  EXPECT_EQ(store.positions(0, 1, 0), (std::vector<int64_t>{0, 2, 4, 5, 6}));
  expect_entries_intact(store, 0);
}

TEST(KvStore, AttentionOverAnIrregularLayoutEqualsTheDenseLayout) {
  // Two stores with the same entries: one packed with uneven capacities, one regular.
  at::manual_seed(3);
  const int64_t rows = 2, kv = 2, d = 8, n_head = 4, tokens = 12;
  KvStore packed(1, rows, kv, d, 4, kFloat), regular(1, rows, kv, d, tokens, kFloat);
  packed.set_unit_headroom(2);
  for (int64_t p = 0; p < tokens; ++p) {
    at::Tensor k = at::randn({rows, kv, 1, d}), v = at::randn({rows, kv, 1, d});
    packed.append(0, k, v, {p});
    regular.append(0, k, v, {p});
  }
  at::Tensor keep = at::rand({rows, kv, tokens}) > 0.5;
  keep[0][0].fill_(false);
  keep[0][0][11] = true;  // one segment keeps a single entry
  keep[1][1].fill_(true);
  packed.retain(0, keep);
  regular.retain(0, keep);
  EXPECT_LT(packed.allocated_slots(0), regular.allocated_slots(0));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < kv; ++h) EXPECT_EQ(packed.positions(0, r, h), regular.positions(0, r, h));
  at::Tensor q = at::randn({rows, n_head, 1, d});
  for (bool want : {false, true}) {
    KvAttention a = packed.attend(0, q, {tokens}, /*causal=*/true, want, want);
    KvAttention b = regular.attend(0, q, {tokens}, /*causal=*/true, want, want);
    EXPECT_TRUE(at::allclose(a.out, b.out, 1e-5, 1e-6));
    if (want) {
      EXPECT_TRUE(at::allclose(a.probs, b.probs.narrow(-1, 0, a.probs.size(-1)), 1e-5, 1e-6));
      EXPECT_TRUE(at::allclose(a.key_mass, b.key_mass.narrow(-1, 0, a.key_mass.size(-1)), 1e-5, 1e-6));
    }
  }
  // The padded key view is the same entries.
  const int64_t length = packed.max_length(0);
  at::Tensor pk = packed.keys(0, length), rk = regular.keys(0, length);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < kv; ++h) {
      const int64_t n = packed.length(0, r, h);
      EXPECT_TRUE(at::equal(pk[r][h].narrow(0, 0, n), rk[r][h].narrow(0, 0, n)));
    }
  // Dropping the second row keeps the first row's segments, capacities and entries.
  const int64_t cap00 = packed.segment_capacity(0, 0, 0), cap01 = packed.segment_capacity(0, 0, 1);
  packed.keep_rows(0, 1);
  regular.keep_rows(0, 1);
  EXPECT_EQ(packed.segment_capacity(0, 0, 0), cap00);
  EXPECT_EQ(packed.segment_capacity(0, 0, 1), cap01);
  EXPECT_EQ(packed.allocated_slots(0), cap00 + cap01);
  at::Tensor q1 = q.narrow(0, 0, 1);
  EXPECT_TRUE(
      at::allclose(packed.attend(0, q1, {tokens}, true).out, regular.attend(0, q1, {tokens}, true).out, 1e-5, 1e-6));
}

// Many queries at once over a float32 store (a scale of a next-scale model) take
// LibTorch's fused attention when nothing is masked and no probabilities are
// asked: over the whole store when the segments are equal, per segment when a
// policy kept more in some heads. Both give the dense path's answer (which the
// same call takes when the probabilities are asked for); an empty segment gives zeros.
TEST(KvStore, ManyQueriesTakeTheFusedAttentionWithTheDenseAnswer) {
  at::manual_seed(5);
  const int64_t rows = 2, kv = 2, d = 8, n_head = 4, tokens = 40, queries = 80;
  KvStore store(1, rows, kv, d, tokens, kFloat);
  store.append(0, at::randn({rows, kv, tokens, d}), at::randn({rows, kv, tokens, d}), [&] {
    std::vector<int64_t> p(tokens);
    for (int64_t i = 0; i < tokens; ++i) p[static_cast<size_t>(i)] = i;
    return p;
  }());
  std::vector<int64_t> query_positions(queries);
  for (int64_t i = 0; i < queries; ++i) query_positions[static_cast<size_t>(i)] = tokens + i;
  const at::Tensor q = at::randn({rows, n_head, queries, d});
  auto expect_dense_answer = [&] {
    const KvAttention fused = store.attend(0, q, query_positions, /*causal=*/true, false, false);
    const KvAttention dense = store.attend(0, q, query_positions, /*causal=*/true, /*want_probs=*/true, false);
    ASSERT_EQ(fused.out.sizes(), dense.out.sizes());
    EXPECT_TRUE(at::allclose(fused.out, dense.out, 1e-4, 1e-5)) << (fused.out - dense.out).abs().max().item<float>();
  };
  expect_dense_answer();  // equal segments
  at::Tensor keep = at::rand({rows, kv, tokens}) > 0.6;
  keep[0][1].fill_(false);  // an empty segment
  keep[1][0].fill_(true);   // and a whole one
  store.retain(0, keep);
  ASSERT_NE(store.length(0, 1, 0), store.length(0, 1, 1));
  expect_dense_answer();  // unequal segments
  const KvAttention fused = store.attend(0, q, query_positions, true, false, false);
  EXPECT_EQ(fused.out[0].narrow(0, 2, 2).abs().max().item<float>(), 0.0f);  // the empty segment's two heads
}

// Entries set aside are out of attention's view and back after bring_back(),
// with their values, while the memory figures keep counting them.
TEST(KvStore, EntriesSetAsideAreHiddenFromAttentionCountedAndBroughtBack) {
  at::manual_seed(5);
  const int64_t rows = 2, kv = 2, d = 8, n_head = 4, tokens = 10;
  KvStore store(2, rows, kv, d, tokens, kFloat), without(2, rows, kv, d, tokens, kFloat);
  store.set_unit_headroom(0);
  append_tokens(store, 1, 0, tokens);  // layer 1: recognisable entries
  at::Tensor k = at::randn({rows, kv, tokens, d}), v = at::randn({rows, kv, tokens, d});
  std::vector<int64_t> all;
  for (int64_t p = 0; p < tokens; ++p) all.push_back(p);
  store.append(0, k, v, all);
  // The store without positions 3..5, for the reference attention.
  const std::vector<int64_t> shown = {0, 1, 2, 6, 7, 8, 9};
  const at::Tensor shown_index = at::tensor(shown, at::kLong);
  without.append(0, k.index_select(2, shown_index), v.index_select(2, shown_index), shown);
  const KvMemoryStats before = store.memory();

  at::Tensor aside = at::zeros({rows, kv, tokens}, at::kBool);
  aside.narrow(2, 3, 3).fill_(true);
  store.set_aside(0, aside);
  EXPECT_EQ(store.set_aside_count(0), 3);
  EXPECT_EQ(store.positions(0, 1, 1), shown);
  const at::Tensor q = at::randn({rows, n_head, 2, d});
  EXPECT_TRUE(at::allclose(store.attend(0, q, {tokens, tokens}, false).out,
                           without.attend(0, q, {tokens, tokens}, false).out, 1e-5, 1e-6));
  // Hidden, not freed and not evicted.
  EXPECT_EQ(store.memory().bytes_logical, before.bytes_logical);
  EXPECT_GE(store.memory().bytes_allocated, before.bytes_logical);
  EXPECT_EQ(store.evicted_first_row()[0], 0);
  EXPECT_THROW(store.set_aside(0, aside), Error) << "one group at a time";
  EXPECT_THROW(store.keep_rows(0, 1), Error);

  store.bring_back(0);
  EXPECT_EQ(store.set_aside_count(0), 0);
  EXPECT_EQ(store.positions(0, 0, 0), (std::vector<int64_t>{0, 1, 2, 6, 7, 8, 9, 3, 4, 5}));
  KvStore full(1, rows, kv, d, tokens, kFloat);
  full.append(0, k, v, all);
  EXPECT_TRUE(at::allclose(store.attend(0, q, {tokens, tokens}, false).out,
                           full.attend(0, q, {tokens, tokens}, false).out, 1e-5, 1e-6));
  EXPECT_EQ(store.memory().bytes_logical, before.bytes_logical);
  EXPECT_EQ(store.evicted_first_row()[0], 0);

  // Another layer's entries keep their values through a set-aside and back.
  at::Tensor odd = at::zeros({rows, kv, tokens}, at::kBool);
  for (int64_t p = 1; p < tokens; p += 2) odd.select(2, p).fill_(true);
  store.set_aside(1, odd);
  expect_entries_intact(store, 1);
  store.bring_back(1);
  expect_entries_intact(store, 1);
  EXPECT_EQ(store.length(1, 1, 0), tokens);

  // Segments that would hide different positions are refused.
  at::Tensor uneven = at::zeros({rows, kv, tokens}, at::kBool);
  uneven[0][0][2] = true;
  uneven[1][1][3] = true;
  try {
    store.set_aside(1, uneven);
    ADD_FAILURE() << "uneven set-aside accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the same positions in the same order"), std::string::npos) << e.what();
  }
  EXPECT_EQ(store.length(1, 0, 0), tokens) << "a refused set-aside changes nothing";
}

// Slots past a segment's length used to hold leftovers (on a GPU: whatever the
// allocator had, NaN included), and the dense attention path multiplied them by a
// probability of 0 — NaN all the same. Readers now see zeros there, and a half-
// precision store (the dense path, as on a GPU) attends to finite numbers.
TEST(KvStore, SlotsPastASegmentsLengthReadAsZero) {
  for (const auto dtype : {at::kFloat, at::kHalf}) {
    KvStore store(1, 1, 2, 4, 8, at::TensorOptions().dtype(dtype));
    append_tokens(store, 0, 0, 6);
    store.retain(0, keep_only(store, 0, {{4, 5}, {0, 1, 2, 3, 5}}));  // lengths 2 and 5
    const at::Tensor keys = store.keys(0, 5).to(at::kFloat), values = store.values(0, 5).to(at::kFloat);
    EXPECT_EQ(keys[0][0].narrow(0, 2, 3).abs().sum().item<float>(), 0.0f);  // head 0: slots 2..4
    EXPECT_EQ(values[0][0].narrow(0, 2, 3).abs().sum().item<float>(), 0.0f);
    EXPECT_GT(keys[0][1].narrow(0, 0, 5).abs().sum().item<float>(), 0.0f);  // head 1: all real
    // The dense path (half precision here, every dtype on a GPU) attends over them.
    at::Tensor q = at::ones({1, 2, 1, 4}, at::TensorOptions().dtype(dtype));
    const KvAttention a = store.attend(0, q, {9}, true, false, false);
    EXPECT_TRUE(at::isfinite(a.out.to(at::kFloat)).all().item<bool>()) << dtype;
  }
}

// The ragged kernel lives below the engine and throws its own error type; the
// store hands it on as the engine's InvalidArgumentError with the kernel's message.
TEST(KvStore, KernelArgumentErrorsReachCallersAsInvalidArgumentErrors) {
  KvStore store(1, 1, 2, 4, 8, kFloat);
  append_tokens(store, 0, 0, 3);
  at::Tensor wrong_head_dim = at::ones({1, 2, 1, 3}, kFloat);
  try {
    store.attend(0, wrong_head_dim, {3}, true);
    FAIL() << "expected an InvalidArgumentError";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("ragged attention: queries has shape [1, 2, 1, 3], expected [1, 2, 1, 4]"),
              std::string::npos)
        << e.what();
  }
}

// retain_layers is retain() for every layer at once: the layers given a mask end
// as retain() leaves them, the others are untouched; one mask per layer or an error.
TEST(KvStore, RetainLayersEqualsRetainPerLayer) {
  KvStore together(3, 2, 2, 4, 8, kFloat), one_by_one(3, 2, 2, 4, 8, kFloat);
  for (int64_t layer = 0; layer < 3; ++layer) {
    append_tokens(together, layer, 0, 6);
    append_tokens(one_by_one, layer, 0, 6);
  }
  const at::Tensor keep0 = keep_only(together, 0, {{0, 2}, {1}, {0, 1, 5}, {}});
  const at::Tensor keep2 = keep_only(together, 2, {{5}, {0, 3, 4}, {2}, {1, 2}});
  together.retain_layers({keep0, at::Tensor(), keep2});
  one_by_one.retain(0, keep0);
  one_by_one.retain(2, keep2);
  for (int64_t layer = 0; layer < 3; ++layer) {
    SCOPED_TRACE("layer " + std::to_string(layer));
    EXPECT_TRUE(at::equal(together.positions_tensor(layer), one_by_one.positions_tensor(layer)));
    EXPECT_TRUE(at::equal(together.lengths_tensor(layer), one_by_one.lengths_tensor(layer)));
    expect_entries_intact(together, layer);
  }
  EXPECT_EQ(together.max_length(1), 6) << "a layer without a mask keeps every entry";
  EXPECT_EQ(together.evicted_first_row(), one_by_one.evicted_first_row());
  EXPECT_THROW(together.retain_layers({keep0}), Error);
}
