#include "engine/session/family_description.h"

#include <algorithm>

namespace kvs {

std::string unit_noun(GenerationUnit unit) {
  switch (unit) {
    case GenerationUnit::Line: return "line";
    case GenerationUnit::Scale: return "scale";
    case GenerationUnit::Step: return "step";
  }
  return "line";
}

bool FamilyDescription::has_request_option(const std::string& option) const {
  return std::find(request_options.begin(), request_options.end(), option) != request_options.end();
}

bool FamilyDescription::has_random_preset(const std::string& preset) const {
  return std::find(random_presets.begin(), random_presets.end(), preset) != random_presets.end();
}

}  // namespace kvs
