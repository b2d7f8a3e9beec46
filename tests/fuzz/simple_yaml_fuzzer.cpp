// libFuzzer target for the YAML subset reader (engine/io/simple_yaml: Chameleon's
// vqgan.yaml, read by the Lumina-mGPT converter). Any input must be refused with
// kvs::FormatError or give a mapping or a sequence that serialises; no other
// exception, crash, leak or undefined behaviour.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "engine/core/errors.h"
#include "engine/io/simple_yaml.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  nlohmann::json j;
  try {
    j = kvs::io::parse_simple_yaml(text, "fuzz/vqgan.yaml");
  } catch (const kvs::FormatError&) {
    return 0;
  }
  if (!j.is_object() && !j.is_array()) std::abort();
  (void)j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return 0;
}
