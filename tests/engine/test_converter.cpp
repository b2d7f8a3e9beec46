// The converter turns official-format LlamaGen checkpoints (made by torch.save
// from the conformance weights) into a bundle that reproduces the official
// greedy tokens, and rejects bad checkpoints with messages that name the problem.
#include <ATen/Functions.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "engine/core/errors.h"
#include "engine/io/model_bundle.h"
#include "engine/io/safetensors_reader.h"
#include "engine/models/llamagen/llamagen_converter.h"
#include "engine/models/llamagen/llamagen_generation.h"
#include "engine/models/llamagen/llamagen_model.h"
#include "tests/engine/test_helpers.h"

using namespace kvs;
namespace fs = std::filesystem;

namespace {

std::string ckpt_dir() {
  const char* d = std::getenv("KVSTUDIO_LLAMAGEN_CKPT_DIR");
  return d ? d : "";
}

llamagen::ConvertOptions options(const std::string& checkpoint, const std::string& tokenizer, const std::string& out) {
  llamagen::ConvertOptions o;
  o.checkpoint = ckpt_dir() + "/" + checkpoint;
  o.tokenizer = ckpt_dir() + "/" + tokenizer;
  o.out_dir = out;
  o.image_size = 64;
  o.n_head = 4;
  return o;
}

std::string convert_error(const llamagen::ConvertOptions& o) {
  try {
    llamagen::convert_llamagen_checkpoint(o);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

#define REQUIRE_CHECKPOINTS()                                                                                    \
  if (const std::string why = test::fixture_skip_reason(ckpt_dir(), "KVSTUDIO_LLAMAGEN_CKPT_DIR"); !why.empty()) \
  GTEST_SKIP() << why

TEST(Converter, OfficialCheckpointsReproduceTheOfficialTokens) {
  REQUIRE_CHECKPOINTS();
  test::TempDir out;
  auto report = llamagen::convert_llamagen_checkpoint(options("c2i_tiny.pt", "vq_tiny.pt", out.path().string()));
  EXPECT_EQ(report.gpt.dim, 128);
  EXPECT_EQ(report.gpt.grid_size(), 16);
  EXPECT_EQ(report.vq.decoder_ch_mult, (std::vector<int64_t>{1, 1, 1}));
  EXPECT_EQ(report.dropped_keys.size(), 5u);
  // A partial encoder (two of its tensors) is dropped: the bundle cannot finish pictures.
  EXPECT_FALSE(report.encoder_kept);
  EXPECT_FALSE(fs::exists(out.path() / "vq-encoder.safetensors"));
  auto model = llamagen::LlamaGenModel::load(io::ModelBundle::open(out.path().string()), at::Device(at::kCPU));
  auto io_file = io::SafetensorsReader::open(test::conformance_dir() + "/llamagen_c2i_tiny.io.safetensors");
  raster::RasterParams p;
  p.cfg_scale = 4.0;
  p.sampling.top_k = 1;
  auto result = llamagen::generate_raster(*model.gpt, io_file->tensor("labels"), p);
  EXPECT_TRUE(at::equal(result.tokens, io_file->tensor("tokens_cfg4").to(at::kLong)));
}

// The whole official VQModel: its encoder half goes beside the weights, and the
// bundle encodes pictures with exactly those tensors.
TEST(Converter, KeepsACompleteEncoderSoThatTheBundleCanFinishPictures) {
  REQUIRE_CHECKPOINTS();
  test::TempDir out;
  auto report = llamagen::convert_llamagen_checkpoint(
      options("c2i_tiny.pt", "vq_tiny_with_encoder.pt", out.path().string()));
  EXPECT_TRUE(report.encoder_kept);
  EXPECT_EQ(report.dropped_keys, (std::vector<std::string>{"quantize.codebook_used"}));
  const io::ModelBundle bundle = io::ModelBundle::open(out.path().string());
  EXPECT_EQ(bundle.manifest.at("files").at("vq_encoder"), "vq-encoder.safetensors");
  auto model = llamagen::LlamaGenModel::load(bundle, at::Device(at::kCPU));
  ASSERT_TRUE(model.encoder != nullptr);
  auto weights = io::SafetensorsReader::open(bundle.weights_path());
  EXPECT_FALSE(weights->contains("vq.encoder.conv_in.weight"));
  const at::Tensor pictures = at::rand({1, 3, 64, 64}) * 2 - 1;
  EXPECT_EQ(model.encoder->encode_codes(pictures).sizes(), (at::IntArrayRef{1, 256}));
}

TEST(Converter, RawDdpStateDictInBf16AndDtypeOption) {
  REQUIRE_CHECKPOINTS();
  test::TempDir out;
  auto o = options("c2i_raw_ddp.pt", "vq_tiny.pt", out.path().string());
  o.weights_dtype = "f16";
  llamagen::convert_llamagen_checkpoint(o);
  auto reader = io::SafetensorsReader::open(out.file("weights.safetensors"));
  EXPECT_EQ(reader->index().find("gpt.norm.weight")->dtype, io::DType::F16);
  EXPECT_NO_THROW(llamagen::LlamaGenModel::load(io::ModelBundle::open(out.path().string()), at::Device(at::kCPU)));
}

TEST(Converter, BadCheckpointsAreRejectedByName) {
  REQUIRE_CHECKPOINTS();
  test::TempDir out;
  const std::string dir = out.path().string();
  std::string msg = convert_error(options("c2i_bad_shape.pt", "vq_tiny.pt", dir));
  EXPECT_NE(msg.find("tensor norm.weight has shape [64], expected [128]"), std::string::npos) << msg;
  msg = convert_error(options("c2i_extra_key.pt", "vq_tiny.pt", dir));
  EXPECT_NE(msg.find("unexpected tensors: layers.0.attention.bogus.weight"), std::string::npos) << msg;
  msg = convert_error(options("c2i_missing_key.pt", "vq_tiny.pt", dir));
  EXPECT_NE(msg.find("missing tensors: output.weight"), std::string::npos) << msg;
  msg = convert_error(options("c2i_tiny.pt", "vq_unknown_key.pt", dir));
  EXPECT_NE(msg.find("unexpected tensors: decoder.bogus.weight"), std::string::npos) << msg;
  msg = convert_error(options("c2i_text.pt", "vq_tiny.pt", dir));
  EXPECT_NE(msg.find("c2i_text.pt: not a PyTorch checkpoint"), std::string::npos) << msg;
  auto o = options("c2i_tiny.pt", "vq_tiny.pt", dir);
  o.n_head = 0;  // dim 128 x 3 layers is no official size
  msg = convert_error(o);
  EXPECT_NE(msg.find("matches no official GPT size; pass --n-head"), std::string::npos) << msg;
  o = options("c2i_tiny.pt", "vq_tiny.pt", dir);
  o.image_size = 0;
  msg = convert_error(o);
  EXPECT_NE(msg.find("pass --image-size"), std::string::npos) << msg;
  // Nothing half-written is left behind by a failed conversion.
  EXPECT_FALSE(std::filesystem::exists(out.file("model.json")));
}
