// The VAR converter turns official-format checkpoints (made by torch.save from the
// conformance weights, with every official key) into a bundle that reproduces the
// official greedy per-scale ids, and rejects bad checkpoints by name.
#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "engine/core/errors.h"
#include "engine/io/model_bundle.h"
#include "engine/io/safetensors_reader.h"
#include "engine/models/var/var_converter.h"
#include "engine/models/var/var_generation.h"
#include "engine/models/var/var_model.h"
#include "tests/engine/test_helpers.h"

using namespace kvs;

namespace {

std::string ckpt_dir() {
  const char* d = std::getenv("KVSTUDIO_VAR_CKPT_DIR");
  return d ? d : "";
}

var::VarConvertOptions options(const std::string& checkpoint, const std::string& tokenizer, const std::string& out) {
  var::VarConvertOptions o;
  o.checkpoint = ckpt_dir() + "/" + checkpoint;
  o.tokenizer = ckpt_dir() + "/" + tokenizer;
  o.out_dir = out;
  return o;
}

std::string convert_error(const var::VarConvertOptions& o) {
  try {
    var::convert_var_checkpoint(o);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

#define REQUIRE_VAR_CHECKPOINTS()                                                                           \
  if (const std::string why = test::fixture_skip_reason(ckpt_dir(), "KVSTUDIO_VAR_CKPT_DIR"); !why.empty()) \
  GTEST_SKIP() << why

TEST(VarConverter, OfficialCheckpointsReproduceTheOfficialIds) {
  REQUIRE_VAR_CHECKPOINTS();
  test::TempDir out;
  auto report = var::convert_var_checkpoint(options("var_tiny.pth", "vae_tiny.pth", out.path().string()));
  EXPECT_EQ(report.var.depth, 2);
  EXPECT_EQ(report.var.embed_dim, 128);
  EXPECT_EQ(report.var.num_heads, 2);
  EXPECT_EQ(report.var.num_classes, 10);
  EXPECT_EQ(report.var.patch_nums, var::patch_nums_for_resolution(256));
  EXPECT_EQ(report.vae.ch_mult, (std::vector<int64_t>{1, 1, 1}));
  EXPECT_EQ(report.vae.ch, 32);
  EXPECT_EQ(report.vae.share_quant_resi, 4);
  // lvl_1L, attn_bias_for_masking, 2 zero_k_bias; encoder (2), quant_conv (2), ema_vocab_hit_SV.
  EXPECT_EQ(report.dropped_keys.size(), 9u);
  auto model = var::VarModel::load(io::ModelBundle::open(out.path().string()), at::Device(at::kCPU));
  auto io_file = io::SafetensorsReader::open(test::conformance_dir() + "/var_c2i_tiny.io.safetensors");
  var::ScaleParams p;
  p.cfg = 1.5;
  p.sampling.top_k = 1;
  auto result = var::generate_scales(*model.transformer, *model.vqvae, io_file->tensor("label_B"), p);
  for (int64_t si = 0; si < 10; ++si)
    EXPECT_TRUE(at::equal(result.ids[static_cast<size_t>(si)], io_file->tensor("idx_s" + std::to_string(si))))
        << "scale " << si;
  EXPECT_LT((result.f_hat - io_file->tensor("f_hat")).abs().max().item<float>(), 1e-4);
}

TEST(VarConverter, WrappedBf16CheckpointAndDtypeOption) {
  REQUIRE_VAR_CHECKPOINTS();
  test::TempDir out;
  auto o = options("var_ddp_bf16.pth", "vae_tiny.pth", out.path().string());
  o.weights_dtype = "f16";
  var::convert_var_checkpoint(o);
  auto reader = io::SafetensorsReader::open(out.file("weights.safetensors"));
  EXPECT_EQ(reader->index().find("var.head.weight")->dtype, io::DType::F16);
  EXPECT_EQ(reader->index().find("var.lvl_1L"), nullptr);
  EXPECT_NO_THROW(var::VarModel::load(io::ModelBundle::open(out.path().string()), at::Device(at::kCPU)));
}

TEST(VarConverter, BadCheckpointsAreRejectedByName) {
  REQUIRE_VAR_CHECKPOINTS();
  test::TempDir out;
  const std::string dir = out.path().string();
  std::string msg = convert_error(options("var_bad_shape.pth", "vae_tiny.pth", dir));
  EXPECT_NE(msg.find("tensor head.bias has shape [64], expected [128]"), std::string::npos) << msg;
  msg = convert_error(options("var_extra_key.pth", "vae_tiny.pth", dir));
  EXPECT_NE(msg.find("unexpected tensors: blocks.0.attn.bogus"), std::string::npos) << msg;
  msg = convert_error(options("var_missing_key.pth", "vae_tiny.pth", dir));
  EXPECT_NE(msg.find("missing tensors: head_nm.ada_lin.1.bias"), std::string::npos) << msg;
  msg = convert_error(options("var_odd_schedule.pth", "vae_tiny.pth", dir));
  EXPECT_NE(msg.find("700 tokens in 10 scales match no official schedule"), std::string::npos) << msg;
  auto o = options("var_odd_schedule.pth", "vae_tiny.pth", dir);
  o.patch_nums = {1, 2, 3};
  msg = convert_error(o);
  EXPECT_NE(msg.find("the checkpoint has 700 in 10"), std::string::npos) << msg;
  msg = convert_error(options("var_tiny.pth", "vae_unknown_key.pth", dir));
  EXPECT_NE(msg.find("unexpected tensors: decoder.bogus.weight"), std::string::npos) << msg;
  msg = convert_error(options("var_text.pth", "vae_tiny.pth", dir));
  EXPECT_NE(msg.find("var_text.pth: not a PyTorch checkpoint"), std::string::npos) << msg;
  msg = convert_error(options("vae_tiny.pth", "vae_tiny.pth", dir));
  EXPECT_NE(msg.find("not a VAR checkpoint"), std::string::npos) << msg;
  // Nothing half-written is left behind by a failed conversion.
  EXPECT_FALSE(std::filesystem::exists(out.file("model.json")));
}
