// The trainable VQ tokenizer: shapes of the encoder -> quantizer -> decoder round
// trip, gradients, official parameter names, and that the decoder it trains is
// the engine's VqDecoder (same images from exported weights).
#include <gtest/gtest.h>

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include "engine/core/errors.h"
#include "engine/models/blocks/vq_decoder.h"
#include "engine/models/janus/janus_random_init.h"
#include "engine/models/llamagen/llamagen_model.h"
#include "engine/models/llamagen/llamagen_weights.h"
#include "engine/training/bundle_start.h"
#include "engine/training/checkpoint.h"
#include "engine/training/llamagen/vq_model.h"
#include "engine/training/llamagen/vq_trainer.h"
#include "test_helpers.h"
#include "training_test_options.h"

namespace kvs::training {
namespace {

VqModelConfig tiny_vq_model() {
  VqModelConfig c;
  c.arch.codebook_size = 16;
  c.arch.codebook_embed_dim = 4;
  c.arch.z_channels = 32;
  c.arch.ch = 32;
  c.arch.decoder_ch_mult = {1, 2};  // 2x downsampling
  c.arch.num_res_blocks = 1;
  return c;
}

TEST(TrainingVq, RoundTripShapesAndGradients) {
  const VqModelConfig cfg = tiny_vq_model();
  ParameterSet params = init_vq_parameters(cfg, 7, at::kCPU);
  VqModel model(cfg, params.as_map(), at::kCPU);
  at::Tensor x = at::rand({2, 3, 16, 16}) * 2 - 1;
  VqOutput out = model.forward(x, true);
  EXPECT_EQ(out.reconstruction.sizes(), at::IntArrayRef({2, 3, 16, 16}));
  EXPECT_EQ(out.quantized.codes.sizes(), at::IntArrayRef({2, 64}));
  EXPECT_EQ(out.quantized.z_q.sizes(), at::IntArrayRef({2, 4, 8, 8}));
  EXPECT_GE(out.quantized.codes.min().item<int64_t>(), 0);
  EXPECT_LT(out.quantized.codes.max().item<int64_t>(), 16);
  at::Tensor loss = at::mse_loss(out.reconstruction, x) + out.quantized.vq_loss + out.quantized.commit_loss;
  ASSERT_TRUE(std::isfinite(loss.item<double>()));
  loss.backward();
  // The straight-through estimator reaches the encoder; the vq loss reaches the codebook.
  for (const char* name :
       {"encoder.conv_in.weight", "quant_conv.weight", "quantize.embedding.weight", "decoder.conv_out.weight"}) {
    const at::Tensor& g = params.get(name).grad();
    ASSERT_TRUE(g.defined()) << name;
    EXPECT_GT(g.abs().sum().item<double>(), 0.0) << name;
  }
  // encode_codes gives the forward's codes.
  EXPECT_TRUE(model.encode_codes(x).equal(out.quantized.codes));
}

TEST(TrainingVq, OfficialParameterNames) {
  VqModelConfig cfg = tiny_vq_model();
  cfg.arch.num_res_blocks = 2;
  cfg.arch.decoder_ch_mult = {1, 1, 2};
  std::set<std::string> names;
  for (const auto& e : vq_model_expected_tensors(cfg)) names.insert(e.name);
  // VQModel.state_dict() keys (vq_model.py): attention only at the last encoder level,
  // downsampling convs on the others, quant_conv between encoder and quantizer.
  for (const char* n :
       {"encoder.conv_in.weight", "encoder.conv_blocks.0.res.1.conv2.bias",
        "encoder.conv_blocks.0.downsample.conv.weight", "encoder.conv_blocks.1.downsample.conv.weight",
        "encoder.conv_blocks.2.res.0.nin_shortcut.weight", "encoder.conv_blocks.2.attn.1.proj_out.weight",
        "encoder.mid.1.q.weight", "encoder.norm_out.weight", "encoder.conv_out.bias", "quant_conv.weight",
        "quantize.embedding.weight", "post_quant_conv.weight", "decoder.conv_blocks.0.attn.2.k.weight",
        "decoder.conv_blocks.1.upsample.conv.weight"})
    EXPECT_TRUE(names.count(n)) << n;
  EXPECT_FALSE(names.count("encoder.conv_blocks.2.downsample.conv.weight"));
  EXPECT_FALSE(names.count("encoder.conv_blocks.0.attn.0.q.weight"));
  for (const auto& e : llamagen::vq_decoder_expected_tensors(cfg.arch)) EXPECT_TRUE(names.count(e.name)) << e.name;
  // The l2-normalised codebook starts on the unit sphere.
  ParameterSet params = init_vq_parameters(cfg, 1, at::kCPU);
  at::Tensor norms = params.get("quantize.embedding.weight").norm(2, {1});
  EXPECT_TRUE(at::allclose(norms, at::ones_like(norms), 1e-5, 1e-5));
}

TEST(TrainingVq, EngineDecoderReproducesTrainingDecoder) {
  const VqModelConfig cfg = tiny_vq_model();
  ParameterSet params = init_vq_parameters(cfg, 3, at::kCPU);
  VqModel model(cfg, params.as_map(), at::kCPU);
  at::Tensor x = at::rand({2, 3, 16, 16}) * 2 - 1;
  // Only the decoder half, as a bundle stores it, copied (not shared).
  std::map<std::string, at::Tensor> decoder_weights;
  for (const auto& e : llamagen::vq_decoder_expected_tensors(cfg.arch))
    decoder_weights[e.name] = params.get(e.name).detach().clone();
  vq::VqDecoder engine(cfg.arch, decoder_weights, at::kCPU);
  VqOutput out = model.forward(x, false);
  at::Tensor engine_images = engine.decode_codes(out.quantized.codes, 8, 8);
  EXPECT_TRUE(at::allclose(engine_images, out.reconstruction.detach(), 1e-5, 1e-5));
  EXPECT_TRUE(llamagen::images_to_uint8_nhwc(engine_images).equal(llamagen::images_to_uint8_nhwc(out.reconstruction)) ||
              (llamagen::images_to_uint8_nhwc(engine_images).to(at::kInt) -
               llamagen::images_to_uint8_nhwc(out.reconstruction).to(at::kInt))
                      .abs()
                      .max()
                      .item<int>() <= 1);
}

TEST(TrainingVq, FitsAnEncoderToTheFrozenDecoderOfABundle) {
  // A shipped bundle keeps only the decoder half; --decoder-from trains a new
  // encoder against it and leaves every decoder tensor exactly as shipped.
  test::TempDir dir;
  const std::string bundle = dir.file("bundle");
  janus::write_random_janus_bundle(bundle, "tiny", janus::tiny_janus_config(), 3, "f16");
  const BundleVq shipped = read_bundle_vq(bundle);
  EXPECT_TRUE(shipped.encoder.empty());
  EXPECT_EQ(shipped.image_size, 64);

  VqTrainSetup setup;
  setup.decoder_from = bundle;
  setup.train_per_class = 1;
  setup.eval_per_class = 1;
  int64_t steps_run = 0;
  train_vq(test::tiny_train_options(dir.file("work"), 0, false, &steps_run, 5, 3e-3, 3), setup);

  nlohmann::json manifest;
  const auto weights = load_checkpoint_weights(dir.file("work/vq"), &manifest);
  EXPECT_EQ(manifest.at("config").at("decoder_from").get<std::string>(), shipped.fingerprint);
  for (const auto& [name, value] : shipped.decoder) EXPECT_TRUE(weights.at(name).equal(value)) << name;
  // The encoder trained: it is no longer PyTorch's default init of the same seed.
  VqModelConfig cfg;
  cfg.arch = shipped.config.arch;
  const ParameterSet init = init_vq_parameters(cfg, 5, at::kCPU);
  int changed = 0;
  for (const auto& e : llamagen::vq_encoder_expected_tensors(cfg.arch, cfg.encoder_levels()))
    changed += !weights.at(e.name).equal(init.get(e.name).detach());
  EXPECT_GT(changed, 10);

  // A bundle that is not there is refused by name.
  EXPECT_THROW(
      {
        try {
          VqTrainSetup other = setup;
          other.decoder_from = dir.file("nowhere");
          train_vq(test::tiny_train_options(dir.file("work2"), 0, false, &steps_run), other);
        } catch (const FileError& e) {
          EXPECT_NE(std::string(e.what()).find("nowhere"), std::string::npos) << e.what();
          throw;
        }
      },
      FileError);
}

}  // namespace
}  // namespace kvs::training
