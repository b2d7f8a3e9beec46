// End to end through the public, torch-free session API: events, images,
// reproducibility, cancellation from another thread, PNG metadata round trip.
#include <gtest/gtest.h>

#include <thread>

#include "engine/core/errors.h"
#include "engine/image/png_file.h"
#include "engine/models/generation_session.h"
#include "engine/models/llamagen/llamagen_random_init.h"
#include "tests/engine/test_helpers.h"

using namespace kvs;

namespace {

struct Recorder : EventSink {
  int started = 0, tokens = 0, units = 0, finished = 0, failed = 0;
  bool failed_cancelled = false;
  int previews = 0;
  int64_t last_full_bytes = 0, last_logical = 0;
  std::function<void()> on_token;
  void on_event(const GenerationEvent& e) override {
    if (std::holds_alternative<StartedEvent>(e)) ++started;
    if (std::holds_alternative<TokenProgressEvent>(e)) {
      ++tokens;
      if (on_token) on_token();
    }
    if (auto* u = std::get_if<UnitDoneEvent>(&e)) {
      ++units;
      if (u->preview) ++previews;
      last_full_bytes = u->kv_bytes_full_equivalent;
      last_logical = u->kv_bytes_logical;
    }
    if (std::holds_alternative<FinishedEvent>(e)) ++finished;
    if (auto* f = std::get_if<FailedEvent>(&e)) {
      ++failed;
      failed_cancelled = f->cancelled;
    }
  }
};

GenerationRequest tiny_request(const test::TempDir& dir) {
  llamagen::write_random_llamagen_bundle(dir.path().string(), "tiny", test::tiny_gqa_gpt(), test::tiny_vq(), 3);
  GenerationRequest r;
  r.model_path = dir.path().string();
  r.class_ids = {1, 2};
  r.seed = 42;
  r.device = "cpu";
  r.threads = 1;
  return r;
}

}  // namespace

TEST(GenerationSession, EmitsEventsAndReproducesTokens) {
  test::TempDir dir;
  GenerationRequest r = tiny_request(dir);
  r.preview_every_units = 2;
  GenerationSession session;
  Recorder rec;
  GenerationResult a = session.run(r, &rec);
  EXPECT_EQ(rec.started, 1);
  EXPECT_EQ(rec.tokens, 16);
  EXPECT_EQ(rec.units, 4);
  EXPECT_EQ(rec.previews, 2);
  EXPECT_EQ(rec.finished, 1);
  EXPECT_EQ(rec.failed, 0);
  // Full cache: logical bytes equal the full-cache equivalent.
  EXPECT_EQ(rec.last_logical, rec.last_full_bytes);
  ASSERT_EQ(a.images.size(), 2u);
  EXPECT_EQ(a.images[0].width, 8);
  EXPECT_EQ(a.images[0].pixels.size(), 8u * 8 * 3);
  GenerationResult b = session.run(r);
  EXPECT_EQ(a.tokens, b.tokens);
  EXPECT_EQ(a.images[1].pixels, b.images[1].pixels);
}

TEST(GenerationSession, CancelFromAnotherThread) {
  test::TempDir dir;
  GenerationRequest r = tiny_request(dir);
  GenerationSession session;
  Recorder rec;
  rec.on_token = [&] {
    if (rec.tokens == 3) std::thread([&] { session.cancel(); }).join();
  };
  EXPECT_THROW(session.run(r, &rec), CancelledError);
  EXPECT_EQ(rec.tokens, 3);
  EXPECT_EQ(rec.failed, 1);
  EXPECT_TRUE(rec.failed_cancelled);
  // The session stays usable after a cancel.
  EXPECT_NO_THROW(session.run(r));
}

TEST(GenerationSession, BadRequestsFailWithClearMessages) {
  test::TempDir dir;
  GenerationRequest r = tiny_request(dir);
  GenerationSession session;
  r.class_ids = {9};
  try {
    session.run(r);
    FAIL();
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("class 9 does not exist: model tiny has 5 classes"), std::string::npos)
        << e.what();
  }
  r.class_ids = {1};
  r.policy = parse_policy_spec("nonsense");
  try {
    session.run(r);
    FAIL();
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown cache policy 'nonsense'"), std::string::npos);
  }
  r.policy = parse_policy_spec("full");
  r.model_path = dir.file("missing");
  EXPECT_THROW(session.run(r), FileError);
}

TEST(PngFile, RoundTripsPixelsAndTextChunks) {
  test::TempDir dir;
  RgbImage img;
  img.width = 3;
  img.height = 2;
  for (int i = 0; i < 18; ++i) img.pixels.push_back(static_cast<uint8_t>(i * 13));
  write_png(dir.file("a.png"), img, {{"parameters", "class 3\nSeed: 1"}, {"kvstudio", "{\"x\": \"é\"}"}});
  PngContents c = read_png(dir.file("a.png"));
  EXPECT_EQ(c.image.pixels, img.pixels);
  ASSERT_EQ(c.text.size(), 2u);
  EXPECT_EQ(c.text[0], (std::pair<std::string, std::string>{"parameters", "class 3\nSeed: 1"}));
  EXPECT_EQ(c.text[1].second, "{\"x\": \"é\"}");
  test::write_bytes(dir.file("bad.png"), "not a png at all");
  EXPECT_THROW(read_png(dir.file("bad.png")), FormatError);
}
