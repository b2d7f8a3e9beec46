// libFuzzer target for the pickle machine alone (engine/io/pickle_machine), on
// raw pickle bytes rather than inside a zip archive, so that mutations reach
// every opcode. Any input must run to a value or throw kvs::FormatError; the
// machine never calls what a pickle names, never crashes, recurses or hangs.
#include <cstdint>
#include <cstdlib>

#include "engine/core/errors.h"
#include "engine/io/pickle_machine.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    kvs::io::pickle::Unpickler vm(data, size, "fuzz-input");
    const kvs::io::pickle::Value root = vm.load();
    (void)vm.describe(root);
    for (const auto& t : vm.tensors)
      if (t.storage >= vm.storages.size() || t.sizes.size() != t.strides.size()) std::abort();
  } catch (const kvs::FormatError&) {
  }
  return 0;
}
