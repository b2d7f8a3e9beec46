#pragma once
// The MAR runner of the conformance checks (called by run_conformance_case for
// cases whose constructors hold "mar"; see conformance_report.h).
#include <c10/core/Device.h>
#include <nlohmann/json.hpp>

#include <filesystem>

#include "engine/conformance/conformance_report.h"

namespace kvs {

// `manifest`: the case JSON; `dir`: the folder holding its weights and io files.
// Checks, as the case lists them: forward_mae_encoder on the reference inputs,
// forward_mae_decoder on the reference encoder output, SimpleMLPAdaLN.forward /
// forward_with_cfg, every p_sample step on the fixed input with the recorded
// noise, a whole sample_tokens run (its arguments read from the recorded call)
// with the recorded orders and noise replayed through ReplayMarRandom, the images
// decoded from our tokens, and the respaced timestep map the case derives.
ConformanceReport run_mar_conformance(const nlohmann::ordered_json& manifest, const std::filesystem::path& dir,
                                      c10::Device device);

}  // namespace kvs
