// VAR port behaviour beyond the conformance cases, on tiny random models: scale-
// by-scale decoding through the KvStore equals teacher forcing (also with shared
// AdaLN and without L2-normalised attention), generation keeps the flattened
// sequence positions in the store, the policy unit hooks run in their documented
// order and may evict, cancellation, bundles and the session's per-scale events.
#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <gtest/gtest.h>

#include <fstream>

#include "engine/core/errors.h"
#include "engine/io/model_bundle.h"
#include "engine/models/generation_session.h"
#include "engine/models/model_catalog.h"
#include "engine/models/var/var_generation.h"
#include "engine/models/var/var_model.h"
#include "engine/models/var/var_random_init.h"
#include "tests/engine/test_helpers.h"
#include "tests/engine/tiny_var.h"

using namespace kvs;
using namespace kvs::var;

namespace {

VarConfig tiny_var(bool shared_aln = false, bool l2_norm = true) {
  return test::tiny_var_config(2, {1, 2, 3, 4}, shared_aln, l2_norm);
}

VqvaeConfig tiny_vae() { return test::tiny_var_vqvae(tiny_var()); }

struct TinyVar : test::TinyVar {
  explicit TinyVar(const VarConfig& config = tiny_var(), uint64_t seed = 5) : test::TinyVar(config, seed) {}
};

std::vector<at::Tensor> random_ids(const VarConfig& c, int64_t batch) {
  std::vector<at::Tensor> ids;
  for (int64_t si = 0; si < c.scales(); ++si)
    ids.push_back(at::randint(0, c.vocab_size, {batch, c.scale_tokens(si)}, at::kLong));
  return ids;
}

float max_diff(const at::Tensor& a, const at::Tensor& b) { return (a - b).abs().max().item<float>(); }

// "k2.1;" for (kind 'k', unit 2, layer 1); layer < 0 leaves it out.
std::string tag(char kind, int64_t unit, int64_t layer = -1) {
  std::string s(1, kind);
  s += std::to_string(unit);
  if (layer >= 0) {
    s += '.';
    s += std::to_string(layer);
  }
  s += ';';
  return s;
}

// Records the unit hooks in order.
class RecordingPolicy : public CachePolicy {
 public:
  std::string name() const override { return "recording"; }
  int64_t budget_tokens() const override { return 1 << 20; }
  void after_token(KvStore&, int64_t) override { log += "token;"; }
  bool supports_units() const override { return true; }
  bool wants_unit_keys() const override { return true; }
  bool wants_key_mass() const override { return true; }
  void observe_unit_keys(int64_t layer, int64_t unit, const at::Tensor& keys) override {
    log += tag('k', unit, layer);
    key_shapes.push_back(keys.sizes().vec());
  }
  void observe_unit_attention(int64_t layer, int64_t unit, const at::Tensor& key_mass,
                              const at::Tensor& positions) override {
    log += tag('a', unit, layer);
    EXPECT_EQ(key_mass.sizes(), positions.sizes());
    // Every query's attention sums to 1: the mass over all slots is queries x heads.
    mass_totals.push_back(key_mass[0].sum().item<double>());
  }
  void after_unit_layer(KvStore&, int64_t layer, int64_t unit) override { log += tag('l', unit, layer); }
  void after_unit(KvStore&, int64_t unit) override { log += tag('u', unit); }
  std::string log;
  std::vector<std::vector<int64_t>> key_shapes;
  std::vector<double> mass_totals;
};

// Drops the first scale (position 0) from every layer once scale 1 is done.
class DropFirstScalePolicy : public CachePolicy {
 public:
  std::string name() const override { return "drop-first"; }
  int64_t budget_tokens() const override { return 1 << 20; }
  void after_token(KvStore&, int64_t) override {}
  bool supports_units() const override { return true; }
  void after_unit(KvStore& store, int64_t unit) override {
    if (unit != 1) return;
    for (int64_t l = 0; l < store.n_layer(); ++l)
      store.retain(l, store.positions_tensor(l).narrow(2, 0, store.max_length(l)) != 0);
  }
};

}  // namespace

TEST(VarTransformer, ScaleStepsThroughTheCacheEqualTeacherForcing) {
  for (const auto& [shared, l2] : {std::pair{false, true}, std::pair{true, true}, std::pair{false, false}}) {
    TinyVar tiny(tiny_var(shared, l2));
    const VarTransformer& t = *tiny.model.transformer;
    const MultiScaleVqvae& vae = *tiny.model.vqvae;
    const VarConfig& c = t.config();
    at::Tensor labels = at::tensor({1, 4}, at::kLong);
    std::vector<at::Tensor> ids = random_ids(c, 2);
    at::Tensor teacher = t.forward_teacher(labels, vae.ids_to_var_input(ids));  // [2, L, V]
    ASSERT_EQ(teacher.sizes(), (at::IntArrayRef{2, c.total_tokens(), c.vocab_size}));

    const VarCondition cond = t.condition(labels);
    KvStore cache = t.make_cache(2, c.total_tokens());
    at::Tensor x = t.first_scale_input(cond);
    at::Tensor f_hat = vae.empty_fhat(2);
    for (int64_t si = 0; si < c.scales(); ++si) {
      at::Tensor logits = t.forward_scale(x, cond, si, cache);
      EXPECT_LT(max_diff(logits, teacher.narrow(1, c.scale_begin(si), c.scale_tokens(si))), 1e-4)
          << "scale " << si << " shared_aln " << shared << " l2 " << l2;
      vae.accumulate(f_hat, vae.embed_scale(ids[si], si), si);
      if (si + 1 < c.scales()) x = t.scale_input(vae.next_scale_input(f_hat, si), si + 1);
    }
    // The store holds the flattened multi-scale sequence 0..L-1 in every segment.
    std::vector<int64_t> expected(static_cast<size_t>(c.total_tokens()));
    for (size_t i = 0; i < expected.size(); ++i) expected[i] = static_cast<int64_t>(i);
    EXPECT_EQ(cache.positions(1, 1, 1), expected);
    EXPECT_EQ(cache.memory().bytes_logical, cache.memory().bytes_full_equivalent);
    EXPECT_TRUE(at::allclose(f_hat, vae.ids_to_fhat(ids)));
  }
}

TEST(ScaleGeneration, CfgLogitsEqualTeacherForcingOnTheGeneratedIds) {
  TinyVar tiny;
  const VarTransformer& t = *tiny.model.transformer;
  const VarConfig& c = t.config();
  at::Tensor labels = at::tensor({2, 3}, at::kLong);
  ScaleParams p;
  p.cfg = 2.5;
  p.sampling.top_k = 8;
  p.sampling.top_p = 0.9;
  p.seed = 11;
  ScaleHooks hooks;
  hooks.record_logits_scales = c.scales();
  int64_t scales_seen = 0;
  hooks.on_scale = [&](const ScaleStep& step) {
    EXPECT_EQ(step.scale, scales_seen++);
    EXPECT_EQ(step.tokens_done, c.scale_begin(step.scale) + c.scale_tokens(step.scale));
    EXPECT_EQ(step.cache->rows(), 4);  // [cond; uncond]
    EXPECT_EQ(step.cache->appended(0), step.tokens_done);
    EXPECT_EQ(step.cache->positions(0, 3, 1).back(), step.tokens_done - 1);
    EXPECT_EQ(step.ids->sizes(), (at::IntArrayRef{2, c.scale_tokens(step.scale)}));
  };
  ScaleResult r = generate_scales(t, *tiny.model.vqvae, labels, p, hooks);
  EXPECT_EQ(scales_seen, c.scales());
  ASSERT_EQ(r.tokens().sizes(), (at::IntArrayRef{2, c.total_tokens()}));
  // Teacher forcing on the generated ids, conditional and unconditional.
  at::Tensor x = tiny.model.vqvae->ids_to_var_input(r.ids);
  at::Tensor cond = t.forward_teacher(labels, x);
  at::Tensor uncond = t.forward_teacher(at::full({2}, c.null_class(), at::kLong), x);
  for (int64_t si = 0; si < c.scales(); ++si) {
    const double tt = p.cfg * si / (c.scales() - 1);
    at::Tensor expected = (cond * (1 + tt) - uncond * tt).narrow(1, c.scale_begin(si), c.scale_tokens(si));
    EXPECT_LT(max_diff(r.scale_logits[static_cast<size_t>(si)], expected), 1e-4) << "scale " << si;
  }
  EXPECT_TRUE(at::allclose(r.f_hat, tiny.model.vqvae->ids_to_fhat(r.ids)));
  // Same seed, same ids; another seed differs.
  EXPECT_TRUE(at::equal(generate_scales(t, *tiny.model.vqvae, labels, p).tokens(), r.tokens()));
  p.seed = 12;
  EXPECT_FALSE(at::equal(generate_scales(t, *tiny.model.vqvae, labels, p).tokens(), r.tokens()));
  // cfg = 0: conditional rows only, and the same ids as t = 0 everywhere would give.
  p.cfg = 0;
  p.sampling.sample = false;
  ScaleResult greedy = generate_scales(t, *tiny.model.vqvae, labels, p);
  at::Tensor greedy_logits = t.forward_teacher(labels, tiny.model.vqvae->ids_to_var_input(greedy.ids));
  EXPECT_TRUE(at::equal(greedy.tokens(), greedy_logits.argmax(-1)));
}

TEST(ScaleGeneration, PolicyUnitHooksRunInOrderAndMayEvict) {
  TinyVar tiny;
  const VarConfig& c = tiny.model.transformer->config();
  RecordingPolicy recording;
  ScaleHooks hooks;
  hooks.policy = [&]() -> CachePolicy* { return &recording; };
  ScaleParams p;
  generate_scales(*tiny.model.transformer, *tiny.model.vqvae, at::tensor({1}, at::kLong), p, hooks);
  std::string expected;
  for (int64_t u = 0; u < c.scales(); ++u) {
    for (int64_t l = 0; l < c.depth; ++l) expected += tag('k', u, l) + tag('a', u, l) + tag('l', u, l);
    expected += tag('u', u);
  }
  EXPECT_EQ(recording.log, expected);
  EXPECT_EQ(recording.key_shapes.back(), (std::vector<int64_t>{2, c.num_heads, 16, c.head_dim()}));
  for (size_t i = 0; i < recording.mass_totals.size(); ++i) {
    const int64_t unit = static_cast<int64_t>(i) / c.depth;
    EXPECT_NEAR(recording.mass_totals[i], static_cast<double>(c.scale_tokens(unit) * c.num_heads), 1e-3);
  }

  // The policy context describes the scales.
  const PolicyContext context = scale_policy_context(c, 1, true, 0);
  EXPECT_EQ(context.unit_tokens, (std::vector<int64_t>{1, 4, 9, 16}));
  EXPECT_EQ(context.image_tokens(), 30);
  EXPECT_EQ(context.unit_begin(3), 14);
  EXPECT_EQ(context.condition_tokens, 0);

  // Evicting at a scale boundary: later scales attend without the dropped entry.
  DropFirstScalePolicy drop;
  hooks.policy = [&]() -> CachePolicy* { return &drop; };
  int64_t final_length = 0;
  std::vector<int64_t> final_positions;
  hooks.on_scale = [&](const ScaleStep& step) {
    final_length = step.cache->length(1, 0, 0);
    final_positions = step.cache->positions(1, 1, 1);
  };
  ScaleResult r = generate_scales(*tiny.model.transformer, *tiny.model.vqvae, at::tensor({1}, at::kLong), p, hooks);
  EXPECT_EQ(final_length, c.total_tokens() - 1);
  EXPECT_EQ(final_positions.front(), 1);
  EXPECT_LT(r.memory.bytes_logical, r.memory.bytes_full_equivalent);
}

TEST(ScaleGeneration, CancelledBetweenLayers) {
  TinyVar tiny;
  ScaleHooks hooks;
  int calls = 0;
  hooks.cancelled = [&] { return ++calls > 5; };
  EXPECT_THROW(generate_scales(*tiny.model.transformer, *tiny.model.vqvae, at::tensor({0}, at::kLong), ScaleParams{},
                               hooks),
               CancelledError);
  EXPECT_EQ(calls, 6);  // checks: scale 0 + its 2 layers, scale 1 + its first layer, then its second layer stops
  EXPECT_THROW(generate_scales(*tiny.model.transformer, *tiny.model.vqvae, at::tensor({5}, at::kLong), ScaleParams{}),
               InvalidArgumentError);
}

TEST(VarModel, BundleErrorsNameTheProblem) {
  test::TempDir dir;
  write_random_var_bundle(dir.path().string(), "tiny-var", tiny_var(), tiny_vae(), 1);
  auto manifest = io::ModelBundle::open(dir.path().string()).manifest;
  manifest["architecture"]["var"]["depth"] = 3;
  io::write_bundle_manifest(dir.path().string(), manifest);
  try {
    VarModel::load(io::ModelBundle::open(dir.path().string()), at::Device(at::kCPU));
    FAIL() << "no error";
  } catch (const ModelMismatchError& e) {
    EXPECT_NE(std::string(e.what()).find("missing tensors: var.blocks.2.attn."), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("var.blocks.2.attn.mat_qkv.weight"), std::string::npos) << e.what();
  }
  manifest["architecture"]["var"]["depth"] = 2;
  manifest["tokenizer"]["vocab_size"] = 64;
  io::write_bundle_manifest(dir.path().string(), manifest);
  try {
    VarModel::load(io::ModelBundle::open(dir.path().string()), at::Device(at::kCPU));
    FAIL() << "no error";
  } catch (const ModelMismatchError& e) {
    EXPECT_NE(std::string(e.what()).find("does not match the VQVAE vocab_size 64"), std::string::npos) << e.what();
  }
  manifest["architecture"].erase("var");
  io::write_bundle_manifest(dir.path().string(), manifest);
  EXPECT_THROW(VarModel::load(io::ModelBundle::open(dir.path().string()), at::Device(at::kCPU)), FormatError);
}

TEST(VarSession, EmitsOneUnitPerScaleWithPreviews) {
  test::TempDir dir;
  write_random_var_bundle(dir.path().string(), "tiny-var", tiny_var(), tiny_vae(), 2);
  GenerationRequest r;
  r.model_path = dir.path().string();
  r.class_ids = {1, 2};
  r.seed = 3;
  r.cfg_scale = 1.5;
  r.device = "cpu";
  r.threads = 1;
  r.preview_every_units = 1;
  r.emit_retained_masks = true;
  r.emit_attention_map = true;
  struct Sink : EventSink {
    std::vector<GenerationEvent> events;
    void on_event(const GenerationEvent& e) override { events.push_back(e); }
  } sink;
  GenerationSession session;
  GenerationResult a = session.run(r, &sink);
  const auto* started = std::get_if<StartedEvent>(&sink.events.front());
  ASSERT_NE(started, nullptr);
  EXPECT_EQ(started->unit_name, "scale");
  EXPECT_EQ(started->family, "var");
  EXPECT_EQ(started->units_total, 4);
  EXPECT_EQ(started->tokens_total, 30);
  int units = 0;
  for (const auto& e : sink.events) {
    const auto* u = std::get_if<UnitDoneEvent>(&e);
    if (!u) continue;
    EXPECT_EQ(u->unit_index, units++);
    ASSERT_TRUE(u->preview.has_value());
    EXPECT_EQ((*u->preview)[0].width, 8);
    ASSERT_TRUE(u->retained.has_value());
    EXPECT_TRUE(u->retained->retained(1, 1, 0));
    const int64_t done = u->unit_index == 3 ? 30
                                            : (u->unit_index + 1) * (u->unit_index + 2) * (2 * u->unit_index + 3) / 6;
    EXPECT_TRUE(u->retained->retained(0, 0, done - 1));
    if (done < 30) {
      EXPECT_FALSE(u->retained->retained(0, 0, done));
    }
    ASSERT_TRUE(u->attention.has_value());
    float total = 0;
    for (float w : u->attention->weights) total += w;
    EXPECT_NEAR(total, 1.0, 1e-4);  // mean over queries and heads of distributions
  }
  EXPECT_EQ(units, 4);
  EXPECT_TRUE(std::holds_alternative<FinishedEvent>(sink.events.back()));
  ASSERT_EQ(a.images.size(), 2u);
  EXPECT_EQ(a.images[0].pixels.size(), 8u * 8 * 3);
  EXPECT_EQ(a.tokens[0].size(), 30u);
  EXPECT_EQ(a.grid_height, 4);
  GenerationResult b = session.run(r);
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.images[1].pixels, b.images[1].pixels);
  // Raster-only policies are refused with a clear message.
  r.policy = parse_policy_spec("linear");
  try {
    session.run(r);
    FAIL() << "no error";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("works on raster (next-token) models only"), std::string::npos) << e.what();
  }
}

TEST(VarCatalog, SummarizesVarBundlesWithoutLoadingWeights) {
  test::TempDir dir;
  write_random_var_bundle(dir.path().string(), "tiny-var", tiny_var(true), tiny_vae(), 4);
  const ModelSummary s = summarize_model_bundle(dir.path().string());
  EXPECT_TRUE(s.usable()) << s.problem;
  EXPECT_EQ(s.family, "var");
  EXPECT_EQ(s.grid, 4);
  EXPECT_EQ(s.condition_tokens, 0);
  EXPECT_EQ(s.image_size, 8);
  EXPECT_EQ(s.gpt_parameters, tiny_var(true).parameter_count());
  EXPECT_EQ(s.kv_bytes_per_token, 2 * 2 * 64 * 4);
  EXPECT_NE(s.architecture.find("VAR depth 2, width 64, 2 heads (shared AdaLN); 4 scales up to 4x4 (30 tokens)"),
            std::string::npos)
      << s.architecture;
}
