#include "engine/models/janus/janus_prompt.h"

#include <algorithm>

#include "engine/core/errors.h"
#include "engine/text/bpe_tokenizer.h"

namespace kvs::janus {
namespace {

// Python's str.strip() on the ASCII whitespace a prompt box produces.
std::string strip(const std::string& s) {
  const char* ws = " \t\n\r\f\v";
  const auto first = s.find_first_not_of(ws);
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(ws) - first + 1);
}

}  // namespace

std::string templated_prompt(const std::string& prompt, const JanusConfig& config) {
  return strip("<|User|>: " + strip(prompt) + "\n\n<|Assistant|>:") + config.image_start_tag;
}

PromptRows build_prompt_rows(const text::BpeTokenizer& tokenizer, const JanusConfig& config, const std::string& prompt,
                             const std::string& negative_prompt) {
  if (strip(prompt).empty()) throw InvalidArgumentError("the prompt is empty");
  const int64_t pad_id = tokenizer.token_id(config.pad_tag);
  PromptRows rows;
  rows.cond = tokenizer.encode(templated_prompt(prompt, config), true);
  if (rows.cond.size() < 2) throw InvalidArgumentError("the prompt tokenises to fewer than 2 tokens");
  if (strip(negative_prompt).empty()) {
    rows.uncond = rows.cond;
    for (size_t i = 1; i + 1 < rows.uncond.size(); ++i) rows.uncond[i] = pad_id;
  } else {
    rows.uncond = tokenizer.encode(templated_prompt(negative_prompt, config), true);
    auto lengthen = [pad_id](std::vector<int64_t>& row, size_t length) {
      if (row.size() < length) row.insert(row.begin() + 1, length - row.size(), pad_id);
    };
    const size_t length = std::max(rows.cond.size(), rows.uncond.size());
    lengthen(rows.cond, length);
    lengthen(rows.uncond, length);
  }
  const int64_t prompt_tokens = static_cast<int64_t>(rows.cond.size());
  const int64_t room = config.language.max_position_embeddings - config.image_tokens();
  if (prompt_tokens > room)
    throw InvalidArgumentError(
        "the prompt is " + std::to_string(prompt_tokens) + " tokens (with the chat template); the model's context of " +
        std::to_string(config.language.max_position_embeddings) + " positions holds " +
        std::to_string(config.image_tokens()) + " image tokens and at most " + std::to_string(room) + " prompt tokens");
  for (int64_t id : rows.cond) {
    if (id < 0 || id >= config.language.vocab_size)
      throw ModelMismatchError("the tokenizer produced id " + std::to_string(id) + ", outside the model's vocabulary");
    rows.labels.push_back(tokenizer.token_text(id));
  }
  return rows;
}

}  // namespace kvs::janus
