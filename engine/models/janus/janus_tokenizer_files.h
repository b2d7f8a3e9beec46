#pragma once
// Writes a Hugging Face tokenizer folder (tokenizer.json, tokenizer_config.json,
// special_tokens_map.json) for bundles that come without the official one:
// create-random's untrained Janus-Pro bundles. It is a byte-level BPE over the
// 256 byte symbols with no merges (every byte of a prompt is one token) plus the
// special tokens Janus-Pro's prompt needs, so a random model runs the same
// prompt path as a converted one; its token counts are longer than the real
// tokenizer's (about four bytes per token in English).
#include <string>
#include <vector>

namespace kvs::janus {

// The special tokens of Janus-Pro's tokenizer that generation uses, in id order
// after the byte symbols: BOS, EOS, the chat roles, the pad and the image tags.
std::vector<std::string> janus_special_tokens();

// Writes the three files into `dir` (created); returns the vocabulary size.
int64_t write_byte_level_tokenizer(const std::string& dir);

}  // namespace kvs::janus
