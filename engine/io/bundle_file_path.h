#pragma once
// Where a file that a bundle's model.json names lives (files.KEY).
#include <optional>
#include <string>

#include "engine/io/model_bundle.h"

namespace kvs::io {

// The path of files.KEY, nullopt when the manifest names none. A file name is
// inside the bundle folder; {"shared": "NAME"} is NAME in the folder "shared"
// beside the bundle folder (kSharedBundleFilesFolder, bundle_manifest.h:
// resources/models/shared in the source tree,
// <prefix>/share/kvstudio/resources/models/shared installed), so that bundles
// installed together keep one copy of a file they share. The manifest's parser
// has refused every other form, so no entry reaches outside these two folders.
// A shared file that is not there is a FileError naming the field and the path
// it was looked for at.
std::optional<std::string> bundle_file_path(const ModelBundle& bundle, const std::string& key);

}  // namespace kvs::io
