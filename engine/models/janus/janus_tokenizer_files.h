#pragma once
// Hugging Face tokenizer folders (tokenizer.json, tokenizer_config.json,
// special_tokens_map.json) for Janus-Pro bundles that come without the official
// one: create-random's untrained bundles get a byte-level BPE over the 256 byte
// symbols with no merges (every byte of a prompt is one token; about four times
// the real tokenizer's token count in English), the trained demo model a BPE
// learned on its captions (engine/text/bpe_trainer.h). Both carry the special
// tokens Janus-Pro's prompt needs, so they run the same prompt path as a
// converted checkpoint.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/text/bpe_trainer.h"

namespace kvs::janus {

// The special tokens of Janus-Pro's tokenizer that generation uses, in id order
// after the vocabulary: BOS, EOS, the chat roles, the pad and the image tags.
std::vector<std::string> janus_special_tokens();

// Janus-Pro's conventions for write_bpe_tokenizer_files: those special tokens,
// BOS added, the pad token named.
text::TokenizerFileOptions janus_tokenizer_file_options();

// Writes the byte-level tokenizer's three files into `dir` (created); returns
// the vocabulary size.
int64_t write_byte_level_tokenizer(const std::string& dir);

}  // namespace kvs::janus
