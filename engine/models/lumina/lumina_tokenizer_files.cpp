#include "engine/models/lumina/lumina_tokenizer_files.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "engine/core/errors.h"
#include "engine/models/lumina/image_vocabulary.h"
#include "engine/text/byte_level.h"

namespace kvs::lumina {
namespace {

namespace fs = std::filesystem;

void write_json(const fs::path& path, const nlohmann::json& j) {
  std::ofstream out(path, std::ios::binary);
  out << j.dump(2) << "\n";
  if (!out) throw FileError("cannot write " + path.string());
}

nlohmann::json split(const std::string& regex) {
  return {{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"}, {"invert", false}};
}

std::string reserved_name(int64_t id) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "<reserved%05lld>", static_cast<long long>(id - 4));
  return buffer;
}

}  // namespace

int64_t write_chameleon_byte_tokenizer(const std::string& dir_text) {
  const fs::path dir(dir_text);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw FileError("cannot create tokenizer folder " + dir.string() + ": " + ec.message());
  constexpr int64_t kFirstText = 8832;
  nlohmann::json vocab = nlohmann::json::object();
  nlohmann::json added = nlohmann::json::array();
  auto special = [&](int64_t id, const std::string& name) {
    vocab[name] = id;
    added.push_back({{"id", id},
                     {"content", name},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", true}});
  };
  special(0, "<s>");
  special(1, "<pad>");
  special(2, "</s>");
  special(3, "<unk>");
  for (int64_t code = 0; code < 8192; ++code) vocab[image_name_of_code(code)] = code + 4;
  special(8196, "<eoss>");
  special(8197, "<racm3:break>");
  for (int64_t id = 8198; id < kFirstText; ++id) special(id, id == 8711 ? "<image>" : reserved_name(id));
  for (int b = 0; b < 256; ++b) vocab[text::bytes_to_byte_level(std::string(1, static_cast<char>(b)))] = kFirstText + b;
  const nlohmann::json byte_level = {{"type", "ByteLevel"},
                                     {"add_prefix_space", false},
                                     {"trim_offsets", true},
                                     {"use_regex", true}};
  const nlohmann::json pre_tokenizer = {{"type", "Sequence"},
                                        {"pretokenizers",
                                         {split("<sentinel:[0-9]+>"), split("(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z"),
                                          split("([\\t\\n]|    |  )"), split("\\p{N}"), split("[\\p{P}!-/:-@\\[-`{-~]"),
                                          byte_level}}};
  const nlohmann::json tokenizer = {{"version", "1.0"},
                                    {"truncation", nullptr},
                                    {"padding", nullptr},
                                    {"added_tokens", added},
                                    {"normalizer", nullptr},
                                    {"pre_tokenizer", pre_tokenizer},
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
                                      {"ignore_merges", false},
                                      {"vocab", vocab},
                                      {"merges", nlohmann::json::array()}}}};
  write_json(dir / "tokenizer.json", tokenizer);
  write_json(dir / "tokenizer_config.json", {{"add_bos_token", true},
                                             {"add_eos_token", false},
                                             {"bos_token", "<s>"},
                                             {"eos_token", "</s>"},
                                             {"pad_token", "<pad>"},
                                             {"sep_token", "<reserved08706>"},
                                             {"tokenizer_class", "LlamaTokenizerFast"}});
  write_json(dir / "special_tokens_map.json",
             {{"bos_token", "<s>"}, {"eos_token", "</s>"}, {"pad_token", "<pad>"}, {"sep_token", "<reserved08706>"}});
  return kFirstText + 256;
}

}  // namespace kvs::lumina
