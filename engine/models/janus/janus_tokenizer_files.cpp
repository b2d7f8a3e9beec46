#include "engine/models/janus/janus_tokenizer_files.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "engine/core/errors.h"

namespace kvs::janus {
namespace {

// GPT-2's byte -> printable code point table (bytes that are printable Latin-1
// map to themselves, the rest to 256 + n in order), as UTF-8.
std::string byte_symbol(int byte) {
  auto printable = [](int b) { return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255); };
  int code = byte;
  if (!printable(byte)) {
    int n = 0;
    for (int b = 0; b < byte; ++b)
      if (!printable(b)) ++n;
    code = 256 + n;
  }
  std::string out;
  if (code < 0x80) {
    out += static_cast<char>(code);
  } else {
    out += static_cast<char>(0xC0 | (code >> 6));
    out += static_cast<char>(0x80 | (code & 0x3F));
  }
  return out;
}

void write_json(const std::filesystem::path& path, const nlohmann::json& j) {
  std::ofstream out(path);
  if (!out) throw FileError("cannot write " + path.string());
  out << j.dump(2) << "\n";
  if (!out) throw FileError("cannot write " + path.string());
}

}  // namespace

std::vector<std::string> janus_special_tokens() {
  return {"<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<|User|>",      "<|Assistant|>", "<｜▁pad▁｜>",
          "<image_placeholder>",     "<begin_of_image>",      "<end_of_image>"};
}

int64_t write_byte_level_tokenizer(const std::string& dir_text) {
  const std::filesystem::path dir(dir_text);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw FileError("cannot create " + dir.string() + ": " + ec.message());
  nlohmann::json vocab = nlohmann::json::object();
  for (int b = 0; b < 256; ++b) vocab[byte_symbol(b)] = b;
  nlohmann::json added = nlohmann::json::array();
  const auto specials = janus_special_tokens();
  for (size_t i = 0; i < specials.size(); ++i)
    added.push_back({{"id", 256 + static_cast<int64_t>(i)},
                     {"content", specials[i]},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", true}});
  const nlohmann::json byte_level = {{"type", "ByteLevel"},
                                     {"add_prefix_space", false},
                                     {"trim_offsets", true},
                                     {"use_regex", true}};
  nlohmann::json tokenizer = {{"version", "1.0"},
                              {"truncation", nullptr},
                              {"padding", nullptr},
                              {"added_tokens", added},
                              {"normalizer", nullptr},
                              {"pre_tokenizer", byte_level},
                              {"post_processor", nullptr},
                              {"decoder", byte_level},
                              {"model",
                               {{"type", "BPE"},
                                {"dropout", nullptr},
                                {"unk_token", nullptr},
                                {"continuing_subword_prefix", nullptr},
                                {"end_of_word_suffix", nullptr},
                                {"fuse_unk", false},
                                {"byte_fallback", false},
                                {"vocab", vocab},
                                {"merges", nlohmann::json::array()}}}};
  write_json(dir / "tokenizer.json", tokenizer);
  write_json(dir / "tokenizer_config.json", {{"add_bos_token", true},
                                             {"add_eos_token", false},
                                             {"bos_token", specials[0]},
                                             {"eos_token", specials[1]},
                                             {"pad_token", specials[4]},
                                             {"model_max_length", 16384},
                                             {"tokenizer_class", "LlamaTokenizerFast"}});
  write_json(dir / "special_tokens_map.json",
             {{"bos_token", specials[0]}, {"eos_token", specials[1]}, {"pad_token", specials[4]}});
  return 256 + static_cast<int64_t>(specials.size());
}

}  // namespace kvs::janus
