// What KV Studio does when the disk or the memory says no: a PNG or a calibration saved to
// a full disk (the process's file-size limit stands in for it: writes past it
// fail with EFBIG) or to a place that cannot be written. Each is a FileError
// naming the file and the reason, leaves no partial or temporary file behind,
// and never harms the file already there. A model folder deleted while its
// model is loaded, and host memory running out during a run (an address-space
// limit), are errors of that run that say so; the session goes on.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>

#include "engine/core/errors.h"
#include "engine/image/png_file.h"
#include "engine/io/mapped_file.h"
#include "engine/models/generation_session.h"
#include "engine/models/llamagen/llamagen_random_init.h"
#include "tests/engine/test_helpers.h"

using namespace kvs;

namespace {

// Noise does not compress: its PNG is about as large as its pixels.
RgbImage noise_image(int side, uint32_t seed) {
  RgbImage image;
  image.width = image.height = side;
  image.pixels.resize(static_cast<size_t>(side) * side * 3);
  std::mt19937 rng(seed);
  for (auto& p : image.pixels) p = static_cast<uint8_t>(rng());
  return image;
}

// While alive, files this process writes cannot grow past `bytes` (a full disk
// as the writer sees it: EFBIG instead of ENOSPC, SIGXFSZ ignored).
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &saved_);
    old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit limit = saved_;
    limit.rlim_cur = bytes;
    setrlimit(RLIMIT_FSIZE, &limit);
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &saved_);
    std::signal(SIGXFSZ, old_handler_);
  }

 private:
  rlimit saved_{};
  void (*old_handler_)(int) = nullptr;
};

// VmSize of /proc/self/status: the address space this process holds now.
int64_t process_virtual_bytes() {
  std::ifstream status("/proc/self/status");
  std::string key;
  int64_t kib = 0;
  while (status >> key) {
    if (key == "VmSize:") {
      status >> kib;
      return kib * 1024;
    }
  }
  return 0;
}

bool only_file_is(const std::filesystem::path& dir, const std::string& name) {
  int count = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    ++count;
    if (e.path().filename() != name) return false;
  }
  return count == 1;
}

}  // namespace

TEST(FileFaults, APngToAFullDiskFailsAndKeepsTheOldFile) {
  test::TempDir dir;
  const std::string path = dir.file("picture.png");
  const RgbImage before = noise_image(8, 1);
  write_png(path, before, {{"kvstudio", "before"}});
  {
    FileSizeLimit full(4096);  // a 64x64 noise PNG is about 12 KiB
    try {
      write_png(path, noise_image(64, 2), {{"kvstudio", "after"}});
      FAIL() << "a PNG larger than the space left was written";
    } catch (const FileError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("file " + path + ": PNG write failed"), std::string::npos) << m;
    }
  }
  // The earlier picture is intact and no temporary file is left beside it.
  EXPECT_TRUE(only_file_is(dir.path(), "picture.png"));
  const PngContents kept = read_png(path);
  EXPECT_EQ(kept.image.pixels, before.pixels);
}

TEST(FileFaults, AFolderThatCannotBeWrittenIsOneClearError) {
  // /proc refuses new files even to root (file permissions would not stop a root test run).
  const std::string path = "/proc/kvstudio-fault-test.png";
  try {
    write_png(path, noise_image(8, 3), {});
    FAIL() << "wrote into /proc";
  } catch (const FileError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("file " + path + ": cannot open for writing ("), std::string::npos) << m;
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  // A folder that does not exist: the same error, with the system's reason.
  test::TempDir dir;
  const std::string missing = dir.file("no-such-folder/picture.png");
  try {
    write_png(missing, noise_image(8, 3), {});
    FAIL() << "wrote into a missing folder";
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find("No such file or directory"), std::string::npos) << e.what();
  }
}

TEST(FileFaults, ACalibrationToAFullDiskKeepsTheOldOne) {
  test::TempDir dir;
  const std::string path = dir.file("heatkv_calibration.json");
  io::write_file_atomic(path, "{\"old\": true}\n");
  {
    FileSizeLimit full(64);
    try {
      io::write_file_atomic(path, std::string(4096, 'x'));
      FAIL() << "a file larger than the space left was written";
    } catch (const FileError& e) {
      EXPECT_NE(std::string(e.what()).find("file " + path + ": write failed"), std::string::npos) << e.what();
    }
  }
  EXPECT_TRUE(only_file_is(dir.path(), "heatkv_calibration.json"));
  EXPECT_EQ(io::read_text_file(path), "{\"old\": true}\n");
}

TEST(FileFaults, AModelFolderThatDisappearsIsAnErrorOfTheNextRun) {
  auto dir = std::make_unique<test::TempDir>();
  llamagen::write_random_llamagen_bundle(dir->path().string(), "vanishing", test::tiny_gqa_gpt(), test::tiny_vq(), 3);
  GenerationRequest r;
  r.model_path = dir->path().string();
  r.class_ids = {1};
  r.device = "cpu";
  r.threads = 1;
  GenerationSession session;
  const GenerationResult first = session.run(r);
  const std::string gone = r.model_path;
  dir.reset();  // the folder is deleted while the model is loaded
  ASSERT_FALSE(std::filesystem::exists(gone));
  const std::string message = test::error_of([&] { session.run(r); });
  EXPECT_NE(message.find(gone), std::string::npos) << message;
  // The session goes on with a model that exists.
  test::TempDir other;
  llamagen::write_random_llamagen_bundle(other.path().string(), "other", test::tiny_gqa_gpt(), test::tiny_vq(), 3);
  r.model_path = other.path().string();
  EXPECT_EQ(session.run(r).tokens, first.tokens);  // same weights seed, same tokens
}

TEST(FileFaults, HostMemoryRunningOutDuringARunIsAClearError) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer reserves the address space a limit would cut";
#else
  test::TempDir dir;
  llamagen::GptConfig gpt = test::tiny_gqa_gpt();
  gpt.block_size = 256;
  llamagen::write_random_llamagen_bundle(dir.path().string(), "hungry", gpt, test::tiny_vq(), 3);
  GenerationRequest r;
  r.model_path = dir.path().string();
  r.device = "cpu";
  r.threads = 1;
  GenerationSession session;
  r.class_ids = {1};
  session.run(r);              // loaded and warmed up before the limit
  r.class_ids.assign(256, 1);  // a batch whose cache and activations need far more than the limit leaves
  std::string message;
  {
    rlimit saved{};
    getrlimit(RLIMIT_AS, &saved);
    rlimit limit = saved;
    limit.rlim_cur = static_cast<rlim_t>(process_virtual_bytes() + (64 << 20));  // 64 MiB more than now
    setrlimit(RLIMIT_AS, &limit);
    message = test::error_of([&] { session.run(r); });
    setrlimit(RLIMIT_AS, &saved);
  }
  EXPECT_EQ(message.rfind("out of host memory", 0), 0u) << message;
  // Memory back: the same session runs.
  r.class_ids = {1};
  EXPECT_NO_THROW(session.run(r));
#endif
}

TEST(FileFaults, WeightsTruncatedUnderALoadedModelDoNotFaultIt) {
  test::TempDir dir;
  llamagen::write_random_llamagen_bundle(dir.path().string(), "shrinking", test::tiny_gqa_gpt(), test::tiny_vq(), 3);
  GenerationRequest r;
  r.model_path = dir.path().string();
  r.class_ids = {2};
  r.device = "cpu";
  r.threads = 1;
  GenerationSession session;
  const GenerationResult before = session.run(r);
  // The weights file is replaced by a shorter one while the model is loaded: a
  // model reading the old file's mapping would die of SIGBUS here.
  const std::string weights = dir.file("weights.safetensors");
  std::filesystem::resize_file(weights, 64);
  std::string message;
  try {
    EXPECT_EQ(session.run(r).tokens, before.tokens);  // the loaded weights are its own
  } catch (const Error& e) {
    message = e.what();  // or the bundle is refused when it is opened again, naming the file
    EXPECT_NE(message.find(weights), std::string::npos) << message;
  }
  std::printf("truncated weights under a loaded model: %s\n",
              message.empty() ? "the run used the loaded weights" : message.c_str());
}
