// The four calibration files of the scale policies (HeatKV, AMS-KV, HACK,
// ScaleKV) read through their one header reader (calibration_header.h): every
// bad input, the fuzzer's regression inputs included, is a kvs::FormatError
// naming the file and what is wrong, and the shared fields are refused with the
// same words whichever format the file claims to be.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/cache/policies/amskv_calibration.h"
#include "engine/cache/policies/head_variance_profile.h"
#include "engine/cache/policies/layer_selectivity_profile.h"
#include "engine/cache/policies/scale_attention_profile.h"
#include "engine/core/errors.h"

namespace kvs {
namespace {

struct Format {
  std::string name;   // as the regression inputs' names start
  std::string id;     // the file's "format"
  std::string kind;   // how its errors name it
  std::string valid;  // a file it accepts
  std::function<void(const std::string& text, const std::string& source)> parse;
  std::function<void(const std::string& path)> load;
};

std::vector<Format> formats() {
  return {
      {"heatkv", "kvstudio-scale-attention-profile", "a scale-attention calibration",
       R"({"format": "kvstudio-scale-attention-profile", "version": 1, "model": "tiny", "layers": 1, "heads": 2,
           "unit_tokens": [1, 4, 9], "classes": [0, 1], "seed": 0, "cfg": 4.0, "samples": 2,
           "beta": [1, 0, 0, 0.25, 0.75, 0, 0.1, 0.3, 0.6, 1, 0, 0, 0.5, 0.5, 0, 0.2, 0.2, 0.6]})",
       [](const std::string& t, const std::string& s) { ScaleAttentionProfile::from_json_text(t, s); },
       [](const std::string& p) { ScaleAttentionProfile::load(p); }},
      {"amskv", "kvstudio-amskv-calibration", "an AMS-KV calibration",
       R"({"format": "kvstudio-amskv-calibration", "version": 1, "model": "tiny", "layers": 2,
           "unit_tokens": [1, 4, 9], "classes": [0], "seed": 0, "cfg": 4.0, "decision_scales": [2],
           "demanding_fraction": 0.5, "theta": 0.5, "layer_statistic": [0.4, 0.6],
           "similarity": [[[0.9, 0.4], [0.8, 0.6]]]})",
       [](const std::string& t, const std::string& s) { AmsKvCalibration::from_json_text(t, s); },
       [](const std::string& p) { AmsKvCalibration::load(p); }},
      {"hack", "kvstudio-head-variance-profile", "a HACK head calibration",
       R"({"format": "kvstudio-head-variance-profile", "version": 1, "model": "tiny", "layers": 2, "heads": 2,
           "unit_tokens": [1, 4, 9], "classes": [0, 1], "seed": 0, "cfg": 4.0, "samples": 2,
           "variance": [0, 1.5, 2.0, 0, 0.5, 0.25, 0, 3.0, 2.5, 0, 0.1, 0.2]})",
       [](const std::string& t, const std::string& s) { HeadVarianceProfile::from_json_text(t, s); },
       [](const std::string& p) { HeadVarianceProfile::load(p); }},
      {"scalekv", "kvstudio-scalekv-calibration", "a ScaleKV calibration",
       R"({"format": "kvstudio-scalekv-calibration", "version": 1, "model": "tiny", "layers": 2,
           "unit_tokens": [1, 4, 9], "top_k": 16, "classes": [0, 1], "seed": 0, "cfg": 4.0, "samples": 2,
           "current_ratio": [1.0, 0.6, 0.4, 1.0, 0.3, 0.2], "history_top_k": [0, 0.4, 0.5, 0, 0.7, 0.8]})",
       [](const std::string& t, const std::string& s) { LayerSelectivityProfile::from_json_text(t, s); },
       [](const std::string& p) { LayerSelectivityProfile::load(p); }},
  };
}

// The FormatError's message; "accepted" when none is thrown, and a marked
// message for any other exception (the defect these tests guard against).
std::string refusal(const std::function<void()>& read) {
  try {
    read();
  } catch (const FormatError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("NOT A kvs::FormatError: ") + e.what();
  }
  return "accepted";
}

// `valid` with `key` set to the JSON `value` (or removed when `value` is empty).
std::string with(const std::string& valid, const std::string& key, const std::string& value) {
  nlohmann::json j = nlohmann::json::parse(valid);
  if (value.empty()) j.erase(key);
  else j[key] = nlohmann::json::parse(value);
  return j.dump();
}

TEST(CalibrationFiles, EveryFormatAcceptsItsOwnFileAndRefusesTheOthers) {
  for (const Format& f : formats())
    for (const Format& g : formats()) {
      const std::string m = refusal([&] { f.parse(g.valid, "x.json"); });
      if (f.name == g.name) {
        EXPECT_EQ(m, "accepted") << f.name;
      } else {
        EXPECT_EQ(m, "x.json: not " + f.kind + ": format is not '" + f.id + "'") << f.name << " on " << g.name;
      }
    }
}

// The inputs the calibration fuzzer replays first: before the one header
// reader, "format": 5 threw nlohmann's type_error out of the HACK and ScaleKV
// parsers (their copies of the header code had missed the fix the other two
// got), HACK's layers x heads x scales overflowed to 0 and accepted an empty
// table, its version 2^32 + 1 wrapped to 1, and 1e300 layers was cast to an
// integer (undefined behaviour in all four).
TEST(CalibrationFiles, FuzzRegressionInputsAreFormatErrorsNamingFileAndProblem) {
  const std::filesystem::path dir = std::filesystem::path(KVSTUDIO_SOURCE_DIR) / "tests/fuzz/regressions/calibration";
  // file -> format -> what its error says; any other pair is a file of another format.
  const std::map<std::string, std::map<std::string, std::string>> expected = {
      {"hack-table-size-overflow.json",
       {{"hack", "variance has 0 values, expected layers x heads x scales = more than 2^63"}}},
      {"hack-version-wraps-to-1.json", {{"hack", "unsupported version 4294967297"}}},
      {"scalekv-layers-not-an-integer.json", {{"scalekv", "field \"layers\" must be an integer, got 1e+300"}}},
  };
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string path = entry.path().string(), name = entry.path().filename().string();
    ++files;
    for (const Format& f : formats()) {
      std::string why = "format is not '" + f.id + "'";
      if (const auto file = expected.find(name); file != expected.end())
        if (const auto it = file->second.find(f.name); it != file->second.end()) why = it->second;
      EXPECT_EQ(refusal([&] { f.load(path); }), path + ": not " + f.kind + ": " + why) << f.name;
    }
  }
  EXPECT_GE(files, 6) << "the regression inputs are missing from " << dir;
}

TEST(CalibrationFiles, TheSharedHeaderIsRefusedWithTheSameWordsInEveryFormat) {
  // {field, JSON value ("" = removed), what is wrong}
  const std::vector<std::vector<std::string>> cases = {
      {"version", "", "field \"version\" is missing"},
      {"version", "\"1\"", "unsupported version \"1\""},
      {"version", "4294967297", "unsupported version 4294967297"},
      {"model", "5", "field \"model\" must be a string, got 5"},
      {"layers", "", "field \"layers\" is missing"},
      {"layers", "2.5", "field \"layers\" must be an integer, got 2.5"},
      {"layers", "9223372036854775808", "field \"layers\" is 9223372036854775808, more than 2^63 - 1"},
      {"layers", "0", "layers (1..4096) and 2..4096 scales are required, got 0 layers and 3 scales"},
      {"layers", "4097", "layers (1..4096) and 2..4096 scales are required, got 4097 layers and 3 scales"},
      {"unit_tokens", "\"1 4 9\"", "field \"unit_tokens\" must be a list, got a string"},
      {"unit_tokens", "[1, null, 9]", "field \"unit_tokens\"[1] must be an integer, got null"},
      {"unit_tokens", "[1]", "layers (1..4096) and 2..4096 scales are required, got 2 layers and 1 scales"},
      {"unit_tokens", "[1, 0, 9]", "a scale has no tokens (0)"},
      {"classes", "{}", "field \"classes\" must be a list, got an object"},
      {"seed", "-1", "field \"seed\" must be an integer >= 0, got -1"},
      {"cfg", "\"4\"", "field \"cfg\" must be a number, got a string"},
      {"cfg", "true", "field \"cfg\" must be a number, got a boolean"},
  };
  for (const Format& f : formats()) {
    for (const auto& c : cases) {
      std::string text = with(f.valid, c[0], c[1]);
      // HeatKV's file has one layer; a layer count must differ from it for the same words.
      if (f.name == "heatkv" && c[2].find("got 2 layers") != std::string::npos) text = with(text, "layers", "2");
      EXPECT_EQ(refusal([&] { f.parse(text, "dir/x.json"); }), "dir/x.json: not " + f.kind + ": " + c[2])
          << f.name << ": " << c[0] << " = " << c[1];
    }
    EXPECT_EQ(refusal([&] { f.parse("{", "x.json"); }).rfind("x.json: not " + f.kind + ": invalid JSON (", 0), 0u)
        << f.name;
    EXPECT_EQ(refusal([&] { f.parse("[1, 2]", "x.json"); }),
              "x.json: not " + f.kind + ": format is not '" + f.id + "'");
    EXPECT_EQ(refusal([&] { f.parse(with(f.valid, "format", "5"), "x.json"); }),
              "x.json: not " + f.kind + ": format is not '" + f.id + "'");
  }
}

TEST(CalibrationFiles, EachFormatsOwnFieldsAreReadAsStrictlyAsTheHeader) {
  const std::vector<Format> all = formats();
  auto message = [&](size_t i, const std::string& key, const std::string& value) {
    return refusal([&] { all[i].parse(with(all[i].valid, key, value), "x.json"); });
  };
  EXPECT_EQ(message(0, "beta", ""), "x.json: not a scale-attention calibration: field \"beta\" is missing");
  EXPECT_EQ(message(0, "heads", "0"), "x.json: not a scale-attention calibration: at least one head is required");
  EXPECT_EQ(message(0, "heads", "4611686018427387904"),
            "x.json: not a scale-attention calibration: beta has 18 values, expected layers x heads x scales^2 = more "
            "than 2^63");
  EXPECT_EQ(message(1, "similarity", "[[[0.9, \"x\"], [0.8, 0.6]]]"),
            "x.json: not an AMS-KV calibration: field \"similarity\"[0][0][1] must be a number, got a string");
  EXPECT_EQ(message(1, "decision_scales", "[1.5]"),
            "x.json: not an AMS-KV calibration: field \"decision_scales\"[0] must be an integer, got 1.5");
  EXPECT_EQ(message(2, "heads", "\"2\""),
            "x.json: not a HACK head calibration: field \"heads\" must be an integer, got "
            "a string");
  EXPECT_EQ(message(2, "samples", "-0.5"),
            "x.json: not a HACK head calibration: field \"samples\" must be an integer, got -0.5");
  EXPECT_EQ(message(3, "top_k", "1e300"),
            "x.json: not a ScaleKV calibration: field \"top_k\" must be an integer, got 1e+300");
  EXPECT_EQ(message(3, "history_top_k", "\"many\""),
            "x.json: not a ScaleKV calibration: field \"history_top_k\" must be a list, got a string");
}

}  // namespace
}  // namespace kvs
