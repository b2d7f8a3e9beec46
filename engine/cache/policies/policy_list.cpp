#include "engine/cache/policies/policy_list.h"

#include "engine/cache/policies/policy_registry.h"
#include "engine/core/errors.h"

namespace kvs {
namespace {

bool is_policy_name(const std::string& name) {
  for (const auto& info : policy_registry())
    if (info.name == name) return true;
  return false;
}

}  // namespace

std::vector<std::string> split_policy_list(const std::string& text) {
  std::vector<std::string> specs;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(start, comma - start);
    start = comma + 1;
    if (item.empty()) continue;
    const auto stop = item.find_first_of(":=");
    const std::string head = item.substr(0, stop);
    const bool continues = stop != std::string::npos && item[stop] == '=' && !is_policy_name(head);
    if (continues) {
      if (specs.empty())
        throw InvalidArgumentError("--policies: parameter '" + item + "' comes before any policy name");
      specs.back() += (specs.back().find(':') == std::string::npos ? ":" : ",") + item;
    } else {
      find_policy(head);  // unknown names: one error listing the known ones
      specs.push_back(item);
    }
  }
  if (specs.empty()) throw InvalidArgumentError("--policies: no policy given");
  return specs;
}

}  // namespace kvs
