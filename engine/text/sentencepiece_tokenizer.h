#pragma once
// T5's tokenizer: a SentencePiece unigram model (spiece.model) run by Debian's
// libsentencepiece, with the T5 post-processing (</s> = 1 appended to every
// text). Checked against the Hugging Face T5TokenizerFast that Infinity's
// encode_prompt calls: the same ids on NFKC ligatures, runs of spaces, tabs,
// newlines, characters outside the vocabulary (unk) and the empty prompt.
// Torch-free.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace kvs::text {

class SentencePieceTokenizer {
 public:
  // FileError for a missing file, FormatError for one that is not a SentencePiece model.
  explicit SentencePieceTokenizer(const std::string& model_path);
  static SentencePieceTokenizer from_bytes(const std::string& model_bytes, const std::string& what = "spiece.model");
  ~SentencePieceTokenizer();
  SentencePieceTokenizer(SentencePieceTokenizer&&) noexcept;
  SentencePieceTokenizer& operator=(SentencePieceTokenizer&&) noexcept;

  // encode_prompt's ids: the pieces' ids and </s>, at most max_length (the
  // text's first max_length - 1 ids when it is longer, as truncation keeps).
  std::vector<int64_t> encode_t5(const std::string& text, size_t max_length = 512) const;
  int64_t vocab_size() const;           // the model's pieces (T5's 100 extra ids not counted)
  std::string piece(int64_t id) const;  // "▁cat"; "" for an id outside the model
  static constexpr int64_t kEndOfText = 1;

 private:
  SentencePieceTokenizer();
  std::unique_ptr<sentencepiece::SentencePieceProcessor> processor_;
};

}  // namespace kvs::text
