// Finishing a picture: a raster model is given a PNG's top token rows (encoded
// by its VQ tokenizer's encoder half) and draws the rest under any policy.
#include <gtest/gtest.h>

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <variant>

#include "engine/core/errors.h"
#include "engine/image/png_file.h"
#include "engine/io/model_bundle.h"
#include "engine/io/safetensors_reader.h"
#include "engine/models/blocks/vq_encoder.h"
#include "engine/models/generation_session.h"
#include "engine/models/llamagen/llamagen_random_init.h"
#include "engine/session/generation_metadata.h"
#include "tests/engine/test_helpers.h"
#include "tests/engine/tiny_var.h"

namespace kvs {
namespace {

// A picture with structure in both directions (so that rows and columns encode differently).
RgbImage test_picture(int width, int height) {
  RgbImage p;
  p.width = width;
  p.height = height;
  p.pixels.resize(static_cast<size_t>(width) * height * 3);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      uint8_t* px = &p.pixels[(static_cast<size_t>(y) * width + x) * 3];
      px[0] = static_cast<uint8_t>(255 * x / (width - 1));
      px[1] = static_cast<uint8_t>(255 * y / (height - 1));
      px[2] = static_cast<uint8_t>(((x / 3 + y / 5) % 2) * 200);
    }
  return p;
}

struct StartedRecorder : EventSink {
  int64_t given_units = -1;
  void on_event(const GenerationEvent& e) override {
    if (const auto* s = std::get_if<StartedEvent>(&e)) given_units = s->given_units;
  }
};

// A tiny random LlamaGen bundle (4x4 tokens, 8x8 px) with a random encoder,
// and a picture to finish.
int64_t tiny_pixels() { return test::tiny_gqa_gpt().grid_size() * test::tiny_vq().downsample(); }
struct FinishableModel {
  test::TempDir dir;
  std::string picture;
  FinishableModel() {
    llamagen::write_random_llamagen_bundle(dir.file("bundle"), "tiny", test::tiny_gqa_gpt(), test::tiny_vq(), 3);
    vq::write_bundle_vq_encoder(dir.file("bundle"), test::tiny_vq(), vq::random_vq_encoder(test::tiny_vq(), 4),
                                at::kFloat);
    picture = dir.file("picture.png");
    write_png(picture, test_picture(24, 20));
  }
  std::string bundle() const { return dir.file("bundle"); }
  GenerationRequest request(int64_t keep_rows) const {
    GenerationRequest r;
    r.model_path = bundle();
    r.class_ids = {1, 2};
    r.seed = 42;
    r.device = "cpu";
    r.threads = 1;
    if (keep_rows > 0) {
      r.from_image = picture;
      r.keep_rows = keep_rows;
    }
    return r;
  }
  // The encoder's codes of the picture, computed apart from the session.
  at::Tensor picture_codes() const {
    const io::ModelBundle b = io::ModelBundle::open(bundle());
    auto weights = io::SafetensorsReader::open(b.weights_path(), io::TensorMemory::OwnedCopy);
    vq::VqEncoder encoder(test::tiny_vq(), vq::read_bundle_vq_encoder(b, test::tiny_vq()),
                          weights->tensor("vq.quantize.embedding.weight"), at::Device(at::kCPU));
    return encoder.encode_codes(vq::picture_tensor(read_png(picture).image, tiny_pixels(), tiny_pixels()))[0];
  }
};

TEST(PictureTensor, CoversTheTargetKeepsTheMiddleAndMapsToPlusMinusOne) {
  // 4 x 2 columns 0, 85, 170, 255 into 2 x 2: already covering, the middle two columns stay.
  RgbImage p;
  p.width = 4;
  p.height = 2;
  for (int y = 0; y < 2; ++y)
    for (int v : {0, 85, 170, 255})
      for (int c = 0; c < 3; ++c) p.pixels.push_back(static_cast<uint8_t>(v));
  const at::Tensor t = vq::picture_tensor(p, 2, 2);
  ASSERT_EQ(t.sizes(), (at::IntArrayRef{1, 3, 2, 2}));
  EXPECT_NEAR(t[0][0][0][0].item<float>(), 85 / 127.5 - 1, 1e-6);
  EXPECT_NEAR(t[0][2][1][1].item<float>(), 170 / 127.5 - 1, 1e-6);
  // A flat picture stays flat through the scaling: white is 1 everywhere.
  RgbImage white;
  white.width = 10;
  white.height = 7;
  white.pixels.assign(10 * 7 * 3, 255);
  EXPECT_NEAR(vq::picture_tensor(white, 16, 16).min().item<float>(), 1.0, 1e-5);
  EXPECT_NEAR(vq::picture_tensor(white, 16, 16).max().item<float>(), 1.0, 1e-5);
  RgbImage broken = white;
  broken.pixels.pop_back();
  EXPECT_NE(test::error_of([&] { vq::picture_tensor(broken, 4, 4); }).find("do not match"), std::string::npos);
}

TEST(NearestCodes, FindsTheCodebookRowEachLatentIsNearest) {
  const at::Tensor codebook = at::randn({16, 4}, at::TensorOptions().dtype(at::kFloat));
  const at::Tensor want = at::tensor(std::vector<int64_t>{3, 0, 15, 7, 7, 9});
  // Latents [1, 4, 2, 3]: codebook rows, scaled (an L2-normalised quantiser ignores the length).
  const at::Tensor rows = codebook.index_select(0, want) * 3.0;
  const at::Tensor z = rows.view({1, 2, 3, 4}).permute({0, 3, 1, 2});
  EXPECT_TRUE(at::equal(vq::nearest_codes(z, codebook, true), want.view({1, 6})));
  const at::Tensor z_plain = codebook.index_select(0, want).view({1, 2, 3, 4}).permute({0, 3, 1, 2});
  EXPECT_TRUE(at::equal(vq::nearest_codes(z_plain, codebook, false), want.view({1, 6})));
}

TEST(FinishingAPicture, GivesThePicturesTopRowsAndDrawsTheRest) {
  FinishableModel m;
  const at::Tensor codes = m.picture_codes();
  ASSERT_EQ(codes.numel(), 16);
  GenerationSession session;
  const GenerationResult plain = session.run(m.request(0));
  for (const std::string policy : {"full", "streaming:rho=1/2,sink=1"}) {
    SCOPED_TRACE(policy);
    GenerationRequest r = m.request(2);
    r.policy = parse_policy_spec(policy);
    StartedRecorder started;
    const GenerationResult finished = session.run(r, &started);
    EXPECT_EQ(started.given_units, 2);
    ASSERT_EQ(finished.tokens.size(), 2u);
    for (size_t b = 0; b < 2; ++b)
      for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(finished.tokens[b][i], codes[i].item<int64_t>()) << b << " " << i;
    ASSERT_EQ(finished.images.size(), 2u);
    EXPECT_EQ(finished.images[0].width, tiny_pixels());
  }
  // Not what a plain run draws anyway: the given rows differ from the drawn ones.
  bool differs = false;
  for (int64_t i = 0; i < 8; ++i) differs |= plain.tokens[0][i] != codes[i].item<int64_t>();
  EXPECT_TRUE(differs);
  // Same seed, same picture, same rows: the same image.
  EXPECT_EQ(session.run(m.request(2)).tokens, session.run(m.request(2)).tokens);
}

TEST(FinishingAPicture, RefusesWhatCannotBeFinishedWithAClearMessage) {
  FinishableModel m;
  GenerationSession session;
  EXPECT_NE(test::error_of([&] { session.run(m.request(4)); }).find("leaves nothing to draw"), std::string::npos);
  GenerationRequest missing = m.request(1);
  missing.from_image = m.dir.file("nothing.png");
  EXPECT_NE(test::error_of([&] { session.run(missing); }).find("nothing.png"), std::string::npos);
  GenerationRequest no_rows = m.request(1);
  no_rows.keep_rows = 0;
  EXPECT_NE(test::error_of([&] { no_rows.validate(); }).find("--keep-rows"), std::string::npos);
  GenerationRequest no_picture = m.request(0);
  no_picture.keep_rows = 2;
  EXPECT_NE(test::error_of([&] { no_picture.validate(); }).find("--from"), std::string::npos);

  // A bundle without the encoder half.
  test::TempDir plain;
  llamagen::write_random_llamagen_bundle(plain.path().string(), "tiny", test::tiny_gqa_gpt(), test::tiny_vq(), 3);
  GenerationRequest r = m.request(1);
  r.model_path = plain.path().string();
  EXPECT_NE(test::error_of([&] { session.run(r); }).find("ships no VQ encoder"), std::string::npos);

  // A next-scale model has no rows to keep.
  test::TinyVar var(test::tiny_var_config(2, {1, 2, 3}), 3);
  GenerationRequest v = m.request(1);
  v.model_path = var.dir.path().string();
  EXPECT_NE(test::error_of([&] { session.run(v); }).find("cannot finish a picture"), std::string::npos);
}

TEST(FinishingAPicture, ThePngRecordsThePictureAndTheRowsKept) {
  FinishableModel m;
  GenerationSession session;
  const GenerationRequest r = m.request(3);
  const GenerationResult result = session.run(r);
  const std::string out = m.dir.file("finished.png");
  write_png(out, result.images[0], generation_png_chunks(r, result, 0, {}, "test"));
  const RecalledImage recalled = read_generation_png(out);
  EXPECT_EQ(recalled.request.from_image, m.picture);
  EXPECT_EQ(recalled.request.keep_rows, 3);
  EXPECT_NE(recalled.parameters_text.find("Finished from: picture.png, Kept rows: 3"), std::string::npos);
}

}  // namespace
}  // namespace kvs
