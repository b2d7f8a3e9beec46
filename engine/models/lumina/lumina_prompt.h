#pragma once
// Lumina-mGPT's generation prompt, as generate_examples/generate.py and the demo
// build it and FlexARItemProcessor tokenises it: the caption under the
// resolution phrase "Generate an image of {W}x{H} according to the following
// prompt:\n" (width first), the conversation separator <reserved08706> after it,
// BOS (<s>, id 0) before it, encoded without the tokenizer's own special tokens.
//
// The official unconditional CFG sequence holds no text: it is the image header
// alone (<racm3:break>, the two grid tokens). A negative prompt (not in the
// official code) puts the same template around the negative text in front of
// that header: the unconditional branch then guides away from it.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/models/lumina/lumina_config.h"

namespace kvs::text {
class BpeTokenizer;
}

namespace kvs::lumina {

std::string lumina_prompt_text(const std::string& caption, const LuminaImageSize& size);
// [<s>] + the ids of `text` + <reserved08706>: the conditional sequence of a prompt text.
std::vector<int64_t> lumina_text_ids(const text::BpeTokenizer& tokenizer, const LuminaConfig& config,
                                     const std::string& text);

struct LuminaPrompt {
  std::vector<int64_t> cond;           // [<s>] + template + <reserved08706>
  std::vector<int64_t> uncond_prefix;  // before the unconditional header: empty, or the negative prompt's ids
  std::vector<std::string> labels;     // readable text of each conditional position
};

// InvalidArgumentError for an empty caption. The model's max_position_embeddings
// is no limit: the official loop runs past it (RoPE has no table to outgrow).
LuminaPrompt build_lumina_prompt(const text::BpeTokenizer& tokenizer, const LuminaConfig& config,
                                 const std::string& caption, const std::string& negative_caption,
                                 const LuminaImageSize& size);

// Positions one image takes after its prompt: the header (3), the body and, as
// the official loop writes them, <eoss> and the closing separator.
int64_t lumina_generated_positions(const LuminaImageSize& size);

}  // namespace kvs::lumina
