#pragma once
// Model bundles as the window's model manager lists them: found in folders,
// summarised from model.json alone (architecture, parameter count, KV bytes per
// token) without loading weights. Torch-free; never throws for a broken bundle:
// its summary carries the problem instead, so one bad folder does not hide the rest.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "engine/session/model_summary.h"

namespace kvs {

namespace io {
struct ModelBundle;
}

ModelSummary summarize_model_bundle(const std::string& dir);

// model.json's "sampling_defaults", typed; unset where the bundle says nothing.
ModelSamplingDefaults read_sampling_defaults(const nlohmann::json& manifest);

// The same for a bundle already open; throws (kvs::Error, json errors) where the
// folder version records a problem.
ModelSummary summarize_model_bundle(const io::ModelBundle& bundle);

// Bundles in `folders`: a folder that is itself a bundle, and its direct
// subfolders holding a model.json. Missing folders are skipped; duplicates (same
// canonical path) listed once, in folder order.
std::vector<ModelSummary> find_model_bundles(const std::vector<std::string>& folders);

}  // namespace kvs
