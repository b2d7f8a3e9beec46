#pragma once
#include <string>

namespace kvs::cli {

// The bundled demo model: $KVSTUDIO_DEFAULT_MODEL, else <prefix>/share/kvstudio/
// resources/models/llamagen-demo next to an installed binary, else the source tree.
std::string default_model_path();

}  // namespace kvs::cli
