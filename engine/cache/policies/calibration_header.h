#pragma once
// The one reader of the calibration files of the scale policies: HeatKV's
// heatkv_calibration.json, AMS-KV's amskv_calibration.json, HACK's
// hack_calibration.json and ScaleKV's scalekv_calibration.json. They share a
// header,
//   {"format": "<the file's own>", "version": 1, "model": "...", "layers": L,
//    "unit_tokens": [1, 4, 9, ...], "classes": [...], "seed": S, "cfg": C, ...}
// followed by each format's own fields, which it reads through the same typed
// accessors. These files come with downloaded bundles, so every defect is a
// FormatError "<source>: not a <kind>: <what is wrong>", never a JSON library
// exception, and a number is taken only as what it is: 1e300 where an integer
// belongs, or a negative seed, is refused rather than cast (the cast would be
// undefined or wrap). Torch-free, so that the parsers can be fuzzed
// (tests/fuzz/calibration_fuzzer.cpp).
#include <nlohmann/json.hpp>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "engine/core/errors.h"

namespace kvs {

struct CalibrationHeader {
  std::string model;  // the bundle's name when calibrated (informational)
  int64_t layers = 0;
  std::vector<int64_t> unit_tokens;  // tokens per scale (1, 4, 9, ...)
  std::vector<int64_t> classes;      // the calibration images' classes
  uint64_t seed = 0;
  double cfg = 0;

  int64_t scales() const { return static_cast<int64_t>(unit_tokens.size()); }

  // Into a format's own struct, whose fields carry the same names.
  template <class Calibration>
  void copy_to(Calibration& c) const {
    c.model = model;
    c.layers = layers;
    c.unit_tokens = unit_tokens;
    c.classes = classes;
    c.seed = seed;
    c.cfg = cfg;
  }
};

// The most layers and scales a calibration may claim: far above any model
// (VAR-d30: 30 layers, 10 scales), and low enough that a format's index
// arithmetic over [layer][scale] cannot overflow.
inline constexpr int64_t kCalibrationMaxLayers = 4096;
inline constexpr int64_t kCalibrationMaxScales = 4096;

class CalibrationReader {
 public:
  // Parses `json_text`, read from `source`, as a version-1 file of `format` and reads
  // its header: at least one layer, 2 or more scales, every scale with tokens.
  // `kind` names the file in errors ("a HACK head calibration").
  CalibrationReader(const std::string& json_text, std::string source, std::string format, std::string kind);

  const CalibrationHeader& header() const { return header_; }

  // "<source>: not a <kind>: <why>", for the format's own checks.
  FormatError error(const std::string& why) const;

  // A format's own fields; those without a fallback are required.
  int64_t integer(const char* key) const;
  int64_t integer(const char* key, int64_t fallback) const;
  uint64_t unsigned_integer(const char* key, uint64_t fallback) const;
  double real(const char* key) const;
  double real(const char* key, double fallback) const;
  std::string text(const char* key, const std::string& fallback) const;
  std::vector<int64_t> integers(const char* key) const;
  std::vector<int64_t> integers(const char* key, const std::vector<int64_t>& fallback) const;
  std::vector<double> reals(const char* key) const;
  // Lists of lists of lists of numbers (AMS-KV's similarity[image][layer][scale]).
  std::vector<std::vector<std::vector<double>>> reals_3d(const char* key) const;

  // Refuses a table `name` of `values` values unless it holds the product of
  // `dims` ("beta has 4 values, expected 18"); a product past 2^63 - 1 (a file
  // may claim 2^62 heads) is named by `dims_text` ("layers x heads x scales").
  void require_table_size(const std::string& name, size_t values, std::initializer_list<int64_t> dims,
                          const std::string& dims_text) const;

 private:
  const nlohmann::json* find(const char* key) const;
  const nlohmann::json& required(const char* key) const;
  int64_t integer_of(const nlohmann::json& value, const std::string& name) const;
  double real_of(const nlohmann::json& value, const std::string& name) const;
  const nlohmann::json& list_of(const nlohmann::json& value, const std::string& name) const;
  std::vector<int64_t> integers_of(const nlohmann::json& value, const std::string& name) const;
  std::vector<double> reals_of(const nlohmann::json& value, const std::string& name) const;

  std::string source_, kind_;
  nlohmann::json json_;
  CalibrationHeader header_;
};

// A calibration's geometry as messages show it: "6 layers, scales of 1 4 9
// tokens", or with heads > 0 "6 layers x 16 heads, scales of 1 4 9 tokens".
std::string calibration_geometry(int64_t layers, const std::vector<int64_t>& unit_tokens, int64_t heads = 0);

}  // namespace kvs
