// libFuzzer target for a bundle's model.json (engine/io/bundle_manifest and the
// ModelBundle fields read from it). Any input must be refused with
// kvs::FormatError or give a manifest whose fields read without an exception,
// and whose files all resolve inside the bundle folder or the shared folder.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "engine/core/errors.h"
#include "engine/io/bundle_file_path.h"
#include "engine/io/bundle_manifest.h"
#include "engine/io/model_bundle.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  kvs::io::ModelBundle bundle;
  try {
    bundle.manifest = kvs::io::parse_bundle_manifest(text, "fuzz/model.json");
  } catch (const kvs::FormatError&) {
    return 0;
  }
  bundle.dir = "/bundle";
  (void)bundle.name();
  (void)bundle.family();
  if (bundle.weights_path().rfind("/bundle/", 0) != 0) std::abort();
  (void)bundle.class_names();
  // Every file the manifest names is inside the bundle folder or one file of
  // the shared folder beside it (here /shared/, which has no files: FileError).
  for (const auto& [key, value] : bundle.manifest.at("files").items()) {
    try {
      const std::string path = kvs::io::bundle_file_path(bundle, key).value();
      const bool shared = path.rfind("/shared/", 0) == 0 && path.find('/', 8) == std::string::npos;
      if (path.rfind("/bundle/", 0) != 0 && !shared) std::abort();
    } catch (const kvs::FileError&) {
      if (!value.is_object()) std::abort();
    }
  }
  return 0;
}
