#pragma once
// The contract every model family fulfils. A family is a folder under
// engine/models/ (network, bundle loader, converter, random-bundle writer, its
// generation session) plus one line in engine/models/family_registry.cpp; the
// CLI, the benchmark and the window reach it only through this interface and
// its FamilyDescription. Torch-free: tensors stay inside the family.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/cache/policies/policy_spec.h"
#include "engine/conformance/conformance_report.h"
#include "engine/session/family_description.h"
#include "engine/session/generation_events.h"
#include "engine/session/generation_request.h"
#include "engine/session/generation_result.h"

namespace kvs {

struct DeviceChoice;
struct ModelSummary;
namespace io {
struct ModelBundle;
}

// Named command-line options handed to a family (`convert`, `create-random`):
// the CLI parses the words, the family reads what it understands. Every read
// marks an option used; the caller refuses options nobody read, naming them.
class FamilyOptions {
 public:
  FamilyOptions() = default;
  explicit FamilyOptions(std::map<std::string, std::string> values) : values_(std::move(values)) {}

  bool has(const std::string& name) const;
  std::string get(const std::string& name, const std::string& fallback) const;
  std::string require(const std::string& name) const;  // throws InvalidArgumentError naming the option
  int64_t get_int(const std::string& name, int64_t fallback) const;
  uint64_t get_u64(const std::string& name, uint64_t fallback) const;
  std::vector<int64_t> get_int_list(const std::string& name) const;  // "1,2,3"
  // Options given but never read, in name order.
  std::vector<std::string> unused() const;
  // Throws InvalidArgumentError "option --x does not apply to <what>" for the
  // first option never read: families call it once they have read their
  // options, before the work starts.
  void refuse_unused(const std::string& what) const;

 private:
  std::map<std::string, std::string> values_;
  mutable std::map<std::string, bool> read_;
};

using ProgressCallback = std::function<void(double fraction, const std::string& stage)>;

// What `kvstudio-cli info` prints about a bundle, after the weights were checked.
struct BundleInfo {
  std::vector<std::pair<std::string, std::string>> lines;  // label, text (text may hold '\n')
  nlohmann::json json;                                     // the same for --json
};

// What a running generation needs from the session that drives it.
struct RunContext {
  EventSink* sink = nullptr;
  std::string bundle_dir;
  std::string device_description;
  int cuda_index = -1;  // the CUDA device of the run, -1 on the CPU
  std::function<bool()> cancelled;
  // A policy change requested so far, taken at each unit boundary; families
  // whose policy cannot change mid-run never call it.
  std::function<std::optional<std::string>()> take_policy_change;

  void emit(const GenerationEvent& event) const {
    if (sink) sink->on_event(event);
  }
};

// A family's model, loaded on a device, with whatever the family keeps between
// runs (e.g. a calibration computed on first use).
class LoadedModel {
 public:
  virtual ~LoadedModel() = default;
  virtual std::string name() const = 0;
  // Runs to completion on the calling thread; emits StartedEvent, progress,
  // UnitDoneEvents and policy changes (not Finished/Failed: the session does).
  virtual GenerationResult run(const GenerationRequest& request, const RunContext& context) = 0;
};

// `kvstudio-cli calibrate`: what to measure and where to store it.
struct CalibrationRequest {
  std::string policy;
  std::vector<int64_t> classes;  // empty: `images` classes spread over the model's classes
  // Class-conditional families: classes; text-to-image: the first `images`
  // calibration prompts. 0: the family's default for the policy.
  int64_t images = 0;
  double cfg = -1;         // < 0: the family's default
  std::string image_size;  // families with several image sizes: the size calibrated ("" : the model's own)
  uint64_t seed = 0;
  std::string out;  // empty: the bundle's own calibration file
  // AMS-KV: the share of layers theta makes cache-demanding (0: the default, 1/6).
  double demanding_fraction = 0;
  std::string command;  // the command line, recorded in the calibration when known
};

// `bench --random ARCH`: a randomly initialised model of a named architecture.
struct RandomArchitecture {
  nlohmann::json manifest;  // its model.json, known before any weights exist
  // Writes the bundle (model.json and random weights) into `dir`.
  std::function<void(const std::string& dir, uint64_t seed, const std::string& dtype)> write;
};

// The geometry a policy is checked on before a run (`bench` refuses impossible
// budgets before its first, possibly long, run).
struct PolicyCheck {
  int64_t batch = 1;
  double cfg_scale = 1.0;
  uint64_t seed = 0;
};

class ModelFamily {
 public:
  virtual ~ModelFamily() = default;
  virtual const FamilyDescription& description() const = 0;
  const std::string& name() const { return description().name; }

  // Loads the bundle's weights on the device, checking every tensor's name,
  // shape and dtype (FormatError naming file and tensor).
  virtual std::unique_ptr<LoadedModel> load(const io::ModelBundle& bundle, const DeviceChoice& device) const = 0;

  // Fills the family's fields of a catalog summary from model.json alone
  // (architecture line, grid, layers and heads, KV bytes per token, parameter
  // count, scale sides). Throws for an unreadable architecture section.
  virtual void summarize(const io::ModelBundle& bundle, ModelSummary& summary) const = 0;

  // `info`: loads on the CPU (so every tensor is checked) and describes the bundle.
  virtual BundleInfo inspect(const io::ModelBundle& bundle) const = 0;

  // `convert --family NAME`: official checkpoint(s) -> bundle; returns the
  // one-line report the CLI prints.
  virtual std::string convert(const FamilyOptions& options, const ProgressCallback& progress) const = 0;

  // `create-random --preset P` for one of description().random_presets.
  virtual std::string write_random(const std::string& preset, const FamilyOptions& options) const = 0;

  // `bench --random ARCH` for an ARCH named "<family>-..." (e.g. "llamagen-B@384",
  // "var-d16", "mar-demo"); throws InvalidArgumentError "--random: unknown
  // architecture 'ARCH' (expected ...)" for a name it does not know.
  virtual RandomArchitecture random_architecture(const std::string& architecture) const = 0;

  // Builds policy `spec` on the model's geometry and throws InvalidArgumentError
  // (with the registry's or the family's message) when the model cannot run it:
  // unknown or malformed, of another family, or a budget that cannot fit.
  virtual void check_policy(const io::ModelBundle& bundle, const PolicySpec& spec, const PolicyCheck& check) const = 0;
  // The same for a spec still in text (parsed here; a malformed one is refused the same way).
  void check_policy(const io::ModelBundle& bundle, const std::string& spec, const PolicyCheck& check) const {
    check_policy(bundle, parse_policy_spec(spec), check);
  }

  // `verify`: whether a conformance case (reference outputs of the official code,
  // docs/conformance.md) is one of this family's, judged from its manifest; and
  // running every check it defines on `device`.
  bool owns_conformance_case(const nlohmann::ordered_json& manifest) const;
  virtual ConformanceReport run_conformance_case(const nlohmann::ordered_json& manifest, const std::string& dir,
                                                 const DeviceChoice& device) const = 0;

  // `calibrate`: measures what a policy needs offline and stores it beside the
  // bundle; returns the report. Only for description().calibrated_policies.
  virtual std::string calibrate(const io::ModelBundle& bundle, const DeviceChoice& device,
                                const CalibrationRequest& request) const;
};

}  // namespace kvs
