#pragma once
// Trains a byte-level BPE tokenizer on a corpus and writes it as a Hugging Face
// tokenizer folder that BpeTokenizer (and the `tokenizers` library) load
// unchanged: the demo text-to-image model's tokenizer, trained on the world's
// captions. Torch-free.
//
// The algorithm is the classic one (Sennrich et al. 2016, as `tokenizers`'
// BpeTrainer runs it for byte-level models): the corpus is cut into words by the
// very pre-tokenizer the written tokenizer.json declares (ByteLevel with GPT-2's
// split, no prefix space, so "a red sun" gives "a", "Ġred", "Ġsun"), every word
// starts as its byte symbols, and the most frequent adjacent pair (counted over
// word frequencies) is merged, again and again, until the vocabulary is full or
// no pair occurs min_frequency times.
//
// Choices where the classic description is silent:
// - The initial alphabet is all 256 byte symbols in byte order (ids 0..255), so
//   any text, including words never seen in training, stays encodable.
// - Ties between equally frequent pairs go to the pair whose merged piece sorts
//   first, then to the left piece that sorts first (bytewise UTF-8): the result
//   does not depend on hash order, so the same corpus gives the same file on
//   every machine.
// - Special tokens are added tokens after the learned vocabulary (never split,
//   never merged), with ids vocab .. vocab + specials - 1.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kvs::text {

struct BpeTrainingOptions {
  int64_t vocab_size = 1024;  // byte symbols + merges, without the special tokens
  int64_t min_frequency = 2;  // a pair seen fewer times is never merged
};

struct TrainedBpe {
  std::vector<std::string> vocab;  // byte-level spelled pieces, id = index (the 256 bytes first)
  std::vector<std::pair<std::string, std::string>> merges;  // in rank order
  int64_t words = 0, distinct_words = 0;                    // of the corpus, as pre-tokenized
};

// Throws InvalidArgumentError for vocab_size < 256 or min_frequency < 1, or
// text that is not UTF-8.
TrainedBpe train_byte_level_bpe(const std::vector<std::string>& corpus, const BpeTrainingOptions& options);

// Special tokens and conventions of the written tokenizer_config.json.
struct TokenizerFileOptions {
  std::vector<std::string> special_tokens;      // ids after the vocabulary, in order
  std::string bos_token, eos_token, pad_token;  // each one of special_tokens (or empty: none)
  bool add_bos_token = true;
  int64_t model_max_length = 0;  // 0: not written
};

// Writes tokenizer.json, tokenizer_config.json and special_tokens_map.json into
// `dir` (created). Returns the vocabulary size including the special tokens.
// Throws FileError when a file cannot be written, InvalidArgumentError when a
// named BOS/EOS/pad token is not among the special tokens.
int64_t write_bpe_tokenizer_files(const std::string& dir, const TrainedBpe& bpe, const TokenizerFileOptions& options);

}  // namespace kvs::text
