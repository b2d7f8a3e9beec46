// LlamaGen port behaviour beyond the conformance case: any valid config (here
// grouped-query attention), KV-cached decoding equal to the full forward, the
// class-token sink, reproducible seeds, cfg_interval and cancellation.
#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <gtest/gtest.h>

#include "engine/core/errors.h"
#include "engine/io/model_bundle.h"
#include "engine/io/safetensors_reader.h"
#include "engine/models/llamagen/llamagen_generation.h"
#include "engine/models/llamagen/llamagen_model.h"
#include "engine/models/llamagen/llamagen_random_init.h"
#include "engine/models/llamagen/rope_2d.h"
#include "tests/engine/test_helpers.h"

using namespace kvs;
using namespace kvs::llamagen;
using namespace kvs::raster;

namespace {

struct TinyModel {
  test::TempDir dir;
  LlamaGenModel model;
  TinyModel() {
    write_random_llamagen_bundle(dir.path().string(), "tiny", test::tiny_gqa_gpt(), test::tiny_vq(), 11);
    model = LlamaGenModel::load(io::ModelBundle::open(dir.path().string()), at::Device(at::kCPU));
  }
};

}  // namespace

TEST(Rope2d, ClassTokenRowsAreZeroAndPairsFollowRowThenColumn) {
  at::Tensor table = rope_2d_table(4, 16, 10000.0, 1);
  ASSERT_EQ(table.sizes(), (at::IntArrayRef{17, 8, 2}));
  EXPECT_EQ(table[0].abs().sum().item<float>(), 0.0f);
  // Token p = 1 is row 0, column 1: the row pairs (0..3) have angle 0, the
  // column pairs (4..7) have angle 1 * freq.
  EXPECT_FLOAT_EQ(table[2][0][0].item<float>(), 1.0f);  // cos(0)
  EXPECT_FLOAT_EQ(table[2][4][0].item<float>(), std::cos(1.0f));
  EXPECT_FLOAT_EQ(table[2][4][1].item<float>(), std::sin(1.0f));
  // Token p = 4 is row 1, column 0.
  EXPECT_FLOAT_EQ(table[5][0][1].item<float>(), std::sin(1.0f));
  EXPECT_FLOAT_EQ(table[5][4][1].item<float>(), 0.0f);
}

TEST(LlamaGenGpt, IncrementalDecodingMatchesFullForwardWithGroupedQueryHeads) {
  TinyModel tiny;
  const auto& gpt = *tiny.model.gpt;
  at::Tensor labels = at::tensor({1, 4}, at::kLong);
  at::Tensor tokens = at::randint(0, 64, {2, 15}, at::kLong);
  at::Tensor full = gpt.forward_teacher(labels, tokens);  // [2, 16, 64]
  KvStore cache = gpt.make_cache(2, 16);
  at::Tensor step = gpt.prefill(labels, cache);
  EXPECT_LT((step - full.select(1, 0)).abs().max().item<float>(), 1e-4);
  for (int64_t i = 0; i < 15; ++i) {
    step = gpt.decode_step(tokens.select(1, i), 1 + i, cache);
    EXPECT_LT((step - full.select(1, i + 1)).abs().max().item<float>(), 1e-4) << "step " << i;
  }
  EXPECT_EQ(cache.length(0, 1, 1), 16);
  EXPECT_TRUE(cache.uniform(0));
  // KV accounting: 2 rows x 2 kv heads x 16 entries x head_dim 16 x K,V x float32, per layer.
  EXPECT_EQ(cache.memory().bytes_logical, 2 * (2 * 2 * 16 * 16 * 2 * 4));
  EXPECT_EQ(cache.memory().bytes_allocated, cache.memory().bytes_logical);
}

TEST(LlamaGenGpt, ClassTokenKeyIsZeroSoItIsAPermanentSink) {
  TinyModel tiny;
  KvStore cache = tiny.model.gpt->make_cache(1, 16);
  tiny.model.gpt->prefill(at::tensor({2}, at::kLong), cache);
  for (int64_t l = 0; l < cache.n_layer(); ++l) {
    EXPECT_EQ(cache.keys(l, 1).abs().sum().item<float>(), 0.0f);
    EXPECT_GT(cache.values(l, 1).abs().sum().item<float>(), 0.0f);
    EXPECT_EQ(cache.positions(l, 0, 0), std::vector<int64_t>{0});
  }
}

TEST(RasterGeneration, SameSeedSameTokensDifferentSeedDifferentTokens) {
  TinyModel tiny;
  RasterParams p;
  p.cfg_scale = 3.0;
  p.seed = 123;
  at::Tensor labels = at::tensor({0, 3}, at::kLong);
  auto a = generate_raster(*tiny.model.gpt, labels, p);
  auto b = generate_raster(*tiny.model.gpt, labels, p);
  EXPECT_TRUE(at::equal(a.tokens, b.tokens));
  p.seed = 124;
  auto c = generate_raster(*tiny.model.gpt, labels, p);
  EXPECT_FALSE(at::equal(a.tokens, c.tokens));
}

TEST(RasterGeneration, CfgIntervalSwitchesToConditionalLogits) {
  TinyModel tiny;
  at::Tensor labels = at::tensor({2}, at::kLong);
  RasterParams always;
  always.cfg_scale = 5.0;
  always.sampling.sample = false;
  always.cfg_interval = 100;  // never reached: same as -1
  auto a = generate_raster(*tiny.model.gpt, labels, always);
  RasterParams never = always;
  never.cfg_interval = -1;
  auto b = generate_raster(*tiny.model.gpt, labels, never);
  EXPECT_TRUE(at::equal(a.tokens, b.tokens));
  // CFG only for the prefill and decode step 0, then conditional logits: the
  // tokens from step 2 on must equal a cond-only run fed the same first tokens.
  RasterParams early = always;
  early.cfg_interval = 0;
  RasterHooks hooks;
  hooks.record_logits_steps = 16;
  auto c = generate_raster(*tiny.model.gpt, labels, early, hooks);
  at::Tensor full = tiny.model.gpt->forward_teacher(labels, c.tokens.narrow(1, 0, 15));
  for (int64_t s = 2; s < 16; ++s)
    EXPECT_LT((c.step_logits[s] - full.select(1, s)).abs().max().item<float>(), 1e-4) << s;
}

TEST(RasterGeneration, CancellationStopsBeforeTheNextToken) {
  TinyModel tiny;
  int calls = 0;
  RasterHooks hooks;
  hooks.cancelled = [&] { return calls >= 5; };
  hooks.on_token = [&](int64_t, const at::Tensor&, const KvStore&) { ++calls; };
  EXPECT_THROW(generate_raster(*tiny.model.gpt, at::tensor({1}, at::kLong), RasterParams{}, hooks), CancelledError);
  EXPECT_EQ(calls, 5);
}

TEST(RasterGeneration, RejectsBadRequests) {
  TinyModel tiny;
  RasterParams p;
  try {
    generate_raster(*tiny.model.gpt, at::tensor({7}, at::kLong), p);
    FAIL();
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("class label out of range [0, 5)"), std::string::npos);
  }
  p.sampling.top_p = 0.0;
  EXPECT_THROW(generate_raster(*tiny.model.gpt, at::tensor({1}, at::kLong), p), InvalidArgumentError);
}

TEST(VqDecoder, DecodesToImageSizeAndRejectsOutOfRangeCodes) {
  TinyModel tiny;
  at::Tensor img = tiny.model.vq->decode_codes(at::randint(0, 64, {2, 16}, at::kLong), 4, 4);
  EXPECT_EQ(img.sizes(), (at::IntArrayRef{2, 3, 8, 8}));
  EXPECT_THROW(tiny.model.vq->decode_codes(at::full({1, 16}, 64, at::kLong), 4, 4), InvalidArgumentError);
  at::Tensor u8 = images_to_uint8_nhwc(at::tensor({-2.0f, 0.0f, 0.999f, 5.0f}).view({1, 1, 2, 2}).expand({1, 3, 2, 2}));
  EXPECT_EQ(u8[0][0][0][0].item<uint8_t>(), 0);
  EXPECT_EQ(u8[0][0][1][0].item<uint8_t>(), 128);
  EXPECT_EQ(u8[0][1][0][0].item<uint8_t>(), 255);  // 0.999*127.5+128 = 255.37 -> clamp
}
