// kvs::text::BpeTokenizer's refusals (every one a typed error naming the file
// and the problem) and the byte-level and UTF-8 pieces under it, on small
// tokenizer folders written here.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/core/errors.h"
#include "engine/text/bpe_tokenizer.h"
#include "engine/text/byte_level.h"
#include "engine/text/utf8.h"

namespace {

namespace fs = std::filesystem;
using kvs::text::BpeTokenizer;

// A tiny valid byte-level BPE: "a", "b", "ab", "Ġ", "Ġab" and two merges.
nlohmann::json tiny_tokenizer() {
  return nlohmann::json::parse(R"({
    "version": "1.0",
    "added_tokens": [{"id": 10, "content": "<s>", "single_word": false, "lstrip": false, "rstrip": false,
                      "normalized": false, "special": true}],
    "normalizer": null,
    "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
      {"type": "Split", "pattern": {"Regex": "\\s?\\p{L}+"}, "behavior": "Isolated", "invert": false},
      {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}]},
    "post_processor": null,
    "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
    "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
              "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
              "vocab": {"a": 0, "b": 1, "ab": 2, "Ġ": 3, "Ġab": 4, "<s>": 10},
              "merges": ["a b", ["Ġ", "ab"]]}
  })");
}

class TokenizerErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("kvs-tokenizer-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write(const std::string& name, const std::string& text) const {
    std::ofstream(dir_ / name, std::ios::binary) << text;
  }
  void write_json(const std::string& name, const nlohmann::json& j) const { write(name, j.dump()); }

  // The message of the error `load` throws, which must be of type E.
  template <class E>
  std::string load_error() const {
    try {
      BpeTokenizer::load(dir_.string());
    } catch (const E& e) {
      return e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "wrong error type: " << e.what();
      return "";
    }
    ADD_FAILURE() << "load succeeded";
    return "";
  }

  fs::path dir_;
};

TEST_F(TokenizerErrors, TheTinyTokenizerLoadsAndEncodes) {
  write_json("tokenizer.json", tiny_tokenizer());
  const BpeTokenizer tok = BpeTokenizer::load(dir_.string());
  EXPECT_EQ(tok.encode("ab ab<s>a"), (std::vector<int64_t>{2, 4, 10, 0}));
  EXPECT_EQ(tok.decode({2, 4, 10, 0}), "ab ab<s>a");
  EXPECT_EQ(tok.decode({2, 4, 10, 0}, true), "ab aba");
  EXPECT_EQ(tok.vocab_size(), 11);
}

TEST_F(TokenizerErrors, AMissingFileIsAFileErrorNamingIt) {
  const std::string msg = load_error<kvs::FileError>();
  EXPECT_NE(msg.find("tokenizer.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not found"), std::string::npos) << msg;
}

TEST_F(TokenizerErrors, CorruptJsonIsAFormatErrorNamingTheFile) {
  write("tokenizer.json", "{\"model\": {\"type\": \"BPE\", ");
  const std::string msg = load_error<kvs::FormatError>();
  EXPECT_NE(msg.find("tokenizer.json: not valid JSON"), std::string::npos) << msg;
}

TEST_F(TokenizerErrors, ACorruptConfigIsAFormatErrorNamingIt) {
  write_json("tokenizer.json", tiny_tokenizer());
  write("tokenizer_config.json", "{\"add_bos_token\": tru");
  const std::string msg = load_error<kvs::FormatError>();
  EXPECT_NE(msg.find("tokenizer_config.json: not valid JSON"), std::string::npos) << msg;
}

TEST_F(TokenizerErrors, AnUnknownPreTokenizerTypeIsRefusedByName) {
  nlohmann::json j = tiny_tokenizer();
  j["pre_tokenizer"]["pretokenizers"][0] = {{"type", "Whitespace"}};
  write_json("tokenizer.json", j);
  const std::string msg = load_error<kvs::FormatError>();
  EXPECT_NE(msg.find("pre_tokenizer type 'Whitespace' is not supported"), std::string::npos) << msg;
  EXPECT_NE(msg.find("tokenizer.json"), std::string::npos) << msg;
}

TEST_F(TokenizerErrors, AnUnknownSplitBehaviorIsRefusedByName) {
  nlohmann::json j = tiny_tokenizer();
  j["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Sideways";
  write_json("tokenizer.json", j);
  EXPECT_NE(load_error<kvs::FormatError>().find("'Sideways'"), std::string::npos);
}

TEST_F(TokenizerErrors, APatternThatDoesNotCompileIsRefused) {
  nlohmann::json j = tiny_tokenizer();
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "[a-";
  write_json("tokenizer.json", j);
  const std::string msg = load_error<kvs::FormatError>();
  EXPECT_NE(msg.find("'[a-' does not compile"), std::string::npos) << msg;
}

TEST_F(TokenizerErrors, AnUnknownNormalizerTypeIsRefusedByName) {
  nlohmann::json j = tiny_tokenizer();
  j["normalizer"] = {{"type", "NFKC"}};
  write_json("tokenizer.json", j);
  EXPECT_NE(load_error<kvs::FormatError>().find("normalizer type 'NFKC' is not supported"), std::string::npos);
}

// Chained Replace steps whose content holds the next step's pattern multiply a
// text from step to step (a fuzzer found a 2 kB file turning every test prompt
// into megabytes). Encoding refuses once the chain outgrows the limit; a
// Llama-style normalizer, which grows text about threefold, encodes long texts.
TEST_F(TokenizerErrors, ANormalizerThatMultipliesTextIsRefusedWhenItEncodes) {
  nlohmann::json j = tiny_tokenizer();
  std::string spaces_inside = "ab";  // 119 bytes, 39 spaces
  for (int i = 0; i < 39; ++i) spaces_inside += " ab";
  const nlohmann::json replace = {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", spaces_inside}};
  j["normalizer"] = {{"type", "Sequence"}, {"normalizers", {replace, replace}}};
  write_json("tokenizer.json", j);
  const BpeTokenizer tok = BpeTokenizer::load(dir_.string());
  EXPECT_EQ(tok.encode("ab", false), (std::vector<int64_t>{2})) << "a text without the pattern is not grown";
  try {
    tok.encode("ab ab ab", false);  // 2 spaces -> 78 spaces -> 78 x 119 bytes: over 64 x 8 + 4096 = 4608
    ADD_FAILURE() << "encode succeeded";
  } catch (const kvs::FormatError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("normalizer Sequence turns a 8-byte text into more than 4608 bytes"), std::string::npos) << msg;
    EXPECT_NE(msg.find("broken or hostile tokenizer file"), std::string::npos) << msg;
  }

  // A chain that grows text a little (a marker, a piece rewritten) encodes long texts.
  j["normalizer"] = {{"type", "Sequence"},
                     {"normalizers",
                      {{{"type", "Prepend"}, {"prepend", " "}},
                       {{"type", "Replace"}, {"pattern", {{"String", "b"}}}, {"content", "ab"}}}}};
  write_json("tokenizer.json", j);
  std::string long_text;
  for (int i = 0; i < 4000; ++i) long_text += "ab ";
  EXPECT_NO_THROW(BpeTokenizer::load(dir_.string()).encode(long_text, false));
}

TEST_F(TokenizerErrors, AnUnknownModelTypeIsRefusedByName) {
  nlohmann::json j = tiny_tokenizer();
  j["model"]["type"] = "WordPiece";
  write_json("tokenizer.json", j);
  EXPECT_NE(load_error<kvs::FormatError>().find("model type 'WordPiece' is not supported"), std::string::npos);
}

TEST_F(TokenizerErrors, AMergeNamingAnUnknownPieceIsRefused) {
  nlohmann::json j = tiny_tokenizer();
  j["model"]["merges"].push_back("a z");
  write_json("tokenizer.json", j);
  const std::string msg = load_error<kvs::FormatError>();
  EXPECT_NE(msg.find("merge 2 'a z' names 'z', which is not in the vocabulary"), std::string::npos) << msg;
}

TEST_F(TokenizerErrors, AMalformedMergeIsRefused) {
  nlohmann::json j = tiny_tokenizer();
  j["model"]["merges"].push_back("abc");
  write_json("tokenizer.json", j);
  EXPECT_NE(load_error<kvs::FormatError>().find("merge 2 'abc' is not two pieces"), std::string::npos);
}

TEST_F(TokenizerErrors, ABosTokenMissingFromTheVocabularyIsRefused) {
  write_json("tokenizer.json", tiny_tokenizer());
  write_json("tokenizer_config.json", nlohmann::json{{"add_bos_token", true}, {"bos_token", "<bos>"}});
  const std::string msg = load_error<kvs::FormatError>();
  EXPECT_NE(msg.find("bos_token '<bos>' is neither in the vocabulary nor an added token"), std::string::npos) << msg;
}

TEST_F(TokenizerErrors, AddBosTokenPrependsTheConfiguredBos) {
  write_json("tokenizer.json", tiny_tokenizer());
  write_json("tokenizer_config.json",
             nlohmann::json{{"add_bos_token", true}, {"bos_token", {{"content", "<s>"}}}, {"model_max_length", 1e30}});
  const BpeTokenizer tok = BpeTokenizer::load(dir_.string());
  EXPECT_EQ(tok.encode("ab"), (std::vector<int64_t>{10, 2}));
  EXPECT_EQ(tok.encode("ab", false), (std::vector<int64_t>{2}));
  EXPECT_EQ(tok.bos_id(), 10);
  EXPECT_FALSE(tok.model_max_length().has_value());  // 1e30 means "no limit"
}

TEST_F(TokenizerErrors, InvalidUtf8InputIsAnInvalidArgumentError) {
  write_json("tokenizer.json", tiny_tokenizer());
  const BpeTokenizer tok = BpeTokenizer::load(dir_.string());
  for (const std::string bad : {"ab\xff", "a\xc3", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\x80"}) {
    try {
      tok.encode(bad);
      ADD_FAILURE() << "accepted invalid UTF-8";
    } catch (const kvs::InvalidArgumentError& e) {
      EXPECT_NE(std::string(e.what()).find("not valid UTF-8"), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(tok.encode("ab\xc3\xa9\xf0\x9f\x98\x80"));
}

TEST_F(TokenizerErrors, UnknownIdsAndTokensAreNamed) {
  write_json("tokenizer.json", tiny_tokenizer());
  const BpeTokenizer tok = BpeTokenizer::load(dir_.string());
  EXPECT_THROW(tok.decode({2, 7}), kvs::InvalidArgumentError);
  EXPECT_THROW(tok.token_text(-1), kvs::InvalidArgumentError);
  try {
    tok.token_id("<nope>");
    ADD_FAILURE() << "found a token that does not exist";
  } catch (const kvs::InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("'<nope>'"), std::string::npos) << e.what();
  }
}

TEST(ByteLevel, EveryByteRoundTripsThroughItsCodePoint) {
  EXPECT_EQ(kvs::text::byte_to_unicode(' '), U'\u0120');   // Ġ
  EXPECT_EQ(kvs::text::byte_to_unicode('\n'), U'\u010A');  // Ċ
  EXPECT_EQ(kvs::text::byte_to_unicode('a'), U'a');
  EXPECT_EQ(kvs::text::byte_to_unicode(0xAD), U'\u0143');
  std::string all;
  for (int b = 0; b < 256; ++b) {
    all += static_cast<char>(b);
    EXPECT_EQ(kvs::text::unicode_to_byte(kvs::text::byte_to_unicode(static_cast<unsigned char>(b))), b);
  }
  EXPECT_EQ(kvs::text::byte_level_to_bytes(kvs::text::bytes_to_byte_level(all)), all);
  EXPECT_FALSE(kvs::text::byte_level_to_bytes("\xef\xbd\x9c").has_value());  // ｜ is no byte
}

TEST(Utf8, LossyDecodingReplacesEachIllFormedPartOnce) {
  using kvs::text::utf8_lossy;
  EXPECT_EQ(utf8_lossy("caf\xc3\xa9"), "caf\xc3\xa9");
  EXPECT_EQ(utf8_lossy("a\xf0\x9f\x98"), "a\xef\xbf\xbd");                        // a truncated emoji: one U+FFFD
  EXPECT_EQ(utf8_lossy("\xff\xfe"), "\xef\xbf\xbd\xef\xbf\xbd");                  // two bad bytes: two
  EXPECT_EQ(utf8_lossy("\xed\xa0\x80"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");  // a surrogate: one per byte
  EXPECT_EQ(kvs::text::first_invalid_utf8("ok\xe2\x82"), 2u);
  EXPECT_FALSE(kvs::text::first_invalid_utf8("ok \xe2\x82\xac").has_value());
}

}  // namespace
