// libFuzzer target for a bundle's model.json (engine/io/bundle_manifest and the
// ModelBundle fields read from it). Any input must be refused with
// kvs::FormatError or give a manifest whose fields read without an exception.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "engine/core/errors.h"
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
  return 0;
}
