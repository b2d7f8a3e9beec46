#pragma once
// The tokenizer.json "decoder": from token pieces back to text. ByteLevel turns
// each piece's byte-level spelling back into bytes (a piece with characters
// outside that alphabet, such as an added token, stands for its own UTF-8) and
// the bytes into text, ill-formed parts as U+FFFD. Without a decoder the pieces
// are joined with spaces, as the Hugging Face library does. Torch-free.
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace kvs::text {

class TokenDecoder {
 public:
  // null or ByteLevel (also inside a Sequence of one); others throw FormatError
  // "<where>: decoder type 'X' is not supported ...".
  static TokenDecoder from_json(const nlohmann::json& node, const std::string& where);

  std::string decode(const std::vector<std::string>& pieces) const;

 private:
  bool byte_level_ = false;
};

}  // namespace kvs::text
