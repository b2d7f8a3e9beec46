#pragma once
// Janus-Pro's generation prompt, as generation_inference.py builds it: the
// "deepseek" chat template of the Janus code (janus/utils/conversation.py) with
// an empty system prompt — "<|User|>: {prompt}\n\n<|Assistant|>:" — stripped,
// then the image-start tag, tokenised with BOS first. The unconditional CFG row
// is the same ids with every position except the first and the last set to the
// pad id (the official `tokens[i, 1:-1] = pad_id`).
//
// A negative prompt (not in the official code) replaces that row with the
// negative prompt's own templated ids. CFG rows must keep equal positions, so
// the shorter of the two rows is lengthened with pad ids right after its BOS:
// the pad token is exactly what the official unconditional row is made of.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/models/janus/janus_config.h"

namespace kvs::text {
class BpeTokenizer;
}

namespace kvs::janus {

// The templated text of a prompt (before tokenisation).
std::string templated_prompt(const std::string& prompt, const JanusConfig& config);

struct PromptRows {
  std::vector<int64_t> cond, uncond;  // equal lengths
  std::vector<std::string> labels;    // readable text of each conditional position
};

// Throws InvalidArgumentError for an empty prompt or one whose tokens leave no
// room for the image in the model's context (the message gives both counts).
PromptRows build_prompt_rows(const text::BpeTokenizer& tokenizer, const JanusConfig& config, const std::string& prompt,
                             const std::string& negative_prompt);

}  // namespace kvs::janus
