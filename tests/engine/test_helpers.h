#pragma once
// Shared helpers for engine tests: temporary folders and small random models.
#include <filesystem>
#include <string>

#include "engine/models/llamagen/llamagen_config.h"

namespace kvs::test {

// A fresh empty folder under the system temp dir, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// A tiny grouped-query configuration (4 query heads, 2 kv heads, 4x4 tokens).
llamagen::GptConfig tiny_gqa_gpt();
llamagen::VqConfig tiny_vq();

std::string conformance_dir();  // ../shared/conformance beside the checkout
void write_bytes(const std::string& path, const std::string& bytes);
std::string read_bytes(const std::string& path);

}  // namespace kvs::test
