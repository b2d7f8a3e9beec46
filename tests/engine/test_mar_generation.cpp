// MAR generation on tiny random models: seeded runs reproduce, every token is
// predicted exactly once in the order's reverse, the step hook sees the tokens
// known so far, a feature cache built from the transformer's pieces reproduces
// the full computation bit for bit, the block observer sees every layer,
// cancellation, and the session's per-step events.
#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <optional>

#include <nlohmann/json.hpp>

#include "engine/core/errors.h"
#include "engine/io/model_bundle.h"
#include "engine/models/generation_session.h"
#include "engine/models/mar/mar_model.h"
#include "engine/models/mar/mar_random.h"
#include "engine/models/mar/mar_random_init.h"
#include "engine/models/mar/masked_generation.h"
#include "engine/models/model_catalog.h"
#include "tests/engine/test_helpers.h"
#include "tests/engine/tiny_mar.h"

using namespace kvs;
using namespace kvs::mar;

namespace {

using test::TinyMar;

MaskedParams params(int64_t steps, double cfg = 3.0) {
  MaskedParams p;
  p.num_iter = steps;
  p.cfg = cfg;
  return p;
}

// The full computation, rebuilt from the transformer's pieces, as a feature cache would run it.
class PiecewiseCache : public MarFeatureCache {
 public:
  int64_t calls = 0;
  at::Tensor condition(const MarTransformer& t, const MarStepInput& in) override {
    ++calls;
    at::Tensor x = t.encoder_input(in.tokens, in.mask, in.class_embedding);
    for (int64_t i = 0; i < t.depth(MarStack::Encoder); ++i) {
      const MarBlockQkv qkv = t.block_qkv(MarStack::Encoder, i, x);
      x = t.block_mlp(MarStack::Encoder, i, t.block_attend(MarStack::Encoder, i, x, qkv.q, qkv.k, qkv.v));
    }
    x = t.decoder_input(t.encoder_output(x), in.mask);
    for (int64_t i = 0; i < t.depth(MarStack::Decoder); ++i) x = t.block_forward(MarStack::Decoder, i, x);
    return t.decoder_output(x);
  }
};

}  // namespace

TEST(MarGeneration, SeededRunsReproduceAndDiffer) {
  TinyMar tiny;
  const at::Tensor labels = at::tensor(std::vector<int64_t>{1, 3});
  SeededMarRandom r1(7), r2(7), r3(8);
  const auto a = generate_masked(tiny.model, labels, params(4), r1);
  const auto b = generate_masked(tiny.model, labels, params(4), r2);
  const auto c = generate_masked(tiny.model, labels, params(4), r3);
  EXPECT_TRUE(at::equal(a.tokens, b.tokens));
  EXPECT_TRUE(at::equal(a.orders, b.orders));
  EXPECT_FALSE(at::equal(a.tokens, c.tokens));
  EXPECT_EQ(a.tokens.sizes(), (std::vector<int64_t>{2, 16, 4}));
  EXPECT_TRUE(at::isfinite(a.tokens).all().item<bool>());
  EXPECT_EQ(tiny.model.unpatchify(a.tokens).sizes(), (std::vector<int64_t>{2, 4, 4, 4}));
  EXPECT_EQ(tiny.model.decode_tokens(a.tokens).sizes(), (std::vector<int64_t>{2, 3, 8, 8}));
  // Guidance on and off give different tokens from the same draws.
  SeededMarRandom r4(7);
  EXPECT_FALSE(at::equal(generate_masked(tiny.model, labels, params(4, 1.0), r4).tokens, a.tokens));
}

TEST(MarGeneration, StepsPredictEveryTokenOnceInOrder) {
  TinyMar tiny;
  SeededMarRandom rng(3);
  MaskedHooks hooks;
  std::vector<int64_t> done, predicted;
  at::Tensor seen = at::zeros({2, 16}, at::TensorOptions().dtype(at::kBool));
  hooks.on_step = [&](const MaskedStep& s) {
    done.push_back(s.tokens_done);
    predicted.push_back(s.predicted);
    EXPECT_EQ(s.steps_total, 6);
    // Predicted now: never predicted before, now known; known tokens are non-zero, unknown ones zero.
    EXPECT_FALSE(at::logical_and(seen, *s.predicted_mask).any().item<bool>());
    seen = at::logical_or(seen, *s.predicted_mask);
    EXPECT_TRUE(at::equal(seen, *s.known));
    EXPECT_TRUE(at::equal(s.tokens->abs().sum(2) != 0, *s.known));
    // The tokens still unknown are the first ones of each image's order.
    const int64_t unknown = 16 - s.tokens_done;
    for (int64_t b = 0; b < 2; ++b)
      EXPECT_FALSE(s.known->index_select(1, (*s.orders)[b].narrow(0, 0, unknown))[b].any().item<bool>());
  };
  const auto result = generate_masked(tiny.model, at::tensor(std::vector<int64_t>{0, 4}), params(6), rng, hooks);
  EXPECT_TRUE(seen.all().item<bool>());
  EXPECT_EQ(done.back(), 16);
  int64_t total = 0;
  for (int64_t p : predicted) total += p;
  EXPECT_EQ(total, 16);
  EXPECT_EQ(result.predicted_per_step, predicted);
  // cosine schedule over 16 tokens and 6 steps: unknown after each step 15, 13, 11, 8, 4, (all known).
  EXPECT_EQ(done, (std::vector<int64_t>{1, 3, 5, 8, 12, 16}));
  // Linear guidance grows towards cfg.
  ASSERT_EQ(result.cfg_per_step.size(), 6u);
  EXPECT_LT(result.cfg_per_step.front(), result.cfg_per_step.back());
  EXPECT_LT(result.cfg_per_step.back(), 3.0);
}

TEST(MarGeneration, FeatureCacheFromPiecesEqualsFullComputation) {
  TinyMar tiny;
  const at::Tensor labels = at::tensor(std::vector<int64_t>{2});
  SeededMarRandom r1(9), r2(9);
  PiecewiseCache cache;
  MaskedHooks hooks;
  hooks.feature_cache = &cache;
  const auto full = generate_masked(tiny.model, labels, params(3), r1);
  const auto pieces = generate_masked(tiny.model, labels, params(3), r2, hooks);
  EXPECT_EQ(cache.calls, 3);
  EXPECT_TRUE(at::equal(full.tokens, pieces.tokens));
}

TEST(MarGeneration, ObserverSeesEveryBlockWithItsValues) {
  TinyMar tiny;
  std::vector<std::string> calls;
  MarBlockObserver observer;
  observer.on_qkv = [&](MarStack s, int64_t layer, const MarBlockQkv& qkv) {
    calls.push_back((s == MarStack::Encoder ? "enc" : "dec") + std::to_string(layer));
    EXPECT_EQ(qkv.v.size(1), 2);   // heads
    EXPECT_EQ(qkv.v.size(3), 16);  // head_dim
    // The decoder sees buffer + all tokens; rows are doubled by CFG.
    if (s == MarStack::Decoder) {
      EXPECT_EQ(qkv.v.sizes(), (std::vector<int64_t>{2, 2, 20, 16}));
    }
  };
  MaskedHooks hooks;
  hooks.observer = &observer;
  SeededMarRandom rng(1);
  generate_masked(tiny.model, at::tensor(std::vector<int64_t>{2}), params(2), rng, hooks);
  EXPECT_EQ(calls, (std::vector<std::string>{"enc0", "enc1", "dec0", "dec1", "enc0", "enc1", "dec0", "dec1"}));
}

TEST(MarGeneration, CancelAndBadInputs) {
  TinyMar tiny;
  SeededMarRandom rng(1);
  MaskedHooks hooks;
  int64_t polls = 0;
  hooks.cancelled = [&] { return ++polls > 3; };  // cancelled inside the first step's diffusion loop
  EXPECT_THROW(generate_masked(tiny.model, at::tensor(std::vector<int64_t>{1}), params(4), rng, hooks), CancelledError);
  SeededMarRandom rng2(1);
  EXPECT_THROW(generate_masked(tiny.model, at::tensor(std::vector<int64_t>{5}), params(4), rng2), InvalidArgumentError);
  EXPECT_THROW(generate_masked(tiny.model, at::tensor(std::vector<int64_t>{1}), params(0), rng2), InvalidArgumentError);
  // The encoder needs the same number of unknown tokens in every row.
  at::Tensor mask = at::zeros({2, 16});
  mask[0][3] = 1;
  EXPECT_THROW(tiny.model.transformer->forward_encoder(at::zeros({2, 16, 4}), mask,
                                                       tiny.model.transformer->class_embedding(
                                                           at::tensor(std::vector<int64_t>{0, 1}))),
               InvalidArgumentError);
}

TEST(MarGeneration, SessionStreamsOneUnitPerStep) {
  TinyMar tiny;
  struct Sink : EventSink {
    std::vector<GenerationEvent> events;
    void on_event(const GenerationEvent& e) override { events.push_back(e); }
  } sink;
  GenerationRequest request;
  request.model_path = tiny.dir.path().string();
  request.class_ids = {1, 2};
  request.seed = 4;
  request.cfg_scale = 2.0;
  request.steps = 5;
  request.device = "cpu";
  request.threads = 1;
  request.preview_every_units = 2;
  GenerationSession session;
  const GenerationResult result = session.run(request, &sink);
  ASSERT_EQ(result.images.size(), 2u);
  EXPECT_EQ(result.images[0].width, 8);
  ASSERT_EQ(result.tokens.size(), 2u);
  std::vector<int32_t> order = result.tokens[0];
  std::sort(order.begin(), order.end());
  for (int32_t i = 0; i < 16; ++i) EXPECT_EQ(order[static_cast<size_t>(i)], i);  // a permutation
  const auto* started = std::get_if<StartedEvent>(&sink.events.front());
  ASSERT_NE(started, nullptr);
  EXPECT_EQ(started->unit_name, "step");
  EXPECT_EQ(started->family, "mar");
  EXPECT_EQ(started->units_total, 5);
  std::vector<int32_t> positions;
  int units = 0, previews = 0;
  for (const auto& e : sink.events)
    if (const auto* u = std::get_if<UnitDoneEvent>(&e)) {
      EXPECT_EQ(u->unit_index, units);
      ++units;
      if (u->preview) ++previews;
      // No KV cache: no evictions or regions; the process memory comes with every family's units.
      EXPECT_EQ(u->evicted_entries, 0);
      EXPECT_TRUE(u->regions.empty());
      EXPECT_GT(u->process_resident_bytes.value_or(0), 0);
      positions.insert(positions.end(), u->predicted_positions.begin(), u->predicted_positions.end());
    }
  EXPECT_EQ(units, 5);
  EXPECT_EQ(previews, 2);  // after units 1 and 3 (every second unit)
  // Image 0's predicted positions over all steps cover every token once.
  EXPECT_EQ(positions.size(), 16u);
  std::vector<int32_t> sorted_positions = positions;
  std::sort(sorted_positions.begin(), sorted_positions.end());
  EXPECT_EQ(sorted_positions, order);
  EXPECT_TRUE(std::holds_alternative<FinishedEvent>(sink.events.back()));
  // The same request gives the same images; a KV policy is refused with a message.
  const GenerationResult again = session.run(request);
  EXPECT_EQ(again.images[1].pixels, result.images[1].pixels);
  request.policy = parse_policy_spec("streaming:rho=1/4");
  EXPECT_THROW(session.run(request), InvalidArgumentError);
}

TEST(MarGeneration, CatalogListsMarBundles) {
  TinyMar tiny;
  const ModelSummary s = summarize_model_bundle(tiny.dir.path().string());
  EXPECT_TRUE(s.usable()) << s.problem;
  EXPECT_EQ(s.family, "mar");
  EXPECT_EQ(s.grid, 4);
  EXPECT_EQ(s.image_size, 8);
  EXPECT_EQ(s.num_classes, 5);
  EXPECT_EQ(s.kv_bytes_per_token, 0);
  EXPECT_NE(s.architecture.find("MAR width 32"), std::string::npos) << s.architecture;
  EXPECT_FALSE(s.sampling_defaults.steps.has_value());  // this bundle records none
}

TEST(MarGeneration, CatalogReadsTheRecordedStepsAndCfgSchedule) {
  TinyMar tiny;
  const std::string manifest_path = (tiny.dir.path() / "model.json").string();
  nlohmann::json manifest = nlohmann::json::parse(std::ifstream(manifest_path));
  manifest["sampling_defaults"] = {{"cfg_scale", 3.0}, {"cfg_schedule", "constant"}, {"steps", 32}};
  std::ofstream(manifest_path) << manifest.dump(2);
  const ModelSummary s = summarize_model_bundle(tiny.dir.path().string());
  ASSERT_TRUE(s.usable()) << s.problem;
  EXPECT_EQ(s.sampling_defaults.steps, std::optional<int64_t>(32));
  EXPECT_EQ(s.sampling_defaults.cfg_schedule, std::optional<std::string>("constant"));
  EXPECT_EQ(s.sampling_defaults.cfg_scale, std::optional<double>(3.0));
}

namespace {

// Runs the tiny MAR with attention maps on and returns each step's event.
std::vector<UnitDoneEvent> steps_with_attention(const std::string& dir, const std::string& policy, int64_t layer = -1,
                                                int64_t head = -1) {
  struct Sink : EventSink {
    std::vector<UnitDoneEvent> units;
    void on_event(const GenerationEvent& e) override {
      if (const auto* u = std::get_if<UnitDoneEvent>(&e)) units.push_back(*u);
    }
  } sink;
  GenerationRequest request;
  request.model_path = dir;
  request.class_ids = {1, 3};
  request.seed = 9;
  request.cfg_scale = 2.0;
  request.steps = 5;
  request.device = "cpu";
  request.threads = 1;
  request.policy = parse_policy_spec(policy);
  request.emit_attention_map = true;
  request.attention_layer = layer;
  request.attention_head = head;
  GenerationSession session;
  session.run(request, &sink);
  return sink.units;
}

// Every map: buffer + grid positions, sums to 1, nothing on tokens still
// unknown before the step (step 0: all on the buffer), queries at a new token.
void expect_maps_over_known_tokens(const std::vector<UnitDoneEvent>& units) {
  const int64_t buffer = test::tiny_mar_config().buffer_size, grid = 16;
  std::vector<bool> known(grid, false);
  ASSERT_EQ(units.size(), 5u);
  for (const UnitDoneEvent& u : units) {
    ASSERT_TRUE(u.attention.has_value()) << "step " << u.unit_index;
    const AttentionMap& m = *u.attention;
    ASSERT_EQ(m.positions, buffer + grid);
    ASSERT_EQ(m.weights.size(), static_cast<size_t>(buffer + grid));
    double total = 0, on_buffer = 0;
    for (int64_t p = 0; p < m.positions; ++p) {
      const float w = m.weights[static_cast<size_t>(p)];
      EXPECT_GE(w, 0.0f);
      total += w;
      if (p < buffer) {
        on_buffer += w;
      } else if (!known[static_cast<size_t>(p - buffer)]) {
        EXPECT_EQ(w, 0.0f) << "step " << u.unit_index << " position " << p;
      }
    }
    EXPECT_NEAR(total, 1.0, 1e-4);
    if (u.unit_index == 0) {
      EXPECT_NEAR(on_buffer, 1.0, 1e-4);
    }
    EXPECT_EQ(m.query_position, buffer + u.predicted_positions.front());
    for (int32_t p : u.predicted_positions) known[static_cast<size_t>(p)] = true;
  }
}

}  // namespace

TEST(MarGeneration, SessionAttentionOfNewTokensOverKnownTokens) {
  TinyMar tiny;
  const std::string dir = tiny.dir.path().string();
  const auto full = steps_with_attention(dir, "full");
  expect_maps_over_known_tokens(full);
  // The maps differ from step to step (more tokens known, other queries).
  EXPECT_NE(full[3].attention->weights, full[4].attention->weights);

  // LazyMAR refreshing every step is the full computation, maps included.
  const auto refresh = steps_with_attention(dir, "lazymar:start=0,interval=1");
  ASSERT_EQ(refresh.size(), full.size());
  for (size_t i = 0; i < full.size(); ++i)
    for (size_t p = 0; p < full[i].attention->weights.size(); ++p)
      EXPECT_NEAR(refresh[i].attention->weights[p], full[i].attention->weights[p], 1e-5) << "step " << i;

  // Lazy steps (features reused past block 0): the new tokens are recomputed, so their maps stay valid.
  const auto lazy = steps_with_attention(dir,
                                         "lazymar:start=1,interval=100,layer=0,retention=constant,ratio=1/2,extra=1");
  expect_maps_over_known_tokens(lazy);
  bool reused = false;
  for (const auto& u : lazy) reused |= std::count(u.recomputed.begin(), u.recomputed.end(), 0) > 0;
  EXPECT_TRUE(reused);

  // One decoder layer and head: a different map, same rules; out-of-range ones are refused.
  const auto one = steps_with_attention(dir, "full", 1, 0);
  expect_maps_over_known_tokens(one);
  EXPECT_EQ(one[2].attention->layer, 1);
  EXPECT_EQ(one[2].attention->head, 0);
  EXPECT_NE(one[2].attention->weights, full[2].attention->weights);
  EXPECT_THROW(steps_with_attention(dir, "full", 2, -1), InvalidArgumentError);
  EXPECT_THROW(steps_with_attention(dir, "full", -1, 2), InvalidArgumentError);
}
