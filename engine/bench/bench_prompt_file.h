#pragma once
// The prompt files of `kvstudio-cli bench --prompts FILE`, parsed without
// LibTorch or the world's renderer so that the parser can be fuzzed on its own.
// One prompt a line (UTF-8), blank lines and lines starting with '#' skipped. A
// line "CLASS<TAB>PROMPT" names the world class the picture should show; an
// empty CLASS names none, and a line without a tab has none.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kvs {

// A prompt of a text-family bench, with the procedural-world class
// (engine/world/scene_world.h) its picture should show when the prompt file
// names one; those images are judged for class (policy_bench.h).
struct BenchPrompt {
  std::string text;
  std::optional<int64_t> class_id;
};

// `text` is the file's content, `path` names it in messages, `class_names` are
// the world's classes in label order. Throws InvalidArgumentError naming the
// file and line for an unknown class or a class without a prompt, and for a
// file without a prompt.
std::vector<BenchPrompt> parse_prompt_file(const std::string& text, const std::string& path,
                                           const std::vector<std::string>& class_names);

}  // namespace kvs
