// LazyMAR (engine/models/mar/lazymar_policy.h) on tiny random MAR models:
// refreshing every step is the full computation bit for bit; lazy steps recompute
// exactly the tokens of lowest layer-s value similarity plus the forced ones; the
// condition cache reuses the stored difference; any step count works (> 64);
// counted FLOPs match a hand count; bad parameters give clear errors; the session
// reports recomputed positions per step.
#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "engine/cache/policies/policy_catalog.h"
#include "engine/core/errors.h"
#include "engine/io/model_bundle.h"
#include "engine/models/generation_session.h"
#include "engine/models/mar/lazymar_policy.h"
#include "engine/models/mar/mar_flops.h"
#include "engine/models/mar/mar_model.h"
#include "engine/models/mar/mar_random.h"
#include "engine/models/mar/mar_random_init.h"
#include "engine/models/mar/masked_generation.h"
#include "tests/engine/test_helpers.h"
#include "tests/engine/tiny_mar.h"

using namespace kvs;
using namespace kvs::mar;

namespace {

// Decoder 5 blocks, so that the similarity block 3 exists.
MarConfig tiny_config(int64_t img_size = 64) { return test::tiny_mar_config(img_size, 5); }

struct TinyMar : test::TinyMar {
  explicit TinyMar(int64_t img_size = 64, uint64_t seed = 11) : test::TinyMar(tiny_config(img_size), seed) {}
};

MaskedParams params(int64_t steps, double cfg = 3.0) {
  MaskedParams p;
  p.num_iter = steps;
  p.cfg = cfg;
  return p;
}

std::unique_ptr<LazyMarCache> lazymar(const std::string& spec, const MarConfig& c, MarFlopCounter* flops = nullptr) {
  return make_masked_feature_cache(spec, c, flops);
}

// Wraps a LazyMarCache and records, per step, the input, z and the cache's report and state.
class Recorder : public MarFeatureCache {
 public:
  explicit Recorder(LazyMarCache& inner) : inner_(inner) {}
  struct Step {
    MarStepInput input;
    at::Tensor z, diff, last;
    LazyMarCache::StepReport report;
  };
  std::vector<Step> steps;
  at::Tensor condition(const MarTransformer& t, const MarStepInput& in) override {
    Step s;
    s.input = in;
    s.z = inner_.condition(t, in);
    s.report = inner_.last_step();
    if (inner_.condition_difference().defined()) s.diff = inner_.condition_difference().clone();
    s.last = inner_.last_decoder_output().clone();
    steps.push_back(s);
    return s.z;
  }

 private:
  LazyMarCache& inner_;
};

std::string cache_error(const std::string& spec) {
  try {
    lazymar(spec, tiny_config());
  } catch (const InvalidArgumentError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(LazyMar, RefreshingEveryStepEqualsFullExactly) {
  TinyMar tiny;
  const at::Tensor labels = at::tensor(std::vector<int64_t>{1, 3});
  for (double cfg : {3.0, 1.0}) {
    SeededMarRandom r1(5), r2(5);
    const auto full = generate_masked(tiny.model, labels, params(6, cfg), r1);
    auto cache = lazymar("lazymar:start=0,interval=1", tiny.model.config());
    MaskedHooks hooks;
    hooks.feature_cache = cache.get();
    const auto lazy = generate_masked(tiny.model, labels, params(6, cfg), r2, hooks);
    EXPECT_TRUE(at::equal(full.tokens, lazy.tokens)) << "cfg " << cfg;
    EXPECT_TRUE(cache->last_step().refresh);
    EXPECT_TRUE(cache->last_step().recomputed.all().item<bool>());
  }
  // The default schedule refreshes steps 0..5: a 5-step run is the full computation too.
  SeededMarRandom r3(6), r4(6);
  auto cache = lazymar("lazymar", tiny.model.config());
  MaskedHooks hooks;
  hooks.feature_cache = cache.get();
  EXPECT_TRUE(at::equal(generate_masked(tiny.model, labels, params(5), r3).tokens,
                        generate_masked(tiny.model, labels, params(5), r4, hooks).tokens));
}

TEST(LazyMar, LazyStepsRecomputeExactlyTheLeastSimilarAndForcedTokens) {
  TinyMar tiny;
  const MarConfig& c = tiny.model.config();
  const int64_t positions = c.buffer_size + c.seq_len();  // 20
  MarFlopCounter flops;
  auto cache = lazymar("lazymar:start=1,interval=100,retention=constant,ratio=1/2,extra=1", c, &flops);
  ASSERT_EQ(cache->similarity_layer(), 3);
  Recorder rec(*cache);
  MaskedHooks hooks;
  hooks.feature_cache = &rec;
  hooks.flops = &flops;
  std::vector<double> step_flops;
  hooks.on_step = [&](const MaskedStep&) { step_flops.push_back(flops.step); };
  SeededMarRandom rng(3);
  const auto result = generate_masked(tiny.model, at::tensor(std::vector<int64_t>{0, 2}), params(8), rng, hooks);
  EXPECT_TRUE(at::isfinite(result.tokens).all().item<bool>());
  ASSERT_EQ(rec.steps.size(), 8u);
  EXPECT_TRUE(rec.steps[0].report.refresh);
  EXPECT_TRUE(rec.steps[1].report.refresh);
  int lazy_steps = 0;
  for (size_t k = 2; k < rec.steps.size(); ++k) {
    const auto& s = rec.steps[k];
    ASSERT_FALSE(s.report.refresh) << k;
    ++lazy_steps;
    EXPECT_FALSE(s.report.unconditional_computed);
    const int64_t rows = 2;  // the conditional rows (the condition cache is on)
    ASSERT_EQ(s.report.selected.sizes(), (std::vector<int64_t>{rows, positions}));
    const at::Tensor forced =
        at::cat({at::zeros({rows, c.buffer_size}, at::kBool),
                 at::logical_or(s.input.to_predict.narrow(0, 0, rows), s.input.predicted_before.narrow(0, 0, rows))},
                1);
    const int64_t forced_count = forced[0].sum().item<int64_t>();
    EXPECT_EQ(s.report.forced_tokens, forced_count);
    const int64_t expected = std::min(positions, std::max(forced_count + 1, positions / 2));
    EXPECT_EQ(s.report.selected_tokens, expected) << k;
    for (int64_t r = 0; r < rows; ++r) {
      const at::Tensor sel = s.report.selected[r], sim = s.report.similarity[r], f = forced[r];
      EXPECT_EQ(sel.sum().item<int64_t>(), expected);
      // Every forced token is recomputed.
      EXPECT_TRUE(at::logical_or(sel, f.logical_not()).all().item<bool>()) << "step " << k << " row " << r;
      // Among the others, the recomputed ones are the least similar: max over them <= min over the reused ones.
      const at::Tensor free_sel = at::logical_and(sel, f.logical_not()), reused = sel.logical_not();
      if (free_sel.any().item<bool>() && reused.any().item<bool>()) {
        EXPECT_LE(sim.masked_select(free_sel).max().item<float>(), sim.masked_select(reused).min().item<float>());
      }
    }
    // The report's grid view is the selection without the buffer.
    EXPECT_TRUE(at::equal(s.report.recomputed, s.report.selected.narrow(1, c.buffer_size, c.seq_len())));
    // Reused tokens keep their previous last-block output; recomputed ones got new features.
    const at::Tensor prev = rec.steps[k - 1].last, now = s.last;
    const at::Tensor changed = (now - prev).abs().amax(-1) > 0;  // [rows, positions]
    EXPECT_TRUE(at::equal(changed.logical_and(s.report.selected.logical_not()), at::zeros_like(changed)))
        << "a reused token's features changed at step " << k;
    // FLOPs of the step, counted by hand from the selection: the encoder on the buffer +
    // the previous step's tokens, the decoder on every token up to block 3's attention,
    // then the selected ones, and the exact head on this step's tokens (both CFG halves).
    const int64_t known = c.seq_len() - static_cast<int64_t>(s.input.mask[0].sum().item<double>());
    const int64_t enc_tokens = c.buffer_size + known;
    const int64_t updated = c.buffer_size + s.input.predicted_before[0].sum().item<int64_t>();
    const int64_t n = s.report.selected_tokens;
    double hand = MarFlops::encoder_input(c, rows);
    hand += c.encoder_depth * (MarFlops::block_qkv(c, false, rows, updated) +
                               MarFlops::block_attend(c, false, rows, updated, enc_tokens) +
                               MarFlops::block_mlp(c, false, rows, updated));
    hand += MarFlops::decoder_input(c, rows, known);
    hand += 3 * MarFlops::block(c, true, rows, positions);
    hand += MarFlops::block_qkv(c, true, rows, positions) +
            MarFlops::block_attend(c, true, rows, positions, positions) + MarFlops::block_mlp(c, true, rows, n);
    hand += MarFlops::block_qkv(c, true, rows, n) + MarFlops::block_attend(c, true, rows, n, positions) +
            MarFlops::block_mlp(c, true, rows, n);
    hand += 5 * MarFlops::head_forward(c, 2 * rows * s.input.to_predict[0].sum().item<int64_t>());
    EXPECT_DOUBLE_EQ(step_flops[k], hand) << "step " << k;
  }
  EXPECT_EQ(lazy_steps, 6);
  // Fewer FLOPs than the full computation of the same run.
  MarFlopCounter full_flops;
  MaskedHooks full_hooks;
  full_hooks.flops = &full_flops;
  SeededMarRandom rng2(3);
  generate_masked(tiny.model, at::tensor(std::vector<int64_t>{0, 2}), params(8), rng2, full_hooks);
  EXPECT_LT(flops.total, full_flops.total);
}

TEST(LazyMar, ConditionCacheReusesTheStoredDifference) {
  TinyMar tiny;
  const MarConfig& c = tiny.model.config();
  // Token cache off: the lazy steps differ from the full computation only by the condition cache.
  auto cache = lazymar("lazymar:start=2,interval=3,token_cache=off", c);
  Recorder rec(*cache);
  // The refresh step's true difference, seen by an observer of the full computation.
  MaskedHooks hooks;
  hooks.feature_cache = &rec;
  SeededMarRandom rng(8);
  generate_masked(tiny.model, at::tensor(std::vector<int64_t>{4}), params(7), rng, hooks);
  ASSERT_EQ(rec.steps.size(), 7u);
  // Refresh steps: 0, 1, 2, 5; lazy: 3, 4, 6.
  const std::vector<bool> refresh{true, true, true, false, false, true, false};
  for (size_t k = 0; k < rec.steps.size(); ++k) EXPECT_EQ(rec.steps[k].report.refresh, refresh[k]) << k;
  for (size_t k : {size_t{2}, size_t{5}}) {
    // At a refresh the stored difference is the full computation's X_uncond - X_cond at the last block.
    const auto& s = rec.steps[k];
    at::Tensor last_block;
    MarBlockObserver observer;
    observer.after_block = [&](MarStack stack, int64_t layer, const at::Tensor& x) {
      if (stack == MarStack::Decoder && layer == c.decoder_depth - 1) last_block = x.clone();
    };
    const MarTransformer& t = *tiny.model.transformer;
    const at::Tensor z = t.forward_decoder(t.forward_encoder(s.input.tokens, s.input.mask, s.input.class_embedding,
                                                             &observer),
                                           s.input.mask, &observer);
    EXPECT_TRUE(at::equal(z, s.z));
    EXPECT_TRUE(at::equal(s.diff, last_block.narrow(0, 1, 1) - last_block.narrow(0, 0, 1)));
  }
  for (size_t k : {size_t{3}, size_t{4}, size_t{6}}) {
    const auto& s = rec.steps[k];
    const size_t refreshed_at = k == 6 ? 5 : 2;
    EXPECT_FALSE(s.report.unconditional_computed);
    EXPECT_TRUE(s.report.recomputed.all().item<bool>());  // token cache off
    // The stored difference is unchanged, and the unconditional rows are the conditional ones plus it.
    EXPECT_TRUE(at::equal(s.diff, rec.steps[refreshed_at].diff));
    const MarTransformer& t = *tiny.model.transformer;
    const at::Tensor expected = t.decoder_output(at::cat({s.last, s.last + s.diff}, 0));
    EXPECT_TRUE(at::equal(s.z, expected)) << "step " << k;
    EXPECT_EQ(s.z.size(0), 2);
  }
}

// LazyMAR Table 2's "token cache only" row: with condition_cache=off the lazy
// steps run the unconditional rows too, through the same token cache.
TEST(LazyMar, WithoutTheConditionCacheLazyStepsRunBothCfgHalves) {
  TinyMar tiny;
  const MarConfig& c = tiny.model.config();
  const int64_t positions = c.buffer_size + c.seq_len();
  auto run = [&](const std::string& spec, std::vector<double>* step_flops) {
    MarFlopCounter flops;
    auto cache = lazymar(spec, c, &flops);
    auto rec = std::make_unique<Recorder>(*cache);
    MaskedHooks hooks;
    hooks.feature_cache = rec.get();
    hooks.flops = &flops;
    hooks.on_step = [&](const MaskedStep&) { step_flops->push_back(flops.step); };
    SeededMarRandom rng(3);
    generate_masked(tiny.model, at::tensor(std::vector<int64_t>{0, 2}), params(8), rng, hooks);
    return std::make_pair(std::move(cache), std::move(rec));
  };
  const std::string base = "lazymar:start=1,interval=100,retention=constant,ratio=1/2,extra=1";
  std::vector<double> off_flops, on_flops;
  auto [off_cache, off] = run(base + ",condition_cache=off", &off_flops);
  auto [on_cache, on] = run(base, &on_flops);
  ASSERT_EQ(off->steps.size(), 8u);
  const int64_t rows = 4;  // 2 images x (conditional, unconditional)
  for (size_t k = 2; k < off->steps.size(); ++k) {
    const auto& s = off->steps[k];
    ASSERT_FALSE(s.report.refresh) << k;
    EXPECT_TRUE(s.report.unconditional_computed) << k;
    EXPECT_FALSE(s.diff.defined()) << k;  // no stored difference stands in
    // Every row, the unconditional ones included, recomputes the same number of
    // tokens, its forced tokens among them, and reuses the others' features.
    ASSERT_EQ(s.report.selected.sizes(), (std::vector<int64_t>{rows, positions}));
    const at::Tensor forced = at::cat({at::zeros({rows, c.buffer_size}, at::kBool),
                                       at::logical_or(s.input.to_predict, s.input.predicted_before)},
                                      1);
    for (int64_t r = 0; r < rows; ++r) {
      EXPECT_EQ(s.report.selected[r].sum().item<int64_t>(), s.report.selected_tokens) << k;
      EXPECT_TRUE(at::logical_or(s.report.selected[r], forced[r].logical_not()).all().item<bool>()) << k;
    }
    EXPECT_LT(s.report.selected_tokens, positions) << k;
    const at::Tensor changed = (s.last - off->steps[k - 1].last).abs().amax(-1) > 0;
    EXPECT_TRUE(at::equal(changed.logical_and(s.report.selected.logical_not()), at::zeros_like(changed))) << k;
    EXPECT_EQ(s.z.size(0), rows);
    EXPECT_TRUE(at::equal(s.z, tiny.model.transformer->decoder_output(s.last))) << k;
    // The condition cache's saving is the unconditional half: more work without it.
    EXPECT_GT(off_flops[k], on_flops[k]) << k;
    EXPECT_FALSE(on->steps[k].report.unconditional_computed) << k;
  }
}

TEST(LazyMar, AnyStepCountWorksBeyondTheOfficial64) {
  EXPECT_EQ(lazymar_official_retention().size(), 64u);
  LazyMarParams p;
  // Stretched over the step count: identical at 64 steps, defined past 64.
  for (int64_t k = 0; k < 64; ++k)
    EXPECT_EQ(p.retention_ratio(k, 64), lazymar_official_retention()[static_cast<size_t>(k)]);
  EXPECT_EQ(p.retention_ratio(199, 200), 0.05);
  EXPECT_EQ(p.retention_ratio(0, 200), 1.0);
  EXPECT_EQ(p.retention_ratio(5, 16), lazymar_official_retention()[20]);
  // A 16x16 grid (256 tokens) generated in 70 steps: many lazy steps past step 64.
  TinyMar tiny(256);
  auto cache = lazymar("lazymar", tiny.model.config());
  Recorder rec(*cache);
  MaskedHooks hooks;
  hooks.feature_cache = &rec;
  SeededMarRandom rng(2);
  const auto result = generate_masked(tiny.model, at::tensor(std::vector<int64_t>{1}), params(70), rng, hooks);
  EXPECT_TRUE(at::isfinite(result.tokens).all().item<bool>());
  ASSERT_EQ(rec.steps.size(), 70u);
  EXPECT_FALSE(rec.steps[69].report.refresh);  // (69 - 5) % 9 != 0
  EXPECT_TRUE(rec.steps[68].report.refresh);   // (68 - 5) % 9 == 0
  EXPECT_LT(rec.steps[69].report.selected_tokens, 4 + 256);
  int64_t predicted = 0;
  for (int64_t p2 : result.predicted_per_step) predicted += p2;
  EXPECT_EQ(predicted, 256);
}

TEST(LazyMar, FlopCountsMatchAHandCount) {
  const MarConfig c = tiny_config();
  // One row, nothing known yet (buffer of 4 in the encoder, 20 positions in the decoder):
  // z_proj 2*16*4*32 = 4096; encoder block on 4 tokens: qkv 2*4*32*96 = 24576, attention
  // 4*4*4*32 = 2048, proj 2*4*32*32 = 8192, MLP 2*2*4*32*128 = 65536 -> 100352, x2;
  // decoder_embed 2*4*32*32 = 8192; decoder block on 20 tokens: qkv 122880, attention
  // 4*20*20*32 = 51200, proj 40960, MLP 327680 -> 542720, x5.
  EXPECT_EQ(MarFlops::full_transformer(c, 1, 0), 4096.0 + 2 * 100352.0 + 8192.0 + 5 * 542720.0);
  // Head on one row: time MLP 2*256*32 + 2*32*32, cond 2*32*32, input 2*4*32, ResBlock
  // adaLN 2*32*96 + MLP 2*2*32*32, final adaLN 2*32*64 + linear 2*32*8.
  EXPECT_EQ(MarFlops::head_forward(c, 1), 16384.0 + 2048 + 2048 + 256 + 6144 + 4096 + 4096 + 512);
  // A whole 2-step run with guidance (1 image): step 0 predicts 5 tokens (16 - floor(16 cos(pi/4))),
  // step 1 the other 11; both CFG rows run the transformer and the head, 5 reverse steps each.
  TinyMar tiny;
  GenerationRequest request;
  request.model_path = tiny.dir.path().string();
  request.class_ids = {1};
  request.cfg_scale = 2.0;
  request.steps = 2;
  request.device = "cpu";
  request.threads = 1;
  GenerationSession session;
  const GenerationResult result = session.run(request);
  const double per_row_step1 = 4096.0 + 2 * 231552.0 + 18432.0 + 5 * 542720.0;  // 5 known: encoder blocks on 9 tokens
  EXPECT_EQ(result.flops, 2 * 2926592.0 + 5 * 35584.0 * 10 + 2 * per_row_step1 + 5 * 35584.0 * 22);
  EXPECT_EQ(result.flops, 17945088.0);
}

TEST(LazyMar, BadParametersGiveClearErrors) {
  EXPECT_NE(cache_error("lazymar:interval=0").find("policy lazymar: interval 0 is impossible"), std::string::npos);
  EXPECT_NE(cache_error("lazymar:start=-1").find("policy lazymar: start -1 is impossible"), std::string::npos);
  EXPECT_NE(cache_error("lazymar:ratio=0").find("ratio"), std::string::npos);
  EXPECT_NE(cache_error("lazymar:ratio=3/2").find("0 < ratio <= 1"), std::string::npos);
  EXPECT_NE(cache_error("lazymar:extra=-3").find("extra -3 is impossible"), std::string::npos);
  EXPECT_NE(cache_error("lazymar:layer=-1").find("layer -1 is impossible"), std::string::npos);
  EXPECT_NE(cache_error("lazymar:retention=cubic").find("must be one of official, constant"), std::string::npos);
  EXPECT_NE(cache_error("lazymar:interval=2.5").find("expects an integer"), std::string::npos);
  EXPECT_NE(cache_error("lazymar:tau=3").find("unknown parameter 'tau'"), std::string::npos);
  EXPECT_NE(cache_error("linear:rho=1/6").find("masked (MAR) models take full, lazymar"), std::string::npos);
  EXPECT_EQ(lazymar("full", tiny_config()), nullptr);
  // A raster model is told what lazymar is.
  EXPECT_NE(test::policy_error("lazymar", test::small_policy_context(4)).find("feature cache for masked (MAR) models"),
            std::string::npos);
  // The registry and the catalog list it for the masked family only, with described parameters.
  const auto* entry = find_policy_entry("lazymar");
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->families, std::vector<std::string>{"masked"});
  EXPECT_EQ(entry->params.size(), 11u);
  EXPECT_NE(cache_error("lazymar:head_threshold=0").find("head_threshold 0 is impossible"), std::string::npos);
  EXPECT_NE(cache_error("lazymar:head_cache=maybe").find("must be one of on, off"), std::string::npos);
  for (const auto& p : entry->params) EXPECT_FALSE(p.help.empty()) << p.name;
  EXPECT_TRUE(serves_masked_family("full"));
  EXPECT_FALSE(serves_masked_family("linear"));
  EXPECT_TRUE(policy_spec_problem("lazymar:start=4,interval=5").empty());
}

TEST(LazyMar, SessionReportsRecomputedPositionsAndFlopsPerStep) {
  TinyMar tiny;
  struct Sink : EventSink {
    std::vector<UnitDoneEvent> units;
    double finished_flops = -1;
    void on_event(const GenerationEvent& e) override {
      if (const auto* u = std::get_if<UnitDoneEvent>(&e)) units.push_back(*u);
      if (const auto* f = std::get_if<FinishedEvent>(&e)) finished_flops = f->flops;
    }
  };
  GenerationRequest request;
  request.model_path = tiny.dir.path().string();
  request.class_ids = {1, 2};
  request.seed = 4;
  request.cfg_scale = 2.5;
  request.steps = 8;
  request.device = "cpu";
  request.threads = 1;
  GenerationSession session;
  Sink full_sink, lazy_sink;
  const GenerationResult full = session.run(request, &full_sink);
  request.policy = parse_policy_spec("lazymar:start=2,interval=4,retention=constant,ratio=1/4,extra=0");
  const GenerationResult lazy = session.run(request, &lazy_sink);
  ASSERT_EQ(full_sink.units.size(), 8u);
  ASSERT_EQ(lazy_sink.units.size(), 8u);
  double full_sum = 0, lazy_sum = 0;
  for (size_t k = 0; k < 8; ++k) {
    const UnitDoneEvent& f = full_sink.units[k];
    const UnitDoneEvent& u = lazy_sink.units[k];
    EXPECT_EQ(f.recomputed, std::vector<uint8_t>(16, 1));
    EXPECT_TRUE(f.unconditional_computed);
    ASSERT_EQ(u.recomputed.size(), 16u);
    const bool refresh = k < 2 || (k - 2) % 4 == 0;
    EXPECT_EQ(u.unconditional_computed, refresh) << k;
    const int64_t recomputed = std::count(u.recomputed.begin(), u.recomputed.end(), uint8_t{1});
    if (refresh) {
      EXPECT_EQ(recomputed, 16) << k;
      EXPECT_DOUBLE_EQ(u.flops, f.flops) << k;
    } else {
      EXPECT_LT(recomputed, 16) << k;
      EXPECT_LT(u.flops, f.flops) << k;
      // This step's and the previous step's predicted positions are always recomputed.
      for (int32_t pos : u.predicted_positions) EXPECT_EQ(u.recomputed[static_cast<size_t>(pos)], 1) << k;
      for (int32_t pos : lazy_sink.units[k - 1].predicted_positions)
        EXPECT_EQ(u.recomputed[static_cast<size_t>(pos)], 1) << k;
    }
    full_sum += f.flops;
    lazy_sum += u.flops;
  }
  EXPECT_DOUBLE_EQ(full.flops, full_sum);
  EXPECT_DOUBLE_EQ(lazy.flops, lazy_sum);
  EXPECT_DOUBLE_EQ(full_sink.finished_flops, full.flops);
  EXPECT_LT(lazy.flops, full.flops);
  EXPECT_EQ(lazy.images.size(), 2u);
}

TEST(LazyMar, ASwitchAskedForMidRunIsRefusedWithTheReason) {
  TinyMar tiny;
  GenerationRequest request;
  request.model_path = tiny.dir.path().string();
  request.class_ids = {1};
  request.steps = 4;
  request.device = "cpu";
  request.threads = 1;
  request.policy = parse_policy_spec("lazymar");
  GenerationSession session;
  struct Sink : EventSink {
    GenerationSession* session = nullptr;
    std::vector<std::string> asks;
    std::vector<PolicyChangedEvent> changes;
    size_t units = 0;
    void on_event(const GenerationEvent& e) override {
      if (std::holds_alternative<UnitDoneEvent>(e) && units < asks.size())
        session->request_policy_change(asks[units++]);
      if (const auto* p = std::get_if<PolicyChangedEvent>(&e)) changes.push_back(*p);
    }
  } sink;
  sink.session = &session;
  sink.asks = {"full", "lazymar:layer=-1", "lazymar"};
  const GenerationResult plain = session.run(request);
  const GenerationResult asked = session.run(request, &sink);
  ASSERT_EQ(sink.changes.size(), 3u);
  // A valid spec: refused, it applies from the next generation.
  EXPECT_FALSE(sink.changes[0].accepted);
  EXPECT_EQ(sink.changes[0].policy, "lazymar");
  EXPECT_NE(sink.changes[0].message.find("'full' applies from the next generation"), std::string::npos)
      << sink.changes[0].message;
  // An invalid one: its own problem.
  EXPECT_FALSE(sink.changes[1].accepted);
  EXPECT_NE(sink.changes[1].message.find("layer -1 is impossible"), std::string::npos) << sink.changes[1].message;
  // The active one: nothing to change.
  EXPECT_TRUE(sink.changes[2].accepted);
  // The run went on with its own policy.
  EXPECT_EQ(asked.tokens, plain.tokens);
  EXPECT_EQ(asked.flops, plain.flops);
}
