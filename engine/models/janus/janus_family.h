#pragma once
// The janus-pro family (text-to-image, raster next-token over a 24x24 grid)
// behind the ModelFamily contract (engine/session/model_family.h).
#include "engine/session/family_description.h"
#include "engine/session/model_family.h"

namespace kvs::janus {

const FamilyDescription& janus_description();
const ModelFamily& janus_family();

}  // namespace kvs::janus
