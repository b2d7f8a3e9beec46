#pragma once
// The LlamaGen conformance case: our port against reference outputs of the
// official code on a tiny config (docs/conformance.md).
#include <c10/core/Device.h>
#include <nlohmann/json.hpp>

#include <filesystem>

#include "engine/conformance/conformance_report.h"

namespace kvs {

ConformanceReport run_llamagen_conformance(const nlohmann::ordered_json& manifest, const std::filesystem::path& dir,
                                           c10::Device device);

}  // namespace kvs
