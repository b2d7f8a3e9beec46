#pragma once
// The var family behind the ModelFamily contract (engine/session/model_family.h).
#include "engine/session/family_description.h"
#include "engine/session/model_family.h"

namespace kvs::var {

const FamilyDescription& var_description();
const ModelFamily& var_family();

}  // namespace kvs::var
