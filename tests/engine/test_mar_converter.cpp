// The MAR converter turns official-format checkpoints (made by torch.save from the
// conformance weights, laid out as main_mar.py's save_model and kl16.ckpt are)
// into a bundle that reproduces the official encoder, decoder and head outputs,
// takes the EMA weights, and rejects bad checkpoints by name.
#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "engine/core/errors.h"
#include "engine/io/model_bundle.h"
#include "engine/io/safetensors_reader.h"
#include "engine/models/mar/mar_converter.h"
#include "engine/models/mar/mar_model.h"
#include "tests/engine/test_helpers.h"

using namespace kvs;

namespace {

std::string ckpt_dir() {
  const char* d = std::getenv("KVSTUDIO_MAR_CKPT_DIR");
  return d ? d : "";
}

mar::MarConvertOptions options(const std::string& checkpoint, const std::string& vae, const std::string& out) {
  mar::MarConvertOptions o;
  o.checkpoint = ckpt_dir() + "/" + checkpoint;
  o.vae = ckpt_dir() + "/" + vae;
  o.out_dir = out;
  o.num_heads = 2;  // the tiny case is no official size
  o.num_sampling_steps = "40";
  return o;
}

std::string convert_error(const mar::MarConvertOptions& o) {
  try {
    mar::convert_mar_checkpoint(o);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

float max_diff(const at::Tensor& a, const at::Tensor& b) { return (a - b).abs().max().item<float>(); }

}  // namespace

#define REQUIRE_MAR_CHECKPOINTS()                                                                           \
  if (const std::string why = test::fixture_skip_reason(ckpt_dir(), "KVSTUDIO_MAR_CKPT_DIR"); !why.empty()) \
  GTEST_SKIP() << why

TEST(MarConverter, OfficialCheckpointsReproduceTheOfficialOutputs) {
  REQUIRE_MAR_CHECKPOINTS();
  test::TempDir out;
  const auto report = mar::convert_mar_checkpoint(options("checkpoint-last.pth", "kl16.ckpt", out.path().string()));
  EXPECT_EQ(report.source_key, "model_ema");
  EXPECT_TRUE(report.warnings.empty());
  EXPECT_EQ(report.mar.encoder_embed_dim, 64);
  EXPECT_EQ(report.mar.encoder_depth, 1);
  EXPECT_EQ(report.mar.buffer_size, 64);
  EXPECT_EQ(report.mar.seq_len(), 256);
  EXPECT_EQ(report.mar.img_size, 256);
  EXPECT_EQ(report.mar.class_num, 10);
  EXPECT_EQ(report.mar.diffloss_d, 1);
  EXPECT_EQ(report.mar.diffloss_w, 64);
  EXPECT_EQ(report.vae.ch, 32);
  EXPECT_EQ(report.vae.ch_mult, (std::vector<int64_t>{1, 1, 1}));
  EXPECT_EQ(report.dropped_keys.size(), 5u);  // encoder (2), quant_conv (2), loss (1)
  const auto bundle = io::ModelBundle::open(out.path().string());
  EXPECT_EQ(bundle.family(), "mar");
  EXPECT_EQ(bundle.name(), "mar-ckpt");  // the checkpoint's folder, as mar_base/checkpoint-last.pth
  const auto model = mar::MarModel::load(bundle, at::Device(at::kCPU));
  auto io_file = io::SafetensorsReader::open(test::conformance_dir() + "/mar_tiny.io.safetensors");
  const at::Tensor enc = model.transformer->forward_encoder(io_file->tensor("tokens_in"), io_file->tensor("mask"),
                                                            model.transformer->class_embedding(
                                                                io_file->tensor("labels")));
  EXPECT_LT(max_diff(enc, io_file->tensor("enc_out")), 1e-4);
  EXPECT_LT(max_diff(model.transformer->forward_decoder(io_file->tensor("enc_out"), io_file->tensor("mask")),
                     io_file->tensor("z")),
            1e-4);
  EXPECT_LT(max_diff(model.head->forward(io_file->tensor("head_x"), io_file->tensor("head_t"),
                                         io_file->tensor("head_c")),
                     io_file->tensor("head_out")),
            1e-4);
  EXPECT_EQ(model.diffusion->num_timesteps(), 40);
}

TEST(MarConverter, RawWeightsOnRequestOrWithoutEma) {
  REQUIRE_MAR_CHECKPOINTS();
  test::TempDir out, out2;
  auto o = options("checkpoint-last.pth", "kl16.ckpt", out.path().string());
  o.use_ema = false;
  o.weights_dtype = "f16";
  EXPECT_EQ(mar::convert_mar_checkpoint(o).source_key, "model");
  auto w = io::SafetensorsReader::open(out.file("weights.safetensors"));
  auto ref = io::SafetensorsReader::open(test::conformance_dir() + "/mar_tiny.weights.safetensors");
  // "model" holds half the EMA weights in these files.
  EXPECT_LT(max_diff(w->tensor("mar.z_proj.weight").to(at::kFloat), ref->tensor("mar.z_proj.weight") * 0.5), 1e-3);
  EXPECT_EQ(w->tensor("mar.z_proj.weight").scalar_type(), at::kHalf);
  // save_model without EMA stores model_ema = None: the raw weights are taken, with a warning.
  const auto report = mar::convert_mar_checkpoint(options("mar_no_ema.pth", "kl16.ckpt", out2.path().string()));
  EXPECT_EQ(report.source_key, "model");
  ASSERT_EQ(report.warnings.size(), 1u);
  EXPECT_NE(report.warnings[0].find("no EMA weights"), std::string::npos);
}

TEST(MarConverter, BadCheckpointsAreRejectedByName) {
  REQUIRE_MAR_CHECKPOINTS();
  test::TempDir out;
  const std::string dir = out.path().string();
  EXPECT_NE(convert_error(options("mar_missing_key.pth", "kl16.ckpt", dir))
                .find("missing tensors: diffloss.net.final_layer.linear.bias"),
            std::string::npos);
  EXPECT_NE(convert_error(options("mar_bad_shape.pth", "kl16.ckpt", dir))
                .find("tensor decoder_norm.bias has shape [7], expected [64]"),
            std::string::npos);
  EXPECT_NE(convert_error(options("mar_extra_key.pth", "kl16.ckpt", dir))
                .find("unexpected tensors: encoder_blocks.0.attn.bogus"),
            std::string::npos);
  EXPECT_NE(convert_error(options("checkpoint-last.pth", "vae_unknown_key.ckpt", dir)).find("decoder.bogus.weight"),
            std::string::npos);
  EXPECT_NE(convert_error(options("mar_text.pth", "kl16.ckpt", dir)).find("not a PyTorch checkpoint"),
            std::string::npos);
  auto no_heads = options("checkpoint-last.pth", "kl16.ckpt", dir);
  no_heads.num_heads = 0;
  EXPECT_NE(convert_error(no_heads).find("pass --n-head"), std::string::npos);
  auto swapped = options("checkpoint-last.pth", "kl16.ckpt", dir);
  swapped.vae = ckpt_dir() + "/checkpoint-last.pth";
  EXPECT_NE(convert_error(swapped).find("tokenizer"), std::string::npos);
}
