#pragma once
// `kvstudio-cli verify` for Janus-Pro conformance cases (reference outputs of
// the official deepseek-ai/Janus generation path; docs/conformance.md):
// teacher-forced embeddings, hidden states and logits, greedy CFG generation
// and its first CFG logits, the sampled run replayed from its recorded
// randomness, and the decoder's images. Always float32.
#include <c10/core/Device.h>
#include <nlohmann/json.hpp>

#include <filesystem>

#include "engine/conformance/conformance_report.h"

namespace kvs {

ConformanceReport run_janus_conformance(const nlohmann::ordered_json& manifest, const std::filesystem::path& dir,
                                        c10::Device device);

}  // namespace kvs
