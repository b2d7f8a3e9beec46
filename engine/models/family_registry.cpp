#include "engine/models/family_registry.h"

#include "engine/core/errors.h"
#include "engine/models/infinity/infinity_family.h"
#include "engine/models/janus/janus_family.h"
#include "engine/models/llamagen/llamagen_family.h"
#include "engine/models/lumina/lumina_family.h"
#include "engine/models/mar/mar_family.h"
#include "engine/models/var/var_family.h"

namespace kvs {

const std::vector<const ModelFamily*>& model_families() {
  // One line per family: adding a family is its folder plus a line here.
  static const std::vector<const ModelFamily*> families = {
      &llamagen::llamagen_family(), &var::var_family(),       &mar::mar_family(),
      &janus::janus_family(),       &lumina::lumina_family(), &infinity::infinity_family(),
  };
  return families;
}

const ModelFamily* lookup_model_family(const std::string& name) {
  for (const ModelFamily* f : model_families())
    if (f->name() == name) return f;
  return nullptr;
}

const ModelFamily& find_model_family(const std::string& name) {
  if (const ModelFamily* f = lookup_model_family(name)) return *f;
  throw InvalidArgumentError("model family '" + name + "' is not supported (supported: " + supported_family_names() +
                             ")");
}

const FamilyDescription* find_family_description(const std::string& name) {
  const ModelFamily* f = lookup_model_family(name);
  return f ? &f->description() : nullptr;
}

std::string supported_family_names() {
  std::string out;
  for (const ModelFamily* f : model_families()) out += (out.empty() ? "" : ", ") + f->name();
  return out;
}

}  // namespace kvs
