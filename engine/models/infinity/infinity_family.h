#pragma once
// The infinity family behind the ModelFamily contract (engine/session/model_family.h).
#include "engine/session/family_description.h"
#include "engine/session/model_family.h"

namespace kvs::infinity {

const FamilyDescription& infinity_description();
const ModelFamily& infinity_family();

}  // namespace kvs::infinity
