#pragma once
// Shared helpers for engine tests: temporary folders and small random models.
#include <filesystem>
#include <functional>
#include <string>

#include "engine/cache/policies/cache_policy.h"
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

// A one-layer policy context on a grid x grid token grid with head_dim 4 (for
// hand-built caches); rows counts both halves of CFG pairs when cfg is set.
PolicyContext small_policy_context(int64_t grid, int64_t rows = 1, bool cfg = false, int64_t n_head = 1,
                                   int64_t kv_heads = 1);
// The InvalidArgumentError message make_policy(spec, context) throws, or "no error".
std::string policy_error(const std::string& spec, const PolicyContext& context);

// The message of the kvs::Error `f` throws, or "no error".
std::string error_of(const std::function<void()>& f);

std::string conformance_dir();  // KVSTUDIO_CONFORMANCE_DIR (docs/conformance.md)
// Why a test that needs the conformance data cannot run ("" when it can): the
// data is not in the repository, and a clone without it skips those tests.
std::string conformance_skip_reason();
// The same for a test that also needs a folder a ctest fixture step writes
// from that data and names in the environment `variable` (`dir`: its value).
std::string fixture_skip_reason(const std::string& dir, const char* variable);
void write_bytes(const std::string& path, const std::string& bytes);
std::string read_bytes(const std::string& path);

}  // namespace kvs::test
