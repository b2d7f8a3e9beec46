#pragma once
// The VAR runner of the conformance checks (called by run_conformance_case for
// cases whose constructors hold "var_args"; see conformance_report.h).
#include <c10/core/Device.h>
#include <nlohmann/json.hpp>

#include <filesystem>

#include "engine/conformance/conformance_report.h"

namespace kvs {

// `manifest`: the case JSON; `dir`: the folder holding its weights and io files.
// Checks, as the case lists them: the teacher-forcing input (idxBl_to_var_input),
// teacher-forced logits (VAR.forward on the reference input), the per-scale ids of
// autoregressive_infer_cfg (exactly; its arguments are read from the recorded
// call), the CFG logits of the first scales, the final f_hat, the returned image
// (decoded from our own f_hat) and fhat_to_img / dec_raw (decoded from the
// reference f_hat, so the decoder is checked on its own).
ConformanceReport run_var_conformance(const nlohmann::ordered_json& manifest, const std::filesystem::path& dir,
                                      c10::Device device);

}  // namespace kvs
