// kvstudio-train's VAR path: the trainable multi-scale VQVAE quantises exactly as
// the engine's inference path does, its training inputs are what generation feeds,
// a few steps lower the losses, resumed runs continue exactly, and an exported
// bundle reproduces the training networks.
#include <gtest/gtest.h>

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <c10/core/GradMode.h>

#include <cmath>
#include <set>

#include "engine/core/errors.h"
#include "engine/io/model_bundle.h"
#include "engine/models/var/multiscale_vqvae.h"
#include "engine/models/var/var_generation.h"
#include "engine/models/var/var_model.h"
#include "engine/models/var/var_transformer.h"
#include "engine/models/var/var_weights.h"
#include "engine/training/adamw.h"
#include "engine/training/checkpoint.h"
#include "engine/training/var/var_bundle_export.h"
#include "engine/training/var/var_trainer.h"
#include "engine/training/var/var_vae_model.h"
#include "engine/training/var/var_vae_trainer.h"
#include "engine/training/world_dataset.h"
#include "tests/engine/test_helpers.h"
#include "tests/engine/training_test_options.h"

namespace kvs::training {
namespace {

// 16 px images (the world's smallest), 2x downsampling, scales 1, 2, 4, 8 (4 phi
// convolutions, partially shared).
VarVaeModelConfig tiny_vae() {
  VarVaeModelConfig c;
  c.arch.vocab_size = 16;
  c.arch.z_channels = 4;
  c.arch.ch = 32;
  c.arch.ch_mult = {1, 2};
  c.arch.num_res_blocks = 1;
  c.arch.v_patch_nums = {1, 2, 4, 8};
  return c;
}

var::VarConfig tiny_var() {
  var::VarConfig c;
  c.depth = 2;
  c.embed_dim = 32;
  c.num_heads = 2;
  c.num_classes = world_class_count();
  c.vocab_size = 16;
  c.cvae = 4;
  c.patch_nums = {1, 2, 4, 8};
  return c;
}

std::map<std::string, at::Tensor> cloned(const ParameterSet& params) {
  std::map<std::string, at::Tensor> out;
  for (const auto& p : params.items()) out[p.name] = p.tensor.detach().clone();
  return out;
}

TEST(TrainingVar, EncoderHasTheOfficialNames) {
  VarVaeModelConfig cfg = tiny_vae();
  cfg.arch.num_res_blocks = 2;
  std::set<std::string> names;
  for (const auto& e : var_vae_expected_tensors(cfg)) names.insert(e.name);
  // basic_vae.py Encoder: down[i].block[j], attention only at the last level,
  // downsampling on the others; quant_conv between encoder and quantiser.
  for (const char* n :
       {"encoder.conv_in.weight", "encoder.down.0.block.1.conv2.bias", "encoder.down.0.downsample.conv.weight",
        "encoder.down.1.block.0.nin_shortcut.weight", "encoder.down.1.attn.1.qkv.weight",
        "encoder.mid.attn_1.proj_out.weight", "encoder.norm_out.weight", "encoder.conv_out.bias", "quant_conv.weight",
        "quantize.embedding.weight", "quantize.quant_resi.qresi_ls.3.weight", "post_quant_conv.weight",
        "decoder.up.1.attn.2.qkv.weight", kVocabHitBuffer})
    EXPECT_TRUE(names.count(n)) << n;
  EXPECT_FALSE(names.count("encoder.down.1.downsample.conv.weight"));
  EXPECT_FALSE(names.count("encoder.down.0.attn.0.qkv.weight"));
  for (const auto& e : var::vqvae_encoder_expected_tensors(cfg.arch)) EXPECT_TRUE(var::is_unused_vqvae_key(e.name));
}

TEST(TrainingVar, QuantizerTrainingPathEqualsEngineInference) {
  const VarVaeModelConfig cfg = tiny_vae();
  ParameterSet params = init_var_vae_parameters(cfg, 5, at::kCPU);
  const VarVaeModel model(cfg, params.as_map(), at::kCPU);
  // A separately loaded engine VQVAE (copied weights, as from a bundle).
  const var::MultiScaleVqvae engine(cfg.arch, cloned(params), at::kCPU);
  at::Tensor f = at::randn({3, 4, 8, 8}) * 1.5;
  const VarQuantized q = model.quantize(f, true);
  const std::vector<at::Tensor> ids = engine.f_to_ids(f);
  ASSERT_EQ(q.ids.size(), 4u);
  for (size_t si = 0; si < ids.size(); ++si) EXPECT_TRUE(q.ids[si].equal(ids[si])) << "scale " << si;
  // The residual quantiser uses every scale (a coarse scale alone would not).
  EXPECT_EQ(ids[3].sizes(), at::IntArrayRef({3, 64}));
  EXPECT_TRUE(engine.ids_to_fhat(ids).equal(q.f_hat_codes));
  // The straight-through value is f_hat up to rounding, the image is the engine's.
  EXPECT_TRUE(at::allclose(q.f_hat.detach(), q.f_hat_codes, 1e-6, 1e-6));
  EXPECT_TRUE(at::allclose(model.decode(q.f_hat_codes), engine.decode_raw(q.f_hat_codes), 1e-6, 1e-6));
  // encode_ids is the forward's quantisation of the encoder output.
  at::Tensor x = at::rand({2, 3, 16, 16}) * 2 - 1;
  const VarVaeOutput out = model.forward(x, false);
  const std::vector<at::Tensor> enc = model.encode_ids(x);
  for (size_t si = 0; si < enc.size(); ++si) EXPECT_TRUE(enc[si].equal(out.quantized.ids[si]));
}

TEST(TrainingVar, VaeStepsReduceTheLossAndReachEveryPart) {
  const VarVaeModelConfig cfg = tiny_vae();
  ParameterSet params = init_var_vae_parameters(cfg, 3, at::kCPU);
  const VarVaeModel model(cfg, params.as_map(), at::kCPU);
  const WorldImageSet images = WorldImageSet::render(world_items(WorldSplit::Train, 1, world_class_count()), 16);
  at::Tensor x = images.batch(at::arange(4, at::TensorOptions().dtype(at::kLong)), at::kCPU);
  AdamW opt(params, {});
  auto loss_of = [&] {
    const VarVaeOutput out = model.forward(x, true);
    return at::mse_loss(out.reconstruction, x) + out.quantized.vq_loss;
  };
  double first = 0, last = 0;
  for (int step = 0; step < 12; ++step) {
    params.zero_grad();
    at::Tensor loss = loss_of();
    loss.backward();
    if (step == 0) {
      first = loss.item<double>();
      // The straight-through estimator reaches the encoder, the vq loss the codebook and phi.
      for (const char* name :
           {"encoder.conv_in.weight", "quant_conv.weight", "quantize.embedding.weight",
            "quantize.quant_resi.qresi_ls.0.weight", "post_quant_conv.weight", "decoder.conv_out.weight"}) {
        const at::Tensor& g = params.get(name).grad();
        ASSERT_TRUE(g.defined()) << name;
        EXPECT_GT(g.abs().sum().item<double>(), 0.0) << name;
      }
      EXPECT_FALSE(params.get(kVocabHitBuffer).grad().defined());
    }
    opt.step(3e-3);
  }
  {
    c10::NoGradGuard no_grad;
    last = loss_of().item<double>();
  }
  EXPECT_LT(last, first * 0.8) << first << " -> " << last;
}

TEST(TrainingVar, TeacherForcingOnGeneratedIdsReproducesGeneration) {
  const var::VarConfig cfg = tiny_var();
  const VarVaeModelConfig vae_cfg = tiny_vae();
  ParameterSet vae_params = init_var_vae_parameters(vae_cfg, 2, at::kCPU);
  ParameterSet params = init_var_parameters(cfg, 4, at::kCPU);
  {
    c10::NoGradGuard no_grad;  // upstream's init gates every block nearly shut; open them for a real test
    for (const auto& p : params.items())
      if (p.name.find("ada_lin") != std::string::npos || p.name == "head.weight") p.tensor.normal_(0.0, 0.3);
  }
  const var::VarTransformer model(cfg, params.as_map(), at::kCPU);
  const VarVaeModel vae(vae_cfg, vae_params.as_map(), at::kCPU);
  c10::NoGradGuard no_grad;
  at::Tensor labels = at::tensor({int64_t{1}, int64_t{7}});
  var::ScaleParams sp;
  sp.cfg = 0;  // conditional rows only: the recorded logits are the model's own
  sp.seed = 3;
  var::ScaleHooks hooks;
  hooks.record_logits_scales = cfg.scales();
  const var::ScaleResult r = var::generate_scales(model, vae.vqvae(), labels, sp, hooks);
  // What the trainer feeds: the generated ids through ids_to_var_input, all scales at once.
  at::Tensor tokens = r.tokens();
  at::Tensor x = vae.vqvae().ids_to_var_input(split_scales(cfg, tokens));
  at::Tensor logits = model.forward_teacher(labels, x);
  for (int64_t si = 0; si < cfg.scales(); ++si) {
    at::Tensor tf = logits.narrow(1, cfg.scale_begin(si), cfg.scale_tokens(si));
    EXPECT_TRUE(at::allclose(tf, r.scale_logits[static_cast<size_t>(si)], 1e-4, 1e-5))
        << "scale " << si << " max diff " << (tf - r.scale_logits[static_cast<size_t>(si)]).abs().max().item<double>();
  }
  // The loss is cross-entropy over every token of every scale.
  const double expected =
      at::cross_entropy_loss(logits.reshape({-1, cfg.vocab_size}), tokens.reshape({-1})).item<double>();
  EXPECT_NEAR(var_loss(model, vae.vqvae(), labels, tokens).item<double>(), expected, 1e-6);
}

TEST(TrainingVar, TransformerStepsReduceTheLoss) {
  const var::VarConfig cfg = tiny_var();
  const VarVaeModelConfig vae_cfg = tiny_vae();
  ParameterSet vae_params = init_var_vae_parameters(vae_cfg, 2, at::kCPU);
  const VarVaeModel vae(vae_cfg, vae_params.as_map(), at::kCPU);
  ParameterSet params = init_var_parameters(cfg, 6, at::kCPU);
  EXPECT_FALSE(params.items()[0].weight_decay);  // pos_start: upstream's no-decay list
  at::Generator gen = step_generator(1, 0);
  at::Tensor tokens = at::randint(cfg.vocab_size, {4, cfg.total_tokens()}, gen, at::TensorOptions().dtype(at::kLong));
  at::Tensor labels = at::tensor({int64_t{0}, int64_t{3}, int64_t{5}, cfg.null_class()});
  AdamW opt(params, {});
  double first = 0;
  for (int step = 0; step < 15; ++step) {
    params.zero_grad();
    const var::VarTransformer model(cfg, params.as_map(), at::kCPU);  // rebuilt per step, as the trainer does
    at::Tensor loss = var_loss(model, vae.vqvae(), labels, tokens);
    loss.backward();
    if (step == 0) {
      first = loss.item<double>();
      EXPECT_NEAR(first, std::log(16.0), 0.05);  // head x 0.02: near-uniform start
      for (const char* name : {"word_embed.weight", "class_emb.weight", "pos_1LC", "blocks.0.attn.mat_qkv.weight",
                               "blocks.1.ada_lin.1.weight", "head.weight"})
        EXPECT_GT(params.get(name).grad().abs().sum().item<double>(), 0.0) << name;
    }
    opt.step(1e-2);
  }
  c10::NoGradGuard no_grad;
  const var::VarTransformer model(cfg, params.as_map(), at::kCPU);
  const double last = var_loss(model, vae.vqvae(), labels, tokens).item<double>();
  EXPECT_LT(last, first - 0.3) << first << " -> " << last;
}

std::map<std::string, at::Tensor> train_tiny_vae(const std::string& work, int64_t stop_at, bool resume) {
  int64_t steps_run = 0;
  VarVaeTrainSetup setup;
  setup.model = tiny_vae();
  setup.image_size = 16;
  setup.train_per_class = 1;
  setup.eval_per_class = 1;
  setup.restart_every = 2;  // restarts at steps 2 and 4: their state must survive the resume
  setup.restart_until_fraction = 1.0;
  train_var_vae(test::tiny_train_options(work, stop_at, resume, &steps_run), setup);
  return load_checkpoint_weights(work + "/var-vae");
}

std::map<std::string, at::Tensor> train_tiny_var(const std::string& work, int64_t stop_at, bool resume) {
  int64_t steps_run = 0;
  VarTrainSetup setup;
  setup.model = tiny_var();
  setup.vae_run_dir = work + "/var-vae";
  setup.train_per_class = 1;
  setup.eval_per_class = 1;
  fit_var_to_tokenizer(setup);
  train_var(test::tiny_train_options(work, stop_at, resume, &steps_run), setup);
  return load_checkpoint_weights(work + "/var");
}

void expect_same_weights(const std::map<std::string, at::Tensor>& a, const std::map<std::string, at::Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, t] : a) EXPECT_TRUE(t.equal(b.at(name))) << name;
}

TEST(TrainingVar, ResumedRunsEndInTheSameState) {
  test::TempDir straight, interrupted;
  const auto vae_a = train_tiny_vae(straight.path().string(), 0, false);
  train_tiny_vae(interrupted.path().string(), 3, false);
  const auto vae_b = train_tiny_vae(interrupted.path().string(), 0, true);
  expect_same_weights(vae_a, vae_b);
  EXPECT_GT(vae_a.at(kVocabHitBuffer).sum().item<double>(), 0.0);

  const auto var_a = train_tiny_var(straight.path().string(), 0, false);
  train_tiny_var(interrupted.path().string(), 4, false);
  const auto var_b = train_tiny_var(interrupted.path().string(), 0, true);
  expect_same_weights(var_a, var_b);
}

TEST(TrainingVar, ExportedBundleReproducesTheTrainingNetworks) {
  test::TempDir work;
  const VarVaeModelConfig vae_cfg = tiny_vae();
  ParameterSet vae_params = init_var_vae_parameters(vae_cfg, 8, at::kCPU);
  save_checkpoint(work.file("var-vae"), vae_params, nullptr, 7,
                  {{"kind", "var-vae"}, {"config", {{"model", to_json(vae_cfg)}, {"image_size", 16}}}});
  const var::VarConfig cfg = tiny_var();
  ParameterSet params = init_var_parameters(cfg, 9, at::kCPU);
  {
    c10::NoGradGuard no_grad;
    for (const auto& p : params.items())
      if (p.name.find("ada_lin") != std::string::npos || p.name == "head.weight") p.tensor.normal_(0.0, 0.3);
  }
  const auto vae_manifest = read_checkpoint_manifest(work.file("var-vae"));
  save_checkpoint(work.file("var"), params, nullptr, 9,
                  {{"kind", "var"},
                   {"config", {{"model", var::to_json(cfg)}, {"tokenizer", vae_manifest->at("weights")}}}});

  BundleExportOptions o;
  o.work_dir = work.path().string();
  o.out_dir = work.file("bundle");
  o.name = "var-demo";
  o.dtype = "f32";
  o.command = "test";
  export_var_bundle(o);
  const io::ModelBundle bundle = io::ModelBundle::open(o.out_dir);
  EXPECT_EQ(bundle.family(), "var");
  EXPECT_EQ(bundle.class_names(), world_class_names());
  EXPECT_EQ(bundle.manifest["provenance"]["tokenizer_training"]["steps"], 7);
  const var::VarModel loaded = var::VarModel::load(bundle, at::kCPU);

  c10::NoGradGuard no_grad;
  const VarVaeModel trained_vae(vae_cfg, vae_params.as_map(), at::kCPU);
  const std::vector<at::Tensor> ids = trained_vae.encode_ids(at::rand({2, 3, 16, 16}) * 2 - 1);
  at::Tensor f_hat = trained_vae.vqvae().ids_to_fhat(ids);
  EXPECT_TRUE(loaded.vqvae->ids_to_fhat(ids).equal(f_hat));
  EXPECT_TRUE(loaded.vqvae->fhat_to_img(f_hat).equal(trained_vae.vqvae().fhat_to_img(f_hat)));

  const var::VarTransformer trained(cfg, params.as_map(), at::kCPU);
  at::Tensor labels = at::tensor({int64_t{0}, cfg.null_class()});
  at::Tensor x = trained_vae.vqvae().ids_to_var_input(ids);
  EXPECT_TRUE(loaded.transformer->forward_teacher(labels, x).equal(trained.forward_teacher(labels, x)));

  // A transformer trained on another VQVAE checkpoint is refused.
  save_checkpoint(work.file("var"), params, nullptr, 10,
                  {{"kind", "var"}, {"config", {{"model", var::to_json(cfg)}, {"tokenizer", "other.safetensors"}}}});
  EXPECT_THROW(export_var_bundle(o), InvalidArgumentError);
}

}  // namespace
}  // namespace kvs::training
