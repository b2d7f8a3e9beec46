// What KV Studio writes when the disk says no: a PNG or a calibration saved to
// a full disk (the process's file-size limit stands in for it: writes past it
// fail with EFBIG) or to a place that cannot be written. Each is a FileError
// naming the file and the reason, leaves no partial or temporary file behind,
// and never harms the file already there.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <csignal>
#include <filesystem>
#include <random>
#include <string>

#include "engine/core/errors.h"
#include "engine/image/png_file.h"
#include "engine/io/mapped_file.h"
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
