// libFuzzer target for a Hugging Face tokenizer folder (engine/text): the input
// up to its first NUL byte is tokenizer.json, the rest (when there is a NUL)
// tokenizer_config.json. They are written to a scratch folder and loaded as
// BpeTokenizer::load reads any folder; a tokenizer that loads then encodes and
// decodes a few texts (scripts, digits, spaces, added-token look-alikes). Loading
// may only throw kvs::FormatError; a loaded tokenizer must encode valid UTF-8
// (or refuse with FormatError, when its normalizer would grow the text past
// normalized_size_limit) and decode its own ids without any exception.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/errors.h"
#include "engine/text/bpe_tokenizer.h"

namespace {

const std::string& scratch_dir() {
  static const std::string dir = [] {
    const std::filesystem::path base = std::filesystem::exists("/dev/shm") ? "/dev/shm" : "/tmp";
    const auto path = base / ("kvs-tokenizer-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(path);
    return path.string();
  }();
  return dir;
}

void write(const std::string& name, const std::string& bytes) {
  std::ofstream out(scratch_dir() + "/" + name, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const auto nul = input.find('\0');
  write("tokenizer.json", input.substr(0, nul));
  if (nul == std::string::npos) {
    std::filesystem::remove(scratch_dir() + "/tokenizer_config.json");
  } else {
    write("tokenizer_config.json", input.substr(nul + 1));
  }
  std::optional<kvs::text::BpeTokenizer> tokenizer;
  try {
    tokenizer.emplace(kvs::text::BpeTokenizer::load(scratch_dir()));
  } catch (const kvs::FormatError&) {
    return 0;
  }
  static const char* const kTexts[] = {
      "Hello world 123 4567",
      "  two  spaces\n\nand lines\t",
      "<|User|>: a fox<begin_of_image>",
      "ÄÖü ελληνικά кот",
      "日本語の文 한국어",
      "🙂👍🏽 🇩🇪",
      "",
      "a",
  };
  for (const char* text : kTexts) {
    for (const bool special : {false, true}) {
      std::vector<int64_t> ids;
      try {
        ids = tokenizer->encode(text, special);
      } catch (const kvs::FormatError&) {
        // The file's normalizer grows the text past its limit (normalizer.h):
        // refused by name, which is what a hostile file must get.
        continue;
      }
      (void)tokenizer->decode(ids, false);
      (void)tokenizer->decode(ids, true);
      for (const int64_t id : ids) (void)tokenizer->token_text(id);
    }
  }
  (void)tokenizer->vocab_size();
  return 0;
}
