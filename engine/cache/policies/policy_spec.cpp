#include "engine/cache/policies/policy_spec.h"

#include <sstream>

#include "engine/core/errors.h"

namespace kvs {

PolicySpec parse_policy_spec(const std::string& text) {
  PolicySpec spec;
  const auto colon = text.find(':');
  spec.name = text.substr(0, colon);
  if (spec.name.empty()) throw InvalidArgumentError("empty cache policy name in '" + text + "'");
  if (colon == std::string::npos) return spec;
  std::stringstream ss(text.substr(colon + 1));
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InvalidArgumentError("policy " + spec.name + ": expected key=value, got '" + item + "'");
    const std::string key = item.substr(0, eq);
    if (spec.params.count(key))
      throw InvalidArgumentError("policy " + spec.name + ": parameter " + key + " given twice");
    spec.params[key] = item.substr(eq + 1);
  }
  return spec;
}

std::string PolicySpec::text() const {
  std::string out = name;
  char sep = ':';
  for (const auto& [k, v] : params) {
    out += sep + k + "=" + v;
    sep = ',';
  }
  return out;
}

}  // namespace kvs
