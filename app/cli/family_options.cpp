#include "app/cli/family_options.h"

#include <map>

namespace kvs::cli {

FamilyOptions family_options(const ArgParser& parser, const std::vector<std::string>& consumed) {
  std::map<std::string, std::string> values = parser.values();
  for (const std::string& name : consumed) values.erase(name);
  return FamilyOptions(std::move(values));
}

}  // namespace kvs::cli
