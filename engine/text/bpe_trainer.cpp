#include "engine/text/bpe_trainer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <tuple>

#include "engine/core/errors.h"
#include "engine/text/byte_level.h"
#include "engine/text/pre_tokenizer.h"
#include "engine/text/utf8.h"

namespace kvs::text {
namespace {

// The pre-tokenizer (and decoder) node the written tokenizer.json declares; the
// trainer cuts its corpus with the same node so training and encoding agree.
nlohmann::json byte_level_node() {
  return {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
}

// A byte-level piece cut into its code points (each one byte symbol).
std::vector<std::string> symbols_of(const std::string& piece) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < piece.size()) {
    const auto c = static_cast<unsigned char>(piece[i]);
    const size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : 4;
    out.push_back(piece.substr(i, len));
    i += len;
  }
  return out;
}

struct Word {
  std::vector<std::string> symbols;
  int64_t count = 0;
};

using Pair = std::pair<std::string, std::string>;

void write_json(const std::filesystem::path& path, const nlohmann::json& j) {
  std::ofstream out(path);
  if (!out) throw FileError("cannot write " + path.string());
  out << j.dump(2) << "\n";
  if (!out) throw FileError("cannot write " + path.string());
}

}  // namespace

TrainedBpe train_byte_level_bpe(const std::vector<std::string>& corpus, const BpeTrainingOptions& options) {
  if (options.vocab_size < 256)
    throw InvalidArgumentError("BPE vocabulary size " + std::to_string(options.vocab_size) +
                               " is smaller than the 256 byte symbols");
  if (options.min_frequency < 1) throw InvalidArgumentError("BPE min_frequency must be at least 1");
  const PreTokenizer pre = PreTokenizer::from_json(byte_level_node(), "BPE trainer");

  TrainedBpe out;
  std::map<std::string, int64_t> word_counts;
  for (const std::string& text : corpus) {
    require_valid_utf8(text, "BPE training text");
    for (const std::string& piece : pre.split(text)) {
      ++word_counts[piece];
      ++out.words;
    }
  }
  out.distinct_words = static_cast<int64_t>(word_counts.size());
  std::vector<Word> words;
  words.reserve(word_counts.size());
  for (const auto& [piece, count] : word_counts) words.push_back({symbols_of(piece), count});

  for (int b = 0; b < 256; ++b) out.vocab.push_back(bytes_to_byte_level(std::string(1, static_cast<char>(b))));
  std::set<std::string> known(out.vocab.begin(), out.vocab.end());

  while (static_cast<int64_t>(out.vocab.size()) < options.vocab_size) {
    std::map<Pair, int64_t> pair_counts;
    for (const Word& w : words)
      for (size_t i = 0; i + 1 < w.symbols.size(); ++i) pair_counts[{w.symbols[i], w.symbols[i + 1]}] += w.count;
    // Most frequent first; ties by the merged piece, then the left piece.
    const Pair* best = nullptr;
    int64_t best_count = 0;
    std::string best_merged;
    for (const auto& [pair, count] : pair_counts) {
      if (count < options.min_frequency) continue;
      const std::string merged = pair.first + pair.second;
      if (known.count(merged)) continue;  // already a piece: merging it again adds nothing
      if (!best || count > best_count ||
          (count == best_count && std::tie(merged, pair.first) < std::tie(best_merged, best->first))) {
        best = &pair;
        best_count = count;
        best_merged = merged;
      }
    }
    if (!best) break;
    const Pair merge = *best;
    out.merges.push_back(merge);
    out.vocab.push_back(best_merged);
    known.insert(best_merged);
    for (Word& w : words) {
      std::vector<std::string> merged_symbols;
      merged_symbols.reserve(w.symbols.size());
      for (size_t i = 0; i < w.symbols.size(); ++i) {
        if (i + 1 < w.symbols.size() && w.symbols[i] == merge.first && w.symbols[i + 1] == merge.second) {
          merged_symbols.push_back(best_merged);
          ++i;
        } else {
          merged_symbols.push_back(w.symbols[i]);
        }
      }
      w.symbols.swap(merged_symbols);
    }
  }
  return out;
}

int64_t write_bpe_tokenizer_files(const std::string& dir_text, const TrainedBpe& bpe,
                                  const TokenizerFileOptions& options) {
  for (const std::string* named : {&options.bos_token, &options.eos_token, &options.pad_token})
    if (!named->empty() &&
        std::find(options.special_tokens.begin(), options.special_tokens.end(), *named) == options.special_tokens.end())
      throw InvalidArgumentError("tokenizer files: '" + *named + "' is not one of the special tokens");
  const std::filesystem::path dir(dir_text);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw FileError("cannot create " + dir.string() + ": " + ec.message());

  nlohmann::json vocab = nlohmann::json::object();
  for (size_t i = 0; i < bpe.vocab.size(); ++i) vocab[bpe.vocab[i]] = static_cast<int64_t>(i);
  nlohmann::json merges = nlohmann::json::array();
  // "a b" strings, which every `tokenizers` version reads (byte-level pieces
  // never hold a space: it is spelled "Ġ").
  for (const auto& [left, right] : bpe.merges) merges.push_back(left + " " + right);
  nlohmann::json added = nlohmann::json::array();
  const int64_t first_special = static_cast<int64_t>(bpe.vocab.size());
  for (size_t i = 0; i < options.special_tokens.size(); ++i)
    added.push_back({{"id", first_special + static_cast<int64_t>(i)},
                     {"content", options.special_tokens[i]},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", true}});
  const nlohmann::json tokenizer = {{"version", "1.0"},
                                    {"truncation", nullptr},
                                    {"padding", nullptr},
                                    {"added_tokens", added},
                                    {"normalizer", nullptr},
                                    {"pre_tokenizer", byte_level_node()},
                                    {"post_processor", nullptr},
                                    {"decoder", byte_level_node()},
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
                                      {"merges", merges}}}};
  write_json(dir / "tokenizer.json", tokenizer);

  nlohmann::json config = {{"add_bos_token", options.add_bos_token},
                           {"add_eos_token", false},
                           {"tokenizer_class", "LlamaTokenizerFast"}};
  nlohmann::json special_map = nlohmann::json::object();
  const std::pair<const char*, const std::string*> named[] = {{"bos_token", &options.bos_token},
                                                              {"eos_token", &options.eos_token},
                                                              {"pad_token", &options.pad_token}};
  for (const auto& [key, value] : named)
    if (!value->empty()) {
      config[key] = *value;
      special_map[key] = *value;
    }
  if (options.model_max_length > 0) config["model_max_length"] = options.model_max_length;
  write_json(dir / "tokenizer_config.json", config);
  write_json(dir / "special_tokens_map.json", special_map);
  return first_special + static_cast<int64_t>(options.special_tokens.size());
}

}  // namespace kvs::text
