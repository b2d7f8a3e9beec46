// libFuzzer target for bench's prompt files (engine/bench/bench_prompt_file).
// Any input must give prompts whose classes are known, or be refused with
// kvs::InvalidArgumentError naming the file.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/bench/bench_prompt_file.h"
#include "engine/core/errors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<std::string> classes = {"forest", "desert", "sunset_sea", "night_sky", "city"};
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    for (const auto& p : kvs::parse_prompt_file(text, "fuzz.txt", classes))
      if (p.class_id && (*p.class_id < 0 || *p.class_id >= static_cast<int64_t>(classes.size()))) std::abort();
  } catch (const kvs::InvalidArgumentError& e) {
    if (std::string(e.what()).find("prompt file fuzz.txt") == std::string::npos) std::abort();
  }
  return 0;
}
