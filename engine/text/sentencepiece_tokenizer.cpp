#include "engine/text/sentencepiece_tokenizer.h"

#include <sentencepiece_processor.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/core/errors.h"

namespace kvs::text {

SentencePieceTokenizer::SentencePieceTokenizer()
    : processor_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {}

SentencePieceTokenizer::SentencePieceTokenizer(const std::string& model_path) : SentencePieceTokenizer() {
  std::ifstream in(model_path, std::ios::binary);
  if (!in) throw FileError("file " + model_path + ": cannot be read (a SentencePiece model, spiece.model)");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  *this = from_bytes(bytes.str(), "file " + model_path);
}

SentencePieceTokenizer SentencePieceTokenizer::from_bytes(const std::string& model_bytes, const std::string& what) {
  SentencePieceTokenizer t;
  const auto status = t.processor_->LoadFromSerializedProto(model_bytes);
  if (!status.ok()) throw FormatError(what + ": not a SentencePiece model (" + status.ToString() + ")");
  if (t.processor_->eos_id() != kEndOfText)
    throw FormatError(what + ": a T5 tokenizer has </s> = 1, this model's end of text is " +
                      std::to_string(t.processor_->eos_id()));
  return t;
}

SentencePieceTokenizer::~SentencePieceTokenizer() = default;
SentencePieceTokenizer::SentencePieceTokenizer(SentencePieceTokenizer&&) noexcept = default;
SentencePieceTokenizer& SentencePieceTokenizer::operator=(SentencePieceTokenizer&&) noexcept = default;

std::vector<int64_t> SentencePieceTokenizer::encode_t5(const std::string& text, size_t max_length) const {
  std::vector<int> pieces;
  const auto status = processor_->Encode(text, &pieces);
  if (!status.ok()) throw InvalidArgumentError("the text cannot be tokenized: " + status.ToString());
  const size_t keep = max_length > 0 ? std::min(pieces.size(), max_length - 1) : pieces.size();
  std::vector<int64_t> ids(pieces.begin(), pieces.begin() + static_cast<std::ptrdiff_t>(keep));
  ids.push_back(kEndOfText);
  return ids;
}

int64_t SentencePieceTokenizer::vocab_size() const { return processor_->GetPieceSize(); }

std::string SentencePieceTokenizer::piece(int64_t id) const {
  if (id < 0 || id >= vocab_size()) return "";
  return processor_->IdToPiece(static_cast<int>(id));
}

}  // namespace kvs::text
