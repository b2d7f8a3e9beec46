#pragma once
// The lumina-mgpt family (text-to-image, raster next-token with an end-of-line
// token after every image row) behind the ModelFamily contract
// (engine/session/model_family.h).
#include "engine/session/family_description.h"
#include "engine/session/model_family.h"

namespace kvs::lumina {

const FamilyDescription& lumina_description();
const ModelFamily& lumina_family();

}  // namespace kvs::lumina
