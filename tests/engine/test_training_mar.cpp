// kvstudio-train's MAR path: the KL VAE's encoder feeds the engine's decoder, the
// diffusion training loss is upstream's formula, the training forward is the
// engine's inference forward, a few steps lower the losses, resumed runs continue
// exactly, and an exported bundle loads and generates through the normal paths.
#include <gtest/gtest.h>

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <c10/core/GradMode.h>

#include <cmath>
#include <fstream>
#include <set>

#include "engine/core/errors.h"
#include "engine/io/model_bundle.h"
#include "engine/models/generation_session.h"
#include "engine/models/mar/diffusion_head.h"
#include "engine/models/mar/gaussian_diffusion.h"
#include "engine/models/mar/kl_vae_decoder.h"
#include "engine/models/mar/mar_model.h"
#include "engine/models/mar/mar_random.h"
#include "engine/models/mar/mar_random_init.h"
#include "engine/models/mar/mar_transformer.h"
#include "engine/models/mar/mar_weights.h"
#include "engine/models/mar/masked_generation.h"
#include "engine/training/adamw.h"
#include "engine/training/checkpoint.h"
#include "engine/training/mar/diffusion_loss.h"
#include "engine/training/mar/kl_vae_model.h"
#include "engine/training/mar/kl_vae_trainer.h"
#include "engine/training/mar/mar_bundle_export.h"
#include "engine/training/mar/mar_latents.h"
#include "engine/training/mar/mar_trainer.h"
#include "engine/training/world_dataset.h"
#include "tests/engine/test_helpers.h"
#include "tests/engine/training_test_options.h"

namespace kvs::training {
namespace {

// 16 px images (the world's smallest), 2x downsampling: 4 x 8 x 8 latents.
KlVaeModelConfig tiny_vae() {
  KlVaeModelConfig c;
  c.arch.embed_dim = 4;
  c.arch.ch = 32;
  c.arch.ch_mult = {1, 1};
  c.arch.num_res_blocks = 1;
  c.arch.resolution = 16;
  return c;
}

// 8 x 8 tokens of 4 channels, width 32, 4 buffer positions, a 1 x 32 head.
mar::MarConfig tiny_mar() {
  mar::MarConfig c;
  c.img_size = 16;
  c.vae_stride = 2;
  c.vae_embed_dim = 4;
  c.encoder_embed_dim = c.decoder_embed_dim = 32;
  c.encoder_depth = c.decoder_depth = 1;
  c.encoder_num_heads = c.decoder_num_heads = 2;
  c.class_num = world_class_count();
  c.buffer_size = 4;
  c.diffloss_d = 1;
  c.diffloss_w = 32;
  c.num_sampling_steps = std::to_string(5);  // (a literal trips GCC 12's -Wrestrict false positive)
  return c;
}

// Gives the zero-initialised parts (adaLN, head output) values, so that every
// path carries signal in comparisons.
void jitter(ParameterSet& params, double std) {
  c10::NoGradGuard no_grad;
  for (const auto& p : params.items())
    if (p.tensor.abs().sum().item<double>() == 0.0 && p.tensor.dim() >= 2) p.tensor.normal_(0.0, std);
}

TEST(TrainingMar, KlVaeHasTheOfficialNamesAndTheEngineDecoder) {
  KlVaeModelConfig cfg = tiny_vae();
  cfg.arch.attn_resolutions = {8};
  std::set<std::string> names;
  for (const auto& e : kl_vae_training_expected_tensors(cfg.arch)) names.insert(e.name);
  // vae.py Encoder: down[i].block[j], attention where the resolution is listed,
  // downsampling below all but the last level, double_z conv_out, quant_conv 2E -> 2E.
  for (const char* n :
       {"encoder.conv_in.weight", "encoder.down.0.block.0.conv2.bias", "encoder.down.0.downsample.conv.weight",
        "encoder.down.1.attn.0.q.weight", "encoder.mid.attn_1.proj_out.weight", "encoder.norm_out.weight",
        "encoder.conv_out.bias", "quant_conv.weight", "post_quant_conv.weight", "decoder.conv_out.weight"})
    EXPECT_TRUE(names.count(n)) << n;
  EXPECT_FALSE(names.count("encoder.down.1.downsample.conv.weight"));
  EXPECT_FALSE(names.count("encoder.down.0.attn.0.q.weight"));
  for (const auto& e : kl_vae_encoder_expected_tensors(cfg.arch)) EXPECT_TRUE(mar::is_unused_vae_key(e.name));

  ParameterSet params = init_kl_vae_parameters(cfg, 3, at::kCPU);
  const KlVaeModel model(cfg, params.as_map(), at::kCPU);
  c10::NoGradGuard no_grad;
  const at::Tensor x = at::rand({2, 3, 16, 16}) * 2 - 1;
  const at::Tensor moments = model.encode_moments(x);
  EXPECT_EQ(moments.sizes(), (at::IntArrayRef{2, 8, 8, 8}));
  const KlPosterior q = model.encode(x);
  // The decoding half is the engine's decoder on the same tensors, with its latent scale.
  const mar::KlVaeDecoder engine(cfg.arch, params.as_map(), at::kCPU);
  EXPECT_TRUE(model.decode(q.mean).equal(engine.decode(q.mean)));
  EXPECT_TRUE(engine.decode_tokens(q.mean * cfg.arch.latent_scale).allclose(engine.decode(q.mean), 1e-5, 1e-5));
  // KL of N(m, s^2) to N(0, 1) per image.
  const at::Tensor kl = 0.5 * (q.mean.pow(2) + q.logvar.exp() - 1 - q.logvar).sum({1, 2, 3});
  EXPECT_TRUE(q.kl().allclose(kl));
  EXPECT_THROW(model.encode_moments(at::zeros({1, 3, 15, 16})), InvalidArgumentError);
}

TEST(TrainingMar, KlVaeStepsReduceTheLoss) {
  const KlVaeModelConfig cfg = tiny_vae();
  ParameterSet params = init_kl_vae_parameters(cfg, 3, at::kCPU);
  const KlVaeModel model(cfg, params.as_map(), at::kCPU);
  const WorldImageSet images = WorldImageSet::render(world_items(WorldSplit::Train, 1, world_class_count()), 16);
  const at::Tensor x = images.batch(at::arange(4, at::TensorOptions().dtype(at::kLong)), at::kCPU);
  AdamW opt(params, {});
  double first = 0, last = 0;
  for (int step = 0; step < 15; ++step) {
    at::Generator gen = step_generator(1, step);
    params.zero_grad();
    const KlVaeLoss l = kl_vae_loss(model, x, gen);
    l.loss.backward();
    if (step == 0) {
      first = l.rec_mse.item<double>();
      for (const char* name :
           {"encoder.conv_in.weight", "quant_conv.weight", "post_quant_conv.weight", "decoder.conv_out.weight"})
        EXPECT_GT(params.get(name).grad().abs().sum().item<double>(), 0.0) << name;
    }
    opt.step(3e-3);
  }
  {
    c10::NoGradGuard no_grad;
    at::Generator gen = step_generator(1, 99);
    last = kl_vae_loss(model, x, gen).rec_mse.item<double>();
  }
  EXPECT_LT(last, first * 0.7) << first << " -> " << last;
}

// Upstream's learned-range training loss written out in double precision from the
// float64 cosine schedule (gaussian_diffusion.py training_losses, MSE + VB).
TEST(TrainingMar, DiffusionLossIsUpstreamsFormula) {
  const std::vector<double> betas = mar::cosine_betas(1000);
  std::vector<double> ac(betas.size());
  double run = 1;
  for (size_t i = 0; i < betas.size(); ++i) ac[i] = run *= 1 - betas[i];
  auto post_var = [&](size_t i) { return betas[i] * (1 - (i ? ac[i - 1] : 1.0)) / (1 - ac[i]); };
  auto cdf = [](double x) { return 0.5 * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); };

  const std::vector<int64_t> ts = {0, 1, 417, 999};
  const int64_t C = 3;
  const at::Tensor x0 =
      at::tensor({0.3, -1.2, 0.05, 0.7, 0.2, -0.4, -0.9, 1.3, 0.0, 0.5, -0.5, 0.25}).view({4, C}).to(at::kFloat);
  const at::Tensor noise =
      at::tensor({1.1, -0.3, 0.4, -0.8, 0.6, 0.2, 0.9, -1.4, 0.1, -0.2, 0.3, 1.7}).view({4, C}).to(at::kFloat);
  const at::Tensor out = at::tensor({
                                        0.9, -0.1, 0.3, 0.5,  -0.7, 0.2, -0.6, 0.8,  0.0, 0.4, -0.2, 0.1,
                                        0.2, -0.5, 0.9, -0.3, 0.0,  0.7, 0.5,  -0.9, 0.1, 0.3, 0.6,  -0.4,
                                    })
                             .view({4, 2 * C})
                             .to(at::kFloat)
                             .requires_grad_(true);
  const at::Tensor t = at::tensor(ts);
  const DiffusionTrainingLoss loss;
  at::Tensor seen_xt;
  const auto terms = loss.training_losses(
      [&](const at::Tensor& x_t, const at::Tensor& steps) {
        seen_xt = x_t;
        EXPECT_TRUE(steps.equal(t));
        return out;
      },
      x0, t, noise);

  for (size_t r = 0; r < ts.size(); ++r) {
    const size_t i = static_cast<size_t>(ts[r]);
    const double acp = i ? ac[i - 1] : 1.0;
    const double c1 = betas[i] * std::sqrt(acp) / (1 - ac[i]), c2 = (1 - acp) * std::sqrt(1 - betas[i]) / (1 - ac[i]);
    const double true_logvar = std::log(post_var(i == 0 ? 1 : i));
    double mse = 0, kl = 0, nll = 0;
    for (int64_t c = 0; c < C; ++c) {
      const double x = x0[r][c].item<double>(), n = noise[r][c].item<double>();
      const double eps = out[r][c].item<double>(), v = out[r][C + c].item<double>();
      const double xt = std::sqrt(ac[i]) * x + std::sqrt(1 - ac[i]) * n;
      EXPECT_NEAR(seen_xt[r][c].item<double>(), xt, 1e-5);
      mse += (n - eps) * (n - eps) / C;
      const double frac = (v + 1) / 2, logvar = frac * std::log(betas[i]) + (1 - frac) * true_logvar;
      const double x0_hat = std::sqrt(1 / ac[i]) * xt - std::sqrt(1 / ac[i] - 1) * eps;
      const double mean = c1 * x0_hat + c2 * xt, true_mean = c1 * x + c2 * xt;
      kl += 0.5 *
            (-1 + logvar - true_logvar + std::exp(true_logvar - logvar) +
             (true_mean - mean) * (true_mean - mean) * std::exp(-logvar)) /
            C / std::log(2.0);
      const double inv = std::exp(-0.5 * logvar);
      const double plus = cdf(inv * (x - mean + 1 / 255.0)), minus = cdf(inv * (x - mean - 1 / 255.0));
      const double lp = x < -0.999  ? std::log(std::max(plus, 1e-12))
                        : x > 0.999 ? std::log(std::max(1 - minus, 1e-12))
                                    : std::log(std::max(plus - minus, 1e-12));
      nll += -lp / C / std::log(2.0);
    }
    const double vb = i == 0 ? nll : kl;
    const double tol = 2e-4 * std::max(1.0, std::abs(vb));
    EXPECT_NEAR(terms.mse[static_cast<int64_t>(r)].item<double>(), mse, 1e-5) << "t=" << i;
    EXPECT_NEAR(terms.vb[static_cast<int64_t>(r)].item<double>(), vb, tol) << "t=" << i;
    EXPECT_NEAR(terms.loss[static_cast<int64_t>(r)].item<double>(), mse + vb, tol) << "t=" << i;
  }
  // The VB term reaches only the variance values (stop-gradient on the mean).
  terms.vb.sum().backward();
  EXPECT_EQ(out.grad().narrow(1, 0, C).abs().sum().item<double>(), 0.0);
  EXPECT_GT(out.grad().narrow(1, C, C).abs().sum().item<double>(), 0.0);
  EXPECT_THROW(loss.training_losses([&](const at::Tensor&, const at::Tensor&) { return out; }, x0,
                                    at::tensor({0, 1, 2, 1000}), noise),
               InvalidArgumentError);
}

TEST(TrainingMar, MaskRatioFollowsTheTruncatedNormal) {
  EXPECT_NEAR(mask_ratio_from_uniform(0.0, 0.7), 0.7, 1e-9);
  EXPECT_NEAR(mask_ratio_from_uniform(1.0 - 1e-12, 0.7), 1.0, 1e-6);
  // scipy.stats.truncnorm(-1.2, 0, loc=1, scale=0.25): median 0.87432, mean 0.86702.
  EXPECT_NEAR(mask_ratio_from_uniform(0.5, 0.7), 0.87432, 1e-4);
  double sum = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) sum += mask_ratio_from_uniform((i + 0.5) / n, 0.7);
  EXPECT_NEAR(sum / n, 0.86702, 1e-4);
  const at::Tensor orders = at::tensor({2, 0, 3, 1, 1, 3, 0, 2}).view({2, 4});
  EXPECT_TRUE(mask_from_orders(orders, 2).equal(at::tensor({1.f, 0.f, 1.f, 0.f, 0.f, 1.f, 0.f, 1.f}).view({2, 4})));
  EXPECT_THROW(mask_from_orders(orders, 5), InvalidArgumentError);
  // patchify is unpatchify's inverse (MarModel::unpatchify, upstream's einsums).
  const at::Tensor lat = at::rand({2, 4, 8, 8});
  const at::Tensor tok = mar_patchify(lat, 2);
  EXPECT_EQ(tok.sizes(), (at::IntArrayRef{2, 16, 16}));
  EXPECT_TRUE(tok.reshape({2, 4, 4, 4, 2, 2}).permute({0, 3, 1, 4, 2, 5}).reshape({2, 4, 8, 8}).equal(lat));
}

// Records what generation asked the transformer for at one step, and answers with
// the full computation (what generate_masked does without a cache).
struct RecordingCache : mar::MarFeatureCache {
  int64_t at_step = 1;
  mar::MarStepInput input;
  at::Tensor z;
  at::Tensor condition(const mar::MarTransformer& transformer, const mar::MarStepInput& in) override {
    at::Tensor out = transformer.forward_decoder(transformer.forward_encoder(in.tokens, in.mask, in.class_embedding),
                                                 in.mask);
    if (in.step == at_step) {
      input = in;
      z = out;
    }
    return out;
  }
};

TEST(TrainingMar, TrainingForwardIsTheInferenceForward) {
  test::TempDir dir;
  const mar::MarConfig cfg = tiny_mar();
  ParameterSet params = init_mar_parameters(cfg, 4, at::kCPU, false);
  jitter(params, 0.2);
  io::NamedTensors tensors;
  for (const auto& p : params.items()) tensors.emplace_back("mar." + p.name, p.tensor.detach());
  const ParameterSet vae_params = init_kl_vae_parameters(tiny_vae(), 1, at::kCPU);
  for (const auto& p : vae_params.items())
    if (!mar::is_unused_vae_key(p.name)) tensors.emplace_back("vae." + p.name, p.tensor.detach());
  io::write_safetensors(dir.file("weights.safetensors"), tensors);
  io::write_bundle_manifest(dir.path().string(), mar::mar_manifest("t", cfg, tiny_vae().arch, {}));
  const mar::MarModel model = mar::MarModel::load(io::ModelBundle::open(dir.path().string()), at::kCPU);

  // Inference: step 1 of 4 with guidance (conditional rows, then fake-latent rows).
  RecordingCache cache;
  mar::MaskedParams mp;
  mp.num_iter = 4;
  mp.cfg = 2.0;
  mar::SeededMarRandom rng(3);
  mar::MaskedHooks hooks;
  hooks.feature_cache = &cache;
  const at::Tensor labels = at::tensor({int64_t{1}, int64_t{7}});
  {
    c10::NoGradGuard no_grad;
    mar::generate_masked(model, labels, mp, rng, hooks);
  }
  ASSERT_TRUE(cache.z.defined());
  ASSERT_EQ(cache.input.tokens.size(0), 4);

  // Training: the same known tokens, garbage where the tokens are masked (the
  // encoder drops them), the labels twice with the second half dropped to fake_latent.
  const mar::MarTransformer transformer(cfg, mar_weights(params, false), at::kCPU);
  MarBatch batch;
  batch.mask = cache.input.mask;
  batch.tokens = cache.input.tokens + batch.mask.unsqueeze(-1) * at::randn(cache.input.tokens.sizes());
  batch.labels = at::cat({labels, labels});
  batch.drop_label = at::tensor({0, 0, 1, 1}).to(at::kBool);
  const at::Tensor z = mar_condition(transformer, batch);
  EXPECT_TRUE(z.requires_grad());
  EXPECT_TRUE(z.detach().allclose(cache.z, 1e-5, 1e-5)) << (z.detach() - cache.z).abs().max().item<double>();
}

TEST(TrainingMar, TransformerStepsReduceTheLoss) {
  const mar::MarConfig cfg = tiny_mar();
  ParameterSet params = init_mar_parameters(cfg, 2, at::kCPU, false);
  const auto weights = mar_weights(params, false);
  const mar::MarTransformer transformer(cfg, weights, at::kCPU);
  const mar::DiffusionHead head(cfg, diffusion_head_weights(weights), at::kCPU);
  const DiffusionTrainingLoss diffusion;
  // Two fixed images with structure: token c of position (h, w) = (c + 1) * sin(h + w).
  const at::Tensor grid = at::arange(8).view({1, 8}) + at::arange(8).view({8, 1});
  at::Tensor lat = at::stack({at::sin(grid.to(at::kFloat)), at::cos(grid.to(at::kFloat))}).view({2, 1, 8, 8});
  lat = lat.repeat({1, 4, 1, 1}) * at::arange(1, 5).view({1, 4, 1, 1}).to(at::kFloat) * 0.5;
  MarBatch batch;
  batch.tokens = mar_patchify(lat, 1);
  batch.labels = at::tensor({int64_t{0}, int64_t{1}});
  at::Generator order_gen = step_generator(0, 0);
  batch.mask = mask_from_orders(at::argsort(at::rand({2, 64}, order_gen), int64_t{1}, false), 56);
  AdamW opt(params, {});
  auto eval_loss = [&] {
    c10::NoGradGuard no_grad;
    at::Generator gen = step_generator(9, 0);
    return mar_loss(transformer, head, diffusion, batch, 8, gen).loss.item<double>();
  };
  const double first = eval_loss();
  for (int step = 0; step < 40; ++step) {
    at::Generator gen = step_generator(1, step);
    params.zero_grad();
    mar_loss(transformer, head, diffusion, batch, 4, gen).loss.backward();
    // Upstream zero-initialises the head's adaLN and output layers: the gradient
    // reaches the transformer from the third update on.
    if (step == 3) {
      for (const char* name : {"z_proj.weight", "encoder_blocks.0.attn.qkv.weight", "decoder_blocks.0.mlp.fc2.weight",
                               "diffusion_pos_embed_learned", "diffloss.net.final_layer.linear.weight"})
        EXPECT_GT(params.get(name).grad().abs().sum().item<double>(), 0.0) << name;
    }
    opt.step(2e-3);
  }
  const double last = eval_loss();
  EXPECT_LT(last, first * 0.8) << first << " -> " << last;
}

std::map<std::string, at::Tensor> train_tiny_vae(const std::string& work, int64_t stop_at, bool resume) {
  int64_t steps_run = 0;
  KlVaeTrainSetup setup;
  setup.model = tiny_vae();
  setup.image_size = 16;
  setup.train_per_class = 1;
  setup.eval_per_class = 1;
  train_kl_vae(test::tiny_train_options(work, stop_at, resume, &steps_run), setup);
  return load_checkpoint_weights(work + "/kl-vae");
}

MarTrainSetup tiny_mar_setup(const std::string& work) {
  MarTrainSetup setup;
  setup.model = tiny_mar();
  setup.vae_run_dir = work + "/kl-vae";
  setup.train_per_class = 1;
  setup.eval_per_class = 1;
  setup.ema_rate = 0.5;  // a short horizon, so that six steps move the EMA visibly
  return setup;
}

std::map<std::string, at::Tensor> train_tiny_mar(const std::string& work, int64_t stop_at, bool resume) {
  int64_t steps_run = 0;
  MarTrainSetup setup = tiny_mar_setup(work);
  fit_mar_to_vae(setup);
  train_mar(test::tiny_train_options(work, stop_at, resume, &steps_run), setup);
  return load_checkpoint_weights(work + "/mar");
}

void expect_same_weights(const std::map<std::string, at::Tensor>& a, const std::map<std::string, at::Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, t] : a) EXPECT_TRUE(t.equal(b.at(name))) << name;
}

TEST(TrainingMar, ResumedRunsEndInTheSameState) {
  test::TempDir straight, interrupted;
  const auto vae_a = train_tiny_vae(straight.path().string(), 0, false);
  train_tiny_vae(interrupted.path().string(), 3, false);
  const auto vae_b = train_tiny_vae(interrupted.path().string(), 0, true);
  expect_same_weights(vae_a, vae_b);

  const auto mar_a = train_tiny_mar(straight.path().string(), 0, false);
  train_tiny_mar(interrupted.path().string(), 3, false);
  const auto mar_b = train_tiny_mar(interrupted.path().string(), 0, true);
  expect_same_weights(mar_a, mar_b);
  // The EMA copies are in the checkpoint and have moved away from the weights' init.
  EXPECT_FALSE(mar_a.at("ema.z_proj.weight").equal(mar_a.at("z_proj.weight")));
  // The latents were cached once per VAE checkpoint, with their mirrors.
  EXPECT_TRUE(std::filesystem::exists(straight.file("mar/latents-train-1.safetensors")));
}

TEST(TrainingMar, ExportedBundleLoadsAndGenerates) {
  test::TempDir work;
  const std::string w = work.path().string();
  train_tiny_vae(w, 0, false);
  train_tiny_mar(w, 0, false);

  BundleExportOptions o;
  o.work_dir = w;
  o.out_dir = work.file("bundle");
  o.name = "mar-demo";
  o.dtype = "f32";
  o.command = "test";
  o.sampling_defaults = {{"cfg_scale", 2.0}, {"cfg_schedule", "linear"}, {"temperature", 1.0}, {"steps", 4}};
  export_mar_bundle(o);
  const io::ModelBundle bundle = io::ModelBundle::open(o.out_dir);
  EXPECT_EQ(bundle.family(), "mar");
  EXPECT_EQ(bundle.class_names(), world_class_names());
  EXPECT_EQ(bundle.manifest["provenance"]["mar_weights"], "ema");
  EXPECT_EQ(bundle.manifest["sampling_defaults"]["steps"], 4);
  const mar::MarModel loaded = mar::MarModel::load(bundle, at::kCPU);

  // The bundle carries the measured latent scale, the EMA weights and the trained decoder.
  nlohmann::json mar_manifest, vae_manifest;
  const auto mar_ckpt = load_checkpoint_weights(work.file("mar"), &mar_manifest);
  const auto vae_ckpt = load_checkpoint_weights(work.file("kl-vae"), &vae_manifest);
  const double scale = mar_manifest["config"]["latent_scale"].get<double>();
  EXPECT_DOUBLE_EQ(loaded.vae->config().latent_scale, scale);
  const KlVaeModel vae(kl_vae_model_config_from_json(vae_manifest["config"]["model"]), vae_ckpt, at::kCPU);
  c10::NoGradGuard no_grad;
  const WorldImageSet images = WorldImageSet::render(world_items(WorldSplit::HeldOut, 1, world_class_count()), 16);
  const at::Tensor x = images.batch(at::arange(3, at::TensorOptions().dtype(at::kLong)), at::kCPU);
  const at::Tensor mean = vae.encode(x).mean;
  EXPECT_TRUE(loaded.vae->decode_tokens(mean * scale).allclose(vae.decode(mean), 1e-4, 1e-4));
  EXPECT_NEAR(scale,
              measured_latent_scale(
                  encode_latents(vae, WorldImageSet::render(world_items(WorldSplit::Train, 1, world_class_count()), 16),
                                 false)
                      .moments),
              1e-6);
  std::map<std::string, at::Tensor> ema;
  for (const auto& [name, t] : mar_ckpt)
    if (name.rfind(kEmaPrefix, 0) == 0) ema[name.substr(4)] = t;
  const mar::MarTransformer trained(tiny_mar(), ema, at::kCPU);
  const at::Tensor ce = trained.class_embedding(at::tensor({int64_t{2}}));
  EXPECT_TRUE(loaded.transformer->class_embedding(at::tensor({int64_t{2}})).equal(ce));

  // The tokenizer gate reads the training encoder through the bundle's decoder.
  const double psnr = kl_vae_bundle_tokenizer_psnr(w, *loaded.vae, images.pixels(), at::kCPU);
  EXPECT_NEAR(psnr, kl_vae_reconstruction_psnr(vae, vae.decoder(), images.pixels()), 0.05);

  // The normal session generates from it.
  GenerationRequest request;
  request.model_path = o.out_dir;
  request.class_ids = {0, 3};
  request.seed = 1;
  request.cfg_scale = 2.0;
  request.steps = 4;
  request.device = "cpu";
  request.threads = 1;
  GenerationSession session;
  const GenerationResult r = session.run(request);
  ASSERT_EQ(r.images.size(), 2u);
  EXPECT_EQ(r.images[0].width, 16);
}

TEST(TrainingMar, ErrorsSayWhatToDo) {
  test::TempDir work;
  const std::string w = work.path().string();
  MarTrainSetup setup = tiny_mar_setup(w);
  int64_t steps = 0;
  try {
    fit_mar_to_vae(setup);
    FAIL() << "expected FileError";
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find("kvstudio-train kl-vae"), std::string::npos) << e.what();
  }
  EXPECT_THROW(train_mar(test::tiny_train_options(w, 0, false, &steps), setup), FileError);
  BundleExportOptions o;
  o.work_dir = w;
  o.out_dir = work.file("bundle");
  EXPECT_THROW(export_mar_bundle(o), FileError);

  train_tiny_vae(w, 0, false);
  // A MAR grid that is not the VAE's latent grid.
  MarTrainSetup wrong = tiny_mar_setup(w);
  fit_mar_to_vae(wrong);
  wrong.model.img_size = 32;
  try {
    train_mar(test::tiny_train_options(w, 0, false, &steps), wrong);
    FAIL() << "expected ModelMismatchError";
  } catch (const ModelMismatchError& e) {
    EXPECT_NE(std::string(e.what()).find("latents"), std::string::npos) << e.what();
  }
  // A token width that is not the VAE's.
  wrong = tiny_mar_setup(w);
  fit_mar_to_vae(wrong);
  wrong.model.vae_embed_dim = 8;
  EXPECT_THROW(train_mar(test::tiny_train_options(w, 0, false, &steps), wrong), ModelMismatchError);
  wrong = tiny_mar_setup(w);
  fit_mar_to_vae(wrong);
  wrong.diffusion_batch_mul = 0;
  EXPECT_THROW(train_mar(test::tiny_train_options(w, 0, false, &steps), wrong), InvalidArgumentError);
  wrong.diffusion_batch_mul = 1;
  wrong.mask_ratio_min = 1.5;
  EXPECT_THROW(train_mar(test::tiny_train_options(w, 0, false, &steps), wrong), InvalidArgumentError);
}

}  // namespace
}  // namespace kvs::training

namespace kvs::training {
namespace {

// The first reverse step's gain on the head's noise-prediction error:
// d mean / d eps = coef1 * sqrt(1 / abar_t - 1) at the first respaced step.
double first_step_error_gain(const std::string& respacing) {
  const mar::GaussianDiffusion d(respacing);
  const auto& ac = d.alphas_cumprod();
  const size_t t = ac.size() - 1;
  const double beta = d.betas()[t], acp = ac[t - 1];
  return beta * std::sqrt(acp) / (1 - ac[t]) * std::sqrt(1 / ac[t] - 1);
}

TEST(TrainingMar, DemoRespacingKeepsTheFirstStepStable) {
  // "25" keeps t = 999 (abar ~ 2e-9): errors are amplified ~1300x, which only a head
  // trained ~100k steps can afford; the demo's "ddim25" starts at t = 960.
  EXPECT_GT(first_step_error_gain("25"), 1000.0);
  EXPECT_LT(first_step_error_gain("ddim25"), 3.0);
  EXPECT_EQ(mar::demo_mar_config().num_sampling_steps, "ddim25");
}

}  // namespace
}  // namespace kvs::training
