#include "engine/text/decoder.h"

#include <nlohmann/json.hpp>

#include "engine/core/errors.h"
#include "engine/text/byte_level.h"
#include "engine/text/json_fields.h"
#include "engine/text/utf8.h"

namespace kvs::text {

TokenDecoder TokenDecoder::from_json(const nlohmann::json& node, const std::string& where) {
  TokenDecoder d;
  if (node.is_null()) return d;
  const std::string type = json_string(node, "type", where + ": decoder");
  if (type == "ByteLevel") {
    d.byte_level_ = true;
    return d;
  }
  if (type == "Sequence") {
    const nlohmann::json& list = json_array(node, "decoders", where + ": decoder Sequence");
    if (list.empty()) return d;
    if (list.size() == 1) return from_json(list[0], where);
  }
  throw FormatError(where + ": decoder type '" + type + "' is not supported (supported: null, ByteLevel)");
}

std::string TokenDecoder::decode(const std::vector<std::string>& pieces) const {
  std::string out;
  if (!byte_level_) {
    for (size_t i = 0; i < pieces.size(); ++i) out += (i ? " " : "") + pieces[i];
    return out;
  }
  for (const std::string& piece : pieces) {
    if (const auto bytes = byte_level_to_bytes(piece)) {
      out += *bytes;
    } else {
      out += piece;
    }
  }
  return utf8_lossy(out);
}

}  // namespace kvs::text
