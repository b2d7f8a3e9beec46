// Interim lookup of the family descriptions, until the family registry
// (family_registry.cpp) links into kvs_engine: the same answers from the three
// descriptions directly.
#include "engine/models/family_registry.h"
#include "engine/models/llamagen/llamagen_family.h"
#include "engine/models/mar/mar_family.h"
#include "engine/models/var/var_family.h"

namespace kvs {

namespace {
const std::vector<const FamilyDescription*>& descriptions() {
  static const std::vector<const FamilyDescription*> all = {&llamagen::llamagen_description(), &var::var_description(),
                                                            &mar::mar_description()};
  return all;
}
}  // namespace

const FamilyDescription* find_family_description(const std::string& name) {
  for (const FamilyDescription* d : descriptions())
    if (d->name == name) return d;
  return nullptr;
}

std::string supported_family_names() {
  std::string out;
  for (const FamilyDescription* d : descriptions()) out += (out.empty() ? "" : ", ") + d->name;
  return out;
}

}  // namespace kvs
