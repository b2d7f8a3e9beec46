#include "engine/models/lumina/lumina_prompt.h"

#include <algorithm>

#include "engine/core/errors.h"
#include "engine/text/bpe_tokenizer.h"

namespace kvs::lumina {
namespace {

bool blank(const std::string& s) { return s.find_first_not_of(" \t\n\r\f\v") == std::string::npos; }

std::vector<int64_t> prompt_ids(const text::BpeTokenizer& tokenizer, const LuminaConfig& config,
                                const std::string& caption, const LuminaImageSize& size) {
  return lumina_text_ids(tokenizer, config, lumina_prompt_text(caption, size));
}

}  // namespace

std::string lumina_prompt_text(const std::string& caption, const LuminaImageSize& size) {
  return "Generate an image of " + std::to_string(size.width) + "x" + std::to_string(size.height) +
         " according to the following prompt:\n" + caption;
}

std::vector<int64_t> lumina_text_ids(const text::BpeTokenizer& tokenizer, const LuminaConfig& config,
                                     const std::string& text) {
  std::vector<int64_t> ids{config.ids.bos};
  for (int64_t id : tokenizer.encode(text + "<reserved08706>", false)) ids.push_back(id);
  return ids;
}

int64_t lumina_generated_positions(const LuminaImageSize& size) { return 3 + size.body_tokens() + 2; }

LuminaPrompt build_lumina_prompt(const text::BpeTokenizer& tokenizer, const LuminaConfig& config,
                                 const std::string& caption, const std::string& negative_caption,
                                 const LuminaImageSize& size) {
  if (blank(caption)) throw InvalidArgumentError("the prompt is empty");
  LuminaPrompt p;
  p.cond = prompt_ids(tokenizer, config, caption, size);
  if (!blank(negative_caption)) p.uncond_prefix = prompt_ids(tokenizer, config, negative_caption, size);
  for (const auto* row : {&p.cond, &p.uncond_prefix})
    for (int64_t id : *row)
      if (id < 0 || id >= config.lm.vocab_size)
        throw ModelMismatchError("the tokenizer produced id " + std::to_string(id) +
                                 ", outside the model's vocabulary");
  for (int64_t id : p.cond) p.labels.push_back(tokenizer.token_text(id));
  return p;
}

}  // namespace kvs::lumina
