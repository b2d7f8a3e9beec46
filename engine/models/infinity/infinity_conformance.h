#pragma once
// `kvstudio-cli verify` for Infinity conformance cases (reference outputs of the
// official FoundationVision/Infinity path; docs/conformance.md). The official
// cross-attention rounds to bf16, so a free run is not compared bit for bit:
// every run is replayed along the reference trajectory (forced replay). At each
// scale the port's logits are compared, its own bits (drawn with the recorded
// Exp(1) draws) are compared where the case marks the decision decisive, and the
// run continues with the reference bits, so next-scale inputs, summed codes and
// images follow the reference. Also the tokenizer, the T5 rows, the text side,
// the first scales' block outputs, a batched call with negative prompts and
// per-scale CFG, the teacher-forced forward and the decoder alone. Always float32.
#include <c10/core/Device.h>
#include <nlohmann/json.hpp>

#include <filesystem>

#include "engine/conformance/conformance_report.h"

namespace kvs {

ConformanceReport run_infinity_conformance(const nlohmann::ordered_json& manifest, const std::filesystem::path& dir,
                                           c10::Device device);

}  // namespace kvs
