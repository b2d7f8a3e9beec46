#pragma once
// The mar family behind the ModelFamily contract (engine/session/model_family.h).
#include "engine/session/family_description.h"
#include "engine/session/model_family.h"

namespace kvs::mar {

const FamilyDescription& mar_description();
const ModelFamily& mar_family();

}  // namespace kvs::mar
