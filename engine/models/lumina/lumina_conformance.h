#pragma once
// `kvstudio-cli verify` for Lumina-mGPT conformance cases (reference outputs of
// the official Alpha-VLLM/Lumina-mGPT generation path; docs/conformance.md): the
// prompt's ids through the case's tokenizer, the teacher-forced logits of every
// step, the whole sampled run replayed from its recorded randomness (header,
// body, <eoss> and the closing separator), the first steps' unconditional logits,
// CFG scores and sampling distributions, and the VQGAN's codes and images.
// Always float32.
#include <c10/core/Device.h>
#include <nlohmann/json.hpp>

#include <filesystem>

#include "engine/conformance/conformance_report.h"

namespace kvs {

ConformanceReport run_lumina_conformance(const nlohmann::ordered_json& manifest, const std::filesystem::path& dir,
                                         c10::Device device);

}  // namespace kvs
