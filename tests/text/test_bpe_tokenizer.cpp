// kvs::text::BpeTokenizer against the Hugging Face `tokenizers` library: the
// fixture step (tests/data/make_tokenizer_fixture.py, ctest make_tokenizer_fixture)
// trains a small byte-level BPE with DeepSeek-LLM's pre-tokenizer and Janus's
// added tokens, writes variants of it, and records the library's ids, decoded
// texts and token texts for prompts in many scripts. Every value here is the
// library's, never one written by hand.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/text/bpe_tokenizer.h"

namespace {

namespace fs = std::filesystem;
using kvs::text::BpeTokenizer;

// The fixture folder, or the reason it is not there (empty when it is).
std::string fixture_dir(std::string* skip_reason) {
  const char* dir = std::getenv("KVSTUDIO_TOKENIZER_FIXTURE_DIR");
  if (!dir) {
    *skip_reason = "KVSTUDIO_TOKENIZER_FIXTURE_DIR is not set: run through ctest, which makes the fixture first";
    return "";
  }
  const fs::path skip = fs::path(dir) / "SKIP";
  if (fs::exists(skip)) {
    std::ifstream in(skip);
    std::getline(in, *skip_reason);
    return "";
  }
  return dir;
}

nlohmann::json read_expected(const std::string& dir) {
  std::ifstream in(fs::path(dir) / "expected.json");
  return nlohmann::json::parse(in);
}

std::string printable(const std::string& text) {
  std::ostringstream out;
  for (const unsigned char c : text) {
    if (c < 0x20) {
      out << "\\x" << std::hex << static_cast<int>(c) << std::dec;
    } else {
      out << c;
    }
  }
  return out.str();
}

class TokenizerFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string reason;
    dir_ = fixture_dir(&reason);
    if (dir_.empty()) GTEST_SKIP() << reason;
    expected_ = read_expected(dir_);
  }
  std::string dir_;
  nlohmann::json expected_;
};

TEST_F(TokenizerFixture, EncodesLikeHuggingFaceTokenizersInEveryVariant) {
  ASSERT_GE(expected_["variants"].size(), 6u);
  for (const auto& variant : expected_["variants"]) {
    const std::string name = variant["name"];
    const BpeTokenizer tok = BpeTokenizer::load((fs::path(dir_) / name).string());
    for (const auto& c : variant["cases"]) {
      const std::string text = c["text"];
      const bool add_special = c["add_special_tokens"];
      EXPECT_EQ(tok.encode(text, add_special), c["ids"].get<std::vector<int64_t>>())
          << name << ": '" << printable(text) << "' add_special_tokens=" << add_special;
    }
  }
}

TEST_F(TokenizerFixture, DecodesLikeHuggingFaceTokenizers) {
  for (const auto& variant : expected_["variants"]) {
    const std::string name = variant["name"];
    const BpeTokenizer tok = BpeTokenizer::load((fs::path(dir_) / name).string());
    for (const auto& c : variant["cases"]) {
      const auto ids = c["ids"].get<std::vector<int64_t>>();
      const std::string where = name + ": '" + printable(c["text"]) + "'";
      EXPECT_EQ(tok.decode(ids), c["decoded"].get<std::string>()) << where;
      EXPECT_EQ(tok.decode(ids, true), c["decoded_skipping_special"].get<std::string>()) << where;
      const auto texts = c["token_texts"].get<std::vector<std::string>>();
      for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(tok.token_text(ids[i]), texts[i]) << where << " token " << i;
    }
  }
}

TEST_F(TokenizerFixture, DecodeRoundTripsEveryPromptWithoutSpecialTokens) {
  const BpeTokenizer tok = BpeTokenizer::load((fs::path(dir_) / "deepseek").string());
  for (const auto& c : expected_["variants"][0]["cases"]) {
    const std::string text = c["text"];
    EXPECT_EQ(tok.decode(tok.encode(text, false)), text) << printable(text);
  }
}

TEST_F(TokenizerFixture, JanusTokensAndConfigurationComeFromTheFiles) {
  const BpeTokenizer tok = BpeTokenizer::load((fs::path(dir_) / "deepseek").string());
  const auto& tokens = expected_["variants"][0]["tokens"];
  EXPECT_EQ(tok.bos_id(), tokens["<｜begin▁of▁sentence｜>"].get<int64_t>());
  EXPECT_EQ(tok.bos_id(), 100000);
  EXPECT_EQ(tok.eos_id(), tokens["<｜end▁of▁sentence｜>"].get<int64_t>());
  // pad_token is null in tokenizer_config.json and set in special_tokens_map.json.
  EXPECT_EQ(tok.pad_id(), tokens["<｜▁pad▁｜>"].get<int64_t>());
  EXPECT_EQ(tok.token_id("<begin_of_image>"), tokens["<begin_of_image>"].get<int64_t>());
  EXPECT_EQ(tok.token_id("Ġcat"), tokens["Ġcat"].get<int64_t>());
  EXPECT_EQ(tok.token_text(tok.token_id("Ġcat")), " cat");
  EXPECT_FALSE(tok.find_token("<no such token>").has_value());
  EXPECT_EQ(tok.vocab_size(), 100594);  // <end_of_image> is 100593
  EXPECT_EQ(tok.model_max_length(), 16384);
  // The template variant has no tokenizer_config.json: no BOS/EOS names, BOS
  // from the post-processor.
  const BpeTokenizer bare = BpeTokenizer::load((fs::path(dir_) / "deepseek_pairs").string());
  EXPECT_FALSE(bare.bos_id().has_value());
  EXPECT_FALSE(bare.model_max_length().has_value());
  EXPECT_EQ(bare.encode("a cat").front(), 100000);
}

TEST_F(TokenizerFixture, ConcurrentEncodesGiveTheSameIds) {
  const BpeTokenizer tok = BpeTokenizer::load((fs::path(dir_) / "deepseek").string());
  const auto& cases = expected_["variants"][0]["cases"];
  std::vector<int> failures(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 20; ++round) {
        for (const auto& c : cases) {
          if (tok.encode(c["text"].get<std::string>(), c["add_special_tokens"].get<bool>()) !=
              c["ids"].get<std::vector<int64_t>>()) {
            ++failures[t];
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
}

}  // namespace
