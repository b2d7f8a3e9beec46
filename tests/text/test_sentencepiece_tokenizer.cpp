// kvs::text::SentencePieceTokenizer without the conformance data: a small
// unigram model trained here the way T5's was set up (train_t5_sentencepiece)
// gives T5's special ids, the nmt_nfkc normalisation (ligatures, runs of
// spaces, tabs and newlines), </s> after every text and encode_prompt's
// truncation; pieces spell the text back with their word markers; model files
// and bytes that are not SentencePiece models are refused by name. The exact
// ids of the official T5TokenizerFast are checked on the conformance cases
// (tests/engine/test_t5_encoder.cpp).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine/core/errors.h"
#include "engine/text/sentencepiece_tokenizer.h"
#include "engine/text/sentencepiece_trainer.h"

namespace {

namespace fs = std::filesystem;
using kvs::text::SentencePieceTokenizer;

const std::string& model_bytes() {
  static const std::string bytes = kvs::text::train_t5_sentencepiece(kvs::text::caption_corpus(), 200);
  return bytes;
}

const SentencePieceTokenizer& tokenizer() {
  static const SentencePieceTokenizer t = SentencePieceTokenizer::from_bytes(model_bytes());
  return t;
}

std::string message_of(void (*f)()) {
  try {
    f();
  } catch (const kvs::Error& e) {
    return e.what();
  }
  return "no error";
}

// A folder under the temp dir for one test, removed afterwards.
struct ScratchDir {
  fs::path path = fs::temp_directory_path() / ("kvs-spm-" + std::to_string(::getpid()));
  ScratchDir() { fs::create_directories(path); }
  ~ScratchDir() { fs::remove_all(path); }
};

}  // namespace

TEST(SentencePieceTokenizer, SpecialIdsAreT5s) {
  EXPECT_EQ(tokenizer().piece(0), "<pad>");
  EXPECT_EQ(tokenizer().piece(1), "</s>");
  EXPECT_EQ(tokenizer().piece(2), "<unk>");
  EXPECT_EQ(tokenizer().piece(-1), "");
  EXPECT_EQ(tokenizer().piece(tokenizer().vocab_size()), "");
  EXPECT_GT(tokenizer().vocab_size(), 50);
  EXPECT_LE(tokenizer().vocab_size(), 200);
  // The empty prompt is </s> alone; every text ends with it.
  EXPECT_EQ(tokenizer().encode_t5(""), (std::vector<int64_t>{1}));
  const std::vector<int64_t> ids = tokenizer().encode_t5("a red fox in the snow");
  ASSERT_GE(ids.size(), 2u);
  EXPECT_EQ(ids.back(), SentencePieceTokenizer::kEndOfText);
  for (size_t i = 0; i + 1 < ids.size(); ++i) EXPECT_GT(ids[i], 1) << i;
}

TEST(SentencePieceTokenizer, PiecesSpellTheTextWithWordMarkers) {
  const std::vector<int64_t> ids = tokenizer().encode_t5("a cat sleeping on a blue sofa");
  std::string spelled;
  for (size_t i = 0; i + 1 < ids.size(); ++i) spelled += tokenizer().piece(ids[i]);
  const std::string mark = "\xE2\x96\x81";  // U+2581, SentencePiece's word marker
  EXPECT_EQ(spelled,
            mark + "a" + mark + "cat" + mark + "sleeping" + mark + "on" + mark + "a" + mark + "blue" + mark + "sofa");
}

TEST(SentencePieceTokenizer, NfkcAndWhitespaceAreNormalised) {
  const SentencePieceTokenizer& t = tokenizer();
  // Ligatures fold (NFKC), runs of spaces, tabs and newlines collapse, and the
  // ends are trimmed (nmt_nfkc with the dummy prefix).
  EXPECT_EQ(t.encode_t5("\xEF\xAC\x81ne fruit"), t.encode_t5("fine fruit"));  // U+FB01 "fi"
  EXPECT_EQ(t.encode_t5("  a   red\tcar\non a road  "), t.encode_t5("a red car on a road"));
  // A character the model never saw is one unk.
  const std::vector<int64_t> cjk = t.encode_t5("\xE6\x97\xA5");  // U+65E5
  ASSERT_FALSE(cjk.empty());
  EXPECT_EQ(cjk.back(), 1);
  EXPECT_NE(std::find(cjk.begin(), cjk.end(), 2), cjk.end());
}

TEST(SentencePieceTokenizer, LongTextsKeepTheirFirstIdsAndTheEndOfText) {
  std::string text;
  for (int i = 0; i < 200; ++i) text += "a small house by the lake ";
  const std::vector<int64_t> all = tokenizer().encode_t5(text, 100000);
  ASSERT_GT(all.size(), 512u);
  const std::vector<int64_t> kept = tokenizer().encode_t5(text);  // encode_prompt's max_length 512
  ASSERT_EQ(kept.size(), 512u);
  EXPECT_EQ(kept.back(), 1);
  EXPECT_EQ(std::vector<int64_t>(kept.begin(), kept.end() - 1), std::vector<int64_t>(all.begin(), all.begin() + 511));
  EXPECT_EQ(tokenizer().encode_t5(text, 1), (std::vector<int64_t>{1}));
  EXPECT_EQ(tokenizer().encode_t5("a red car", 512), tokenizer().encode_t5("a red car", 100000));
}

TEST(SentencePieceTokenizer, TheSameSentencesTrainTheSameModel) {
  EXPECT_EQ(kvs::text::train_t5_sentencepiece(kvs::text::caption_corpus(), 200), model_bytes());
}

TEST(SentencePieceTokenizer, AModelFileLoadsLikeItsBytes) {
  const ScratchDir dir;
  const std::string path = (dir.path / "spiece.model").string();
  {
    std::ofstream out(path, std::ios::binary);
    out << model_bytes();
  }
  SentencePieceTokenizer from_file(path);
  EXPECT_EQ(from_file.vocab_size(), tokenizer().vocab_size());
  EXPECT_EQ(from_file.encode_t5("two dogs playing in the snow"), tokenizer().encode_t5("two dogs playing in the snow"));
  // Moved, it still works.
  SentencePieceTokenizer moved = std::move(from_file);
  EXPECT_EQ(moved.encode_t5("two dogs"), tokenizer().encode_t5("two dogs"));
}

TEST(SentencePieceTokenizer, MissingAndCorruptModelsAreRefusedByName) {
  const ScratchDir dir;
  const std::string missing = (dir.path / "absent" / "spiece.model").string();
  try {
    SentencePieceTokenizer{missing};
    ADD_FAILURE() << "a missing model loaded";
  } catch (const kvs::FileError& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
  }
  const std::string corrupt = (dir.path / "spiece.model").string();
  {
    std::ofstream out(corrupt, std::ios::binary);
    out << model_bytes().substr(0, model_bytes().size() / 3);  // a file cut short
  }
  try {
    SentencePieceTokenizer{corrupt};
    ADD_FAILURE() << "a truncated model loaded";
  } catch (const kvs::FormatError& e) {
    EXPECT_NE(std::string(e.what()).find(corrupt), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not a SentencePiece model"), std::string::npos) << e.what();
  }
  EXPECT_NE(message_of([] {
              SentencePieceTokenizer::from_bytes("", "the bundle's spiece.model");
            }).find("the bundle's spiece.model"),
            std::string::npos);
}
