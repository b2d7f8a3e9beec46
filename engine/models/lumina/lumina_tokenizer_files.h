#pragma once
// A Hugging Face tokenizer folder with Chameleon's vocabulary layout, for
// Lumina-mGPT bundles that come without the official one (create-random's
// untrained bundles): <s>, <pad>, </s>, <unk>; the 8192 image tokens
// IMGIMG<code>Z at ids 4..8195 (id = code + 4, the released vocabulary's order);
// <eoss>, <racm3:break> and the reserved tokens up to id 8831 (8711 named
// <image>, as the converted checkpoints name it); then byte-level BPE pieces for
// the 256 bytes with no merges (every byte of a prompt is one token). The
// pre-tokenizer is Chameleon's. Generation runs the same prompt path on it as on
// a converted checkpoint.
#include <cstdint>
#include <string>

namespace kvs::lumina {

// Writes tokenizer.json, tokenizer_config.json and special_tokens_map.json into
// `dir` (created); returns the vocabulary size (8832 + 256).
int64_t write_chameleon_byte_tokenizer(const std::string& dir);

}  // namespace kvs::lumina
