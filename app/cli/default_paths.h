#pragma once
#include <string>

namespace kvs::cli {

// The bundled demo model: $KVSTUDIO_DEFAULT_MODEL, else <prefix>/share/kvstudio/
// resources/models/llamagen-demo next to an installed binary, else the source tree.
std::string default_model_path();

// The bundled text-to-image demo model, for commands given a prompt but no
// --model: $KVSTUDIO_DEFAULT_TEXT_MODEL, else resources/models/janus-pro-demo
// found the same way.
std::string default_text_model_path();

}  // namespace kvs::cli
