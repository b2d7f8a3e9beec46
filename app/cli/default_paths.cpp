#include "app/cli/default_paths.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace kvs::cli {
namespace fs = std::filesystem;

std::string default_model_path() {
  if (const char* env = std::getenv("KVSTUDIO_DEFAULT_MODEL"); env && *env) return env;
  const std::string relative = "models/llamagen-demo";
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path installed = exe.parent_path().parent_path() / "share/kvstudio/resources" / relative;
    if (fs::exists(installed / "model.json", ec)) return installed.string();
  }
  return (fs::path(KVSTUDIO_SOURCE_RESOURCES) / relative).string();
}

}  // namespace kvs::cli
