#pragma once
// The llamagen family behind the ModelFamily contract (engine/session/model_family.h).
#include "engine/session/family_description.h"
#include "engine/session/model_family.h"

namespace kvs::llamagen {

const FamilyDescription& llamagen_description();
const ModelFamily& llamagen_family();

}  // namespace kvs::llamagen
