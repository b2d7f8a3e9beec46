#include "engine/bench/bench_prompt_file.h"

#include <sstream>

#include "engine/core/errors.h"

namespace kvs {

std::vector<BenchPrompt> parse_prompt_file(const std::string& text, const std::string& path,
                                           const std::vector<std::string>& class_names) {
  std::istringstream in(text);
  std::vector<BenchPrompt> prompts;
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    const std::string where = "prompt file " + path + " line " + std::to_string(number);
    const auto tab = line.find('\t', first);
    if (tab == std::string::npos) {
      prompts.push_back({line, std::nullopt});
      continue;
    }
    // CLASS<TAB>PROMPT: the class the picture should show.
    std::string name = line.substr(first, tab - first);
    name.erase(name.find_last_not_of(' ') + 1);
    BenchPrompt p{line.substr(tab + 1), std::nullopt};
    if (p.text.find_first_not_of(" \t") == std::string::npos)
      throw InvalidArgumentError(where + ": no prompt after the class '" + name + "' and its tab");
    for (std::size_t id = 0; id < class_names.size() && !p.class_id; ++id)
      if (class_names[id] == name) p.class_id = static_cast<int64_t>(id);
    if (!p.class_id) {
      std::string names;
      for (const auto& c : class_names) names += (names.empty() ? "" : ", ") + c;
      throw InvalidArgumentError(where + ": unknown class '" + name + "' before the tab (classes: " + names +
                                 "; a line without a tab names no class)");
    }
    prompts.push_back(std::move(p));
  }
  if (prompts.empty()) throw InvalidArgumentError("prompt file " + path + " holds no prompt (one prompt a line)");
  return prompts;
}

}  // namespace kvs
