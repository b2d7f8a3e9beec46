#pragma once
// What a model family is, as the CLI, the benchmark and the window need to know
// it: plain values, torch-free and Qt-free, filled in by each family
// (engine/models/<family>/<family>_family.cpp) and listed by the family registry
// (engine/models/family_registry.h). Code outside a family folder asks here
// instead of comparing family names.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kvs {

// What one streamed unit of generation is: a token line of a raster model, one
// scale of a next-scale model, one decoding step of a masked model.
enum class GenerationUnit { Line, Scale, Step };

// What a request conditions on.
enum class Conditioning { ClassLabel, Text };

// "line", "scale", "step" (StartedEvent::unit_name).
std::string unit_noun(GenerationUnit unit);

// The per-unit overlays a family's UnitDoneEvents carry (besides memory and
// timing, which every family reports).
struct FamilyOverlays {
  bool attention_map = false;      // UnitDoneEvent::attention (per-position attention of the unit's last query)
  bool retained_masks = false;     // UnitDoneEvent::retained (which positions each (layer, head) still caches)
  bool scale_matrix = false;       // attention mass between scales and cached share per head x scale
  bool recomputed_tokens = false;  // UnitDoneEvent::recomputed and predicted_positions (feature caches)
  bool flops = false;              // UnitDoneEvent::flops (FLOPs executed per unit)
};

struct FamilyDescription {
  std::string name;          // model.json "family", `--family`: "llamagen"
  std::string display_name;  // for people: "raster (LlamaGen)"
  std::string summary;       // one line for `info`: "class-conditional, raster next-token"
  GenerationUnit unit = GenerationUnit::Line;
  Conditioning conditioning = Conditioning::ClassLabel;
  std::string grid;               // how the image tokens are laid out, one phrase
  bool measures_kv_bytes = true;  // generation grows a KV cache the KvStore accounts in bytes
  bool measures_flops = false;    // generation counts its FLOPs (per unit and per image)
  // GenerationResult::tokens are token ids that two runs can compare (false:
  // continuous tokens; the result lists each image's generation order instead).
  bool discrete_tokens = true;
  FamilyOverlays overlays;
  // The policy family the family's policies declare (PolicyDescription::families):
  // "raster", "scale" or "masked".
  std::string policy_family;
  // Example policy specs for a side-by-side comparison ("" = the pane is off).
  std::vector<std::string> compare_presets;
  // GenerationRequest fields beyond the common ones that apply to this family
  // ("steps", "cfg_schedule"); the CLI refuses them for other families.
  std::vector<std::string> request_options;
  // `create-random --preset` names this family writes.
  std::vector<std::string> random_presets;
  // `convert` and `create-random` usage lines (options after --family / --preset).
  std::string convert_usage;
  std::string create_random_usage;
  // What `convert` reads, for the window's import form: one downloaded folder
  // (--checkpoint DIR, e.g. a Hugging Face model folder) or a checkpoint file
  // plus a tokenizer file (--checkpoint FILE --tokenizer FILE).
  bool converts_from_folder = false;
  // Families that convert from several parts (Infinity: transformer, VAE, T5):
  // one field per `convert` option, in this order; empty: the form above.
  struct ConvertInput {
    std::string option;       // "--vae"
    std::string label;        // "BSQ-VAE"
    std::string placeholder;  // what to pick there
    bool folder = false;      // the browse button picks a folder, else a file
  };
  std::vector<ConvertInput> convert_inputs;
  // The constructor a conformance case of this family names in its manifest
  // ("constructors": {"gpt": ...}): how `verify` tells the case's family.
  std::string conformance_constructor;
  // The calibrations `kvstudio-cli calibrate --policy` can store in a bundle.
  std::vector<std::string> calibrated_policies;
  // Those of them a run makes on the way when the bundle has none (HeatKV,
  // ScaleKV); the others fall back to defaults (AMS-KV keeps the paper's theta).
  struct FirstUseCalibration {
    std::string policy;  // registry name ("heatkv")
    std::string label;   // how the window names it ("HeatKV")
    std::string file;    // the bundle file that makes it unnecessary
    std::string work;    // what it measures, for the window ("S-CAS head scores on 2 classes")
    // The policy's parameter that names its own calibration set (HeatKV's
    // calibration_images; empty: none). N > 0 is measured on first use per N,
    // on N classes spread over the model's.
    std::string images_param;
    std::function<std::string(int64_t images)> images_work;  // `work` for N > 0
    // The CFG a run of `spec` at `run_cfg` measures its calibration at (HeatKV's
    // calibration_cfg, else the run's); unset: the run's. A calibration is made
    // once per set and CFG.
    std::function<double(const std::string& spec, double run_cfg)> calibration_cfg;
    // Whether the bundle's file serves a run of `spec` at CFG `run_cfg` (it was
    // measured with the settings the spec asks: classes, CFG, seed); unset: any
    // file serves.
    std::function<bool(const std::string& bundle_dir, int64_t num_classes, const std::string& spec, double run_cfg)>
        file_serves;
  };
  std::vector<FirstUseCalibration> calibrated_on_first_use;

  std::string unit_name() const { return unit_noun(unit); }
  bool has_request_option(const std::string& option) const;
  bool has_random_preset(const std::string& preset) const;
};

}  // namespace kvs
