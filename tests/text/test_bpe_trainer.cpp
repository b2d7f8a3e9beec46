// The byte-level BPE trainer: what it learns from a corpus, and that the folder
// it writes loads in BpeTokenizer and encodes any text (seen or not) losslessly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/errors.h"
#include "engine/text/bpe_tokenizer.h"
#include "engine/text/bpe_trainer.h"

namespace {

namespace fs = std::filesystem;
using kvs::text::BpeTokenizer;
using kvs::text::BpeTrainingOptions;
using kvs::text::TokenizerFileOptions;
using kvs::text::train_byte_level_bpe;
using kvs::text::TrainedBpe;

std::vector<std::string> corpus() {
  std::vector<std::string> c;
  for (int i = 0; i < 20; ++i) {
    c.push_back("a red sunset over the sea, the sun low on the left");
    c.push_back("a dark forest at night with a full moon on the right");
    c.push_back("the sea at sunset with shades of red");
  }
  return c;
}

TokenizerFileOptions file_options() {
  TokenizerFileOptions o;
  o.special_tokens = {"<bos>", "<eos>", "<pad>", "<begin_of_image>"};
  o.bos_token = "<bos>";
  o.eos_token = "<eos>";
  o.pad_token = "<pad>";
  return o;
}

fs::path temp_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("kvs_bpe_trainer_" + name);
  fs::remove_all(d);
  return d;
}

TEST(BpeTrainer, LearnsWholeFrequentWordsWithinTheVocabulary) {
  const TrainedBpe bpe = train_byte_level_bpe(corpus(), {400, 2});
  ASSERT_GE(bpe.vocab.size(), 256u + 20u);
  EXPECT_LE(bpe.vocab.size(), 400u);
  EXPECT_EQ(bpe.vocab.size(), 256 + bpe.merges.size());
  // As pre-tokenized: "a", "Ġred", ..., ",", and "the" opening a sentence apart from "Ġthe".
  EXPECT_EQ(bpe.distinct_words, 23);
  // The first 256 pieces are the byte symbols in byte order.
  EXPECT_EQ(bpe.vocab[static_cast<size_t>('a')], "a");
  EXPECT_EQ(bpe.vocab[32], "Ġ");
  // Every word of the corpus is one piece in the end (each occurs >= 20 times).
  for (const std::string word : {"Ġsunset", "Ġforest", "Ġmoon", "Ġshades"})
    EXPECT_NE(std::find(bpe.vocab.begin(), bpe.vocab.end(), word), bpe.vocab.end()) << word;
  // Merges only ever join pieces that exist before them.
  std::vector<std::string> known(bpe.vocab.begin(), bpe.vocab.begin() + 256);
  for (const auto& [l, r] : bpe.merges) {
    EXPECT_NE(std::find(known.begin(), known.end(), l), known.end());
    EXPECT_NE(std::find(known.begin(), known.end(), r), known.end());
    known.push_back(l + r);
  }
}

TEST(BpeTrainer, StopsAtTheVocabularySizeAndAtRarePairs) {
  EXPECT_EQ(train_byte_level_bpe(corpus(), {260, 2}).vocab.size(), 260u);
  // A pair seen once is never merged with min_frequency 2.
  const TrainedBpe once = train_byte_level_bpe({"xyzzy"}, {1000, 2});
  EXPECT_TRUE(once.merges.empty());
  EXPECT_FALSE(train_byte_level_bpe({"xyzzy"}, {1000, 1}).merges.empty());
}

TEST(BpeTrainer, IsDeterministic) {
  const TrainedBpe a = train_byte_level_bpe(corpus(), {350, 2});
  const TrainedBpe b = train_byte_level_bpe(corpus(), {350, 2});
  EXPECT_EQ(a.vocab, b.vocab);
  EXPECT_EQ(a.merges, b.merges);
}

TEST(BpeTrainer, WrittenFolderLoadsAndRoundTripsSeenAndUnseenText) {
  const TrainedBpe bpe = train_byte_level_bpe(corpus(), {400, 2});
  const fs::path dir = temp_dir("round_trip");
  const int64_t vocab = kvs::text::write_bpe_tokenizer_files(dir.string(), bpe, file_options());
  EXPECT_EQ(vocab, static_cast<int64_t>(bpe.vocab.size()) + 4);
  const BpeTokenizer tok = BpeTokenizer::load(dir.string());
  EXPECT_EQ(tok.vocab_size(), vocab);
  EXPECT_EQ(tok.bos_id(), static_cast<int64_t>(bpe.vocab.size()));
  EXPECT_EQ(tok.pad_id(), static_cast<int64_t>(bpe.vocab.size()) + 2);
  // A training sentence: BOS, then one token per word.
  const std::vector<int64_t> ids = tok.encode("a red sunset over the sea");
  ASSERT_EQ(ids.size(), 7u);
  EXPECT_EQ(ids[0], *tok.bos_id());
  EXPECT_EQ(tok.token_text(ids[3]), " sunset");
  // Unseen words, other scripts and added tokens survive the round trip.
  for (const std::string text : {"a purple zeppelin at dawn", "über café 日本 🙂", "<begin_of_image> red sea"}) {
    const std::vector<int64_t> enc = tok.encode(text, false);
    EXPECT_EQ(tok.decode(enc), text);
  }
  EXPECT_EQ(tok.encode("<begin_of_image>", false), std::vector<int64_t>{static_cast<int64_t>(bpe.vocab.size()) + 3});
  fs::remove_all(dir);
}

// The written folder is a Hugging Face tokenizer: the `tokenizers` library loads
// it and gives the ids BpeTokenizer gives (ctest sets KVSTUDIO_VENV_PYTHON).
TEST(BpeTrainer, TheTokenizersLibraryEncodesTheWrittenFolderTheSameWay) {
  const char* python = std::getenv("KVSTUDIO_VENV_PYTHON");
  if (!python || !fs::exists(python)) GTEST_SKIP() << "KVSTUDIO_VENV_PYTHON is not set: run through ctest";
  const fs::path dir = temp_dir("hf");
  kvs::text::write_bpe_tokenizer_files((dir / "tok").string(), train_byte_level_bpe(corpus(), {400, 2}),
                                       file_options());
  const std::vector<std::string> texts = {"a red sunset over the sea, the sun low on the left",
                                          "the dark forest at night",
                                          "a purple zeppelin at dawn",
                                          "über café 日本 🙂",
                                          "<bos> red <begin_of_image>",
                                          "  two  spaces\n\nlines"};
  std::ofstream(dir / "texts.json") << nlohmann::json(texts).dump();
  const std::string script =
      "import json,sys\n"
      "try:\n from tokenizers import Tokenizer\n"
      "except ImportError:\n open(sys.argv[3],'w').write('null'); sys.exit(0)\n"
      "t=Tokenizer.from_file(sys.argv[1]+'/tokenizer.json')\n"
      "texts=json.load(open(sys.argv[2]))\n"
      "json.dump([t.encode(x,add_special_tokens=False).ids for x in texts],open(sys.argv[3],'w'))\n";
  std::ofstream(dir / "encode.py") << script;
  const std::string command = std::string(python) + " " + (dir / "encode.py").string() + " " + (dir / "tok").string() +
                              " " + (dir / "texts.json").string() + " " + (dir / "ids.json").string();
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  nlohmann::json expected;
  std::ifstream(dir / "ids.json") >> expected;
  if (expected.is_null()) GTEST_SKIP() << "the Python package 'tokenizers' is not installed";
  const BpeTokenizer tok = BpeTokenizer::load((dir / "tok").string());
  for (size_t i = 0; i < texts.size(); ++i)
    EXPECT_EQ(tok.encode(texts[i], false), expected[i].get<std::vector<int64_t>>()) << texts[i];
  fs::remove_all(dir);
}

TEST(BpeTrainer, RefusesImpossibleSettings) {
  EXPECT_THROW(train_byte_level_bpe(corpus(), {255, 2}), kvs::InvalidArgumentError);
  EXPECT_THROW(train_byte_level_bpe(corpus(), {300, 0}), kvs::InvalidArgumentError);
  EXPECT_THROW(train_byte_level_bpe({std::string("bad \xff utf8")}, {300, 2}), kvs::InvalidArgumentError);
  TokenizerFileOptions o = file_options();
  o.pad_token = "<missing>";
  try {
    kvs::text::write_bpe_tokenizer_files(temp_dir("refuse").string(), train_byte_level_bpe(corpus(), {300, 2}), o);
    FAIL() << "a pad token that is no special token was accepted";
  } catch (const kvs::InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("'<missing>' is not one of the special tokens"), std::string::npos);
  }
}

}  // namespace
