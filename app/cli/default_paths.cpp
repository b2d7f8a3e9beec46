#include "app/cli/default_paths.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace kvs::cli {
namespace fs = std::filesystem;

namespace {

std::string bundled_model_path(const char* env_name, const std::string& name) {
  if (const char* env = std::getenv(env_name); env && *env) return env;
  const std::string relative = "models/" + name;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path installed = exe.parent_path().parent_path() / "share/kvstudio/resources" / relative;
    if (fs::exists(installed / "model.json", ec)) return installed.string();
  }
  return (fs::path(KVSTUDIO_SOURCE_RESOURCES) / relative).string();
}

}  // namespace

std::string default_model_path() { return bundled_model_path("KVSTUDIO_DEFAULT_MODEL", "llamagen-demo"); }

std::string default_text_model_path() { return bundled_model_path("KVSTUDIO_DEFAULT_TEXT_MODEL", "janus-pro-demo"); }

}  // namespace kvs::cli
