#include <ATen/Context.h>
#include <nlohmann/json.hpp>

#include <filesystem>

#include "engine/conformance/conformance_report.h"
#include "engine/core/device.h"
#include "engine/core/errors.h"
#include "engine/io/mapped_file.h"
#include "engine/models/family_registry.h"

namespace kvs {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

ConformanceReport run_conformance_case(const std::string& case_json_path, const std::string& device_name) {
  ojson manifest;
  try {
    manifest = ojson::parse(io::read_text_file(case_json_path));
  } catch (const nlohmann::json::exception& e) {
    throw FormatError("file " + case_json_path + ": not valid JSON (" + e.what() + ")");
  }
  // Always float32, on CUDA too (where a run's auto dtype is bf16): the
  // references are float32 results and the tolerances are set for float32.
  const DeviceChoice choice = choose_device(parse_device(device_name), 0, RunDtype::F32);
  if (choice.kind == DeviceKind::Cuda) {
    // The references are float32 results; cuDNN convolutions default to TF32 on
    // Ampere and later (10-bit mantissa), which moves decoded pixels by ~1e-3.
    at::globalContext().setAllowTF32CuDNN(false);
    at::globalContext().setAllowTF32CuBLAS(false);
  }
  const fs::path dir = fs::path(case_json_path).parent_path();
  try {
    for (const ModelFamily* family : model_families())
      if (family->owns_conformance_case(manifest)) return family->run_conformance_case(manifest, dir.string(), choice);
  } catch (const nlohmann::json::exception& e) {
    throw FormatError("file " + case_json_path + ": missing or malformed field (" + e.what() + ")");
  }
  throw InvalidArgumentError("file " + case_json_path + ": case family '" + manifest.value("model", "?") +
                             "' is not supported (families: " + supported_family_names() + ")");
}

}  // namespace kvs
