// The model-family registry and contract: every family describes itself
// consistently, writes a random bundle that the catalog, the loader and a
// generation accept, and refuses what it cannot do with a message naming it.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "engine/cache/policies/policy_catalog.h"
#include "engine/core/errors.h"
#include "engine/io/model_bundle.h"
#include "engine/models/family_registry.h"
#include "engine/models/generation_session.h"
#include "engine/models/model_catalog.h"
#include "engine/training/trainable_families.h"
#include "tests/engine/test_helpers.h"

namespace kvs {
namespace {

// The events of one run, as a listener sees them.
struct RecordingSink : EventSink {
  std::vector<GenerationEvent> events;
  void on_event(const GenerationEvent& e) override { events.push_back(e); }
  template <typename T>
  std::vector<T> of() const {
    std::vector<T> out;
    for (const auto& e : events)
      if (const T* t = std::get_if<T>(&e)) out.push_back(*t);
    return out;
  }
};

// The smallest preset of each family (the demo architectures).
std::string demo_preset(const ModelFamily& family) {
  for (const std::string& p : family.description().random_presets)
    if (p.find("demo") != std::string::npos) return p;
  // A family without a trained demo: its smallest preset.
  for (const std::string& p : family.description().random_presets)
    if (p.find("tiny") != std::string::npos) return p;
  return family.description().random_presets.front();
}

TEST(ModelFamilies, RegistryListsEachFamilyOnceWithACompleteDescription) {
  const auto& families = model_families();
  ASSERT_EQ(families.size(), 6u);
  std::set<std::string> names;
  for (const ModelFamily* f : families) {
    const FamilyDescription& d = f->description();
    SCOPED_TRACE(d.name);
    EXPECT_TRUE(names.insert(d.name).second) << "duplicate family name";
    EXPECT_FALSE(d.display_name.empty());
    EXPECT_FALSE(d.summary.empty());
    EXPECT_FALSE(d.grid.empty());
    EXPECT_TRUE(d.measures_kv_bytes || d.measures_flops) << "a family measures its cost somehow";
    EXPECT_TRUE(d.policy_family == "raster" || d.policy_family == "scale" || d.policy_family == "masked");
    EXPECT_FALSE(d.random_presets.empty());
    EXPECT_FALSE(d.convert_usage.empty());
    EXPECT_EQ(&find_model_family(d.name), f);
    EXPECT_EQ(find_family_description(d.name), &d);
    // Every example a comparison offers is a valid spec of a policy serving this family.
    for (const std::string& spec : d.compare_presets) {
      if (spec.empty()) continue;
      SCOPED_TRACE(spec);
      EXPECT_EQ(policy_spec_problem(spec), "");
      const PolicyDescription* entry = find_policy_entry(parse_policy_spec(spec).name);
      ASSERT_NE(entry, nullptr);
      EXPECT_NE(std::find(entry->families.begin(), entry->families.end(), d.policy_family), entry->families.end());
    }
  }
  EXPECT_EQ(supported_family_names(), "llamagen, var, mar, janus-pro, lumina-mgpt, infinity");
  EXPECT_EQ(find_model_family("lumina-mgpt").description().conditioning, Conditioning::Text);
  EXPECT_EQ(find_model_family("janus-pro").description().conditioning, Conditioning::Text);
  EXPECT_EQ(find_model_family("var").description().unit_name(), "scale");
  EXPECT_EQ(find_model_family("mar").description().unit_name(), "step");
}

TEST(ModelFamilies, UnknownFamilyIsRefusedNamingTheSupportedOnes) {
  EXPECT_EQ(lookup_model_family("parti"), nullptr);
  EXPECT_EQ(find_family_description("parti"), nullptr);
  try {
    find_model_family("parti");
    FAIL() << "no error";
  } catch (const InvalidArgumentError& e) {
    EXPECT_STREQ(
        e.what(),
        "model family 'parti' is not supported (supported: llamagen, var, mar, janus-pro, lumina-mgpt, infinity)");
  }
}

TEST(ModelFamilies, EachFamilyWritesSummarizesLoadsAndGeneratesItsDemoPreset) {
  for (const ModelFamily* family : model_families()) {
    const FamilyDescription& d = family->description();
    SCOPED_TRACE(d.name);
    test::TempDir dir;
    const std::string preset = demo_preset(*family);
    const bool text = d.conditioning == Conditioning::Text;
    std::map<std::string, std::string> options = {{"--out", dir.path().string()}, {"--seed", "5"}};
    if (!text) options["--classes"] = "3";
    const std::string report = family->write_random(preset, FamilyOptions(options));
    EXPECT_NE(report.find("random weights"), std::string::npos) << report;

    const ModelSummary summary = summarize_model_bundle(dir.path().string());
    ASSERT_TRUE(summary.usable()) << summary.problem;
    EXPECT_EQ(summary.family, d.name);
    EXPECT_EQ(summary.num_classes, text ? 0 : 3);
    EXPECT_GT(summary.grid, 0);
    EXPECT_EQ(summary.kv_bytes_per_token > 0, d.measures_kv_bytes);

    const BundleInfo info = family->inspect(io::ModelBundle::open(dir.path().string()));
    EXPECT_FALSE(info.lines.empty());
    EXPECT_TRUE(info.json.contains("weights_dtypes"));

    GenerationRequest request;
    request.model_path = dir.path().string();
    if (text) request.prompt = "a red fox in fresh snow";
    else request.class_ids = {2};
    request.device = "cpu";
    request.threads = 1;
    if (d.has_request_option("steps")) request.steps = 4;
    RecordingSink sink;
    GenerationSession session;
    const GenerationResult result = session.run(request, &sink);
    ASSERT_EQ(result.images.size(), 1u);
    const auto started = sink.of<StartedEvent>();
    ASSERT_EQ(started.size(), 1u);
    EXPECT_EQ(started[0].family, d.name);
    EXPECT_EQ(started[0].unit_name, d.unit_name());
    const auto units = sink.of<UnitDoneEvent>();
    ASSERT_EQ(static_cast<int64_t>(units.size()), started[0].units_total);
    EXPECT_EQ(units.back().flops > 0, d.overlays.flops);
    EXPECT_EQ(result.kv_bytes_full > 0, d.measures_kv_bytes);
    EXPECT_EQ(result.flops > 0, d.measures_flops);
    ASSERT_EQ(sink.of<FinishedEvent>().size(), 1u);
    EXPECT_DOUBLE_EQ(sink.of<FinishedEvent>()[0].flops, result.flops);
  }
}

TEST(ModelFamilies, OptionsAFamilyDoesNotReadAreRefusedBeforeAnyWork) {
  test::TempDir dir;
  const ModelFamily& var = find_model_family("var");
  try {
    var.write_random("var-demo", FamilyOptions({{"--out", dir.path().string()}, {"--tokenizer", "VQ-8"}}));
    FAIL() << "no error";
  } catch (const InvalidArgumentError& e) {
    EXPECT_STREQ(e.what(), "option --tokenizer does not apply to preset var-demo");
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "model.json")) << "nothing written";
  try {
    find_model_family("llamagen")
        .convert(
            FamilyOptions(
                {{"--checkpoint", "a.pt"}, {"--tokenizer", "b.pt"}, {"--out", dir.file("c")}, {"--weights", "ema"}}),
            nullptr);
    FAIL() << "no error";
  } catch (const InvalidArgumentError& e) {
    EXPECT_STREQ(e.what(), "option --weights does not apply to --family llamagen");
  }
}

TEST(ModelFamilies, RandomArchitecturesAndPolicyChecksComeFromTheFamily) {
  const RandomArchitecture arch = find_model_family("llamagen").random_architecture("llamagen-B@256");
  io::ModelBundle bundle;
  bundle.manifest = arch.manifest;
  ModelSummary summary;
  find_model_family("llamagen").summarize(bundle, summary);
  EXPECT_EQ(summary.grid, 16);
  EXPECT_EQ(summary.n_layer, 12);
  // 256 image tokens: 1 % of them cannot hold LineAR's anchor and recent lines.
  const ModelFamily& llamagen = find_model_family("llamagen");
  EXPECT_NO_THROW(llamagen.check_policy(bundle, "linear:rho=1/4", PolicyCheck{2, 4.0, 0}));
  EXPECT_THROW(llamagen.check_policy(bundle, "linear:rho=1/100", PolicyCheck{2, 4.0, 0}), InvalidArgumentError);
  EXPECT_THROW(llamagen.check_policy(bundle, "amskv", PolicyCheck{2, 4.0, 0}), InvalidArgumentError);
  try {
    llamagen.random_architecture("llamagen-Q@256");
    FAIL() << "no error";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("--random: unknown architecture 'llamagen-Q@256'"), std::string::npos);
  }
  const RandomArchitecture mar = find_model_family("mar").random_architecture("mar-demo");
  io::ModelBundle mar_bundle;
  mar_bundle.manifest = mar.manifest;
  EXPECT_NO_THROW(find_model_family("mar").check_policy(mar_bundle, "lazymar:interval=4", PolicyCheck{}));
  EXPECT_THROW(find_model_family("mar").check_policy(mar_bundle, "linear:rho=1/4", PolicyCheck{}),
               InvalidArgumentError);
}

TEST(ModelFamilies, TrainableFamiliesAreModelFamiliesWithTheirOwnSamplingDefaults) {
  ASSERT_EQ(training::trainable_families().size(), 4u);
  for (const training::TrainableFamily& t : training::trainable_families()) {
    SCOPED_TRACE(t.name);
    const ModelFamily* family = lookup_model_family(t.name);
    ASSERT_NE(family, nullptr);
    // A family that takes decoding steps records them; the others record token sampling.
    EXPECT_EQ(t.sampling_defaults.contains("steps"), family->description().has_request_option("steps"));
    EXPECT_EQ(t.sampling_defaults.contains("top_k"), family->description().discrete_tokens);
    EXPECT_TRUE(t.export_bundle);
    EXPECT_TRUE(t.load_for_evaluation);
  }
  try {
    training::find_trainable_family("infinity");
    FAIL() << "no error";
  } catch (const InvalidArgumentError& e) {
    EXPECT_STREQ(e.what(),
                 "model family 'infinity' has no demo-model training (trainable: llamagen, var, mar, janus-pro)");
  }
}

}  // namespace
}  // namespace kvs
