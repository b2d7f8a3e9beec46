// Janus-Pro end to end on the engine side: a folder laid out like the official
// Hugging Face download (made by tests/data/make_janus_hf_folder.py from the
// conformance weights and a tokenizer trained with the `tokenizers` library)
// converts from either shard format, loads with its tokenizer and generates
// from a prompt; the cached decode agrees with the teacher-forced forward;
// every raster policy runs with the prompt kept as its condition; bad requests
// fail with messages that say what to do; a bf16 run decodes its images in bf16,
// as the official program does.
#include <gtest/gtest.h>

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "engine/bench/policy_bench.h"
#include "engine/cache/policies/policy_registry.h"
#include "engine/core/errors.h"
#include "engine/io/model_bundle.h"
#include "engine/io/safetensors_reader.h"
#include "engine/metrics/process_memory.h"
#include "engine/models/generation_session.h"
#include "engine/models/janus/janus_converter.h"
#include "engine/models/janus/janus_generation.h"
#include "engine/models/janus/janus_model.h"
#include "engine/models/janus/janus_prompt.h"
#include "engine/models/janus/janus_random_init.h"
#include "engine/models/llamagen/llamagen_random_init.h"
#include "engine/text/bpe_tokenizer.h"
#include "tests/engine/test_helpers.h"

using namespace kvs;
namespace fs = std::filesystem;

namespace {

std::string hf_dir(const std::string& layout) {
  const char* dir = std::getenv("KVSTUDIO_JANUS_HF_DIR");
  return dir ? (fs::path(dir) / layout).string() : std::string();
}

#define REQUIRE_HF_FOLDER()                                                                                          \
  if (const std::string why = test::fixture_skip_reason(                                                             \
          fs::exists(hf_dir("safetensors") + "/config.json") ? hf_dir("safetensors") : "", "KVSTUDIO_JANUS_HF_DIR"); \
      !why.empty())                                                                                                  \
  GTEST_SKIP() << why

std::string convert(const std::string& layout, const test::TempDir& out) {
  janus::JanusConvertOptions o;
  o.checkpoint = hf_dir(layout);
  o.out_dir = out.file(layout);
  o.image_size = 32;  // the conformance decoder: 8x8 tokens of 4 px
  janus::convert_janus_checkpoint(o);
  return o.out_dir;
}

struct Events : EventSink {
  std::vector<StartedEvent> started;
  std::vector<UnitDoneEvent> units;
  void on_event(const GenerationEvent& e) override {
    if (auto* s = std::get_if<StartedEvent>(&e)) started.push_back(*s);
    if (auto* u = std::get_if<UnitDoneEvent>(&e)) units.push_back(*u);
  }
};

GenerationRequest prompt_request(const std::string& bundle, const std::string& prompt) {
  GenerationRequest r;
  r.model_path = bundle;
  r.prompt = prompt;
  r.images = 2;
  r.seed = 7;
  r.cfg_scale = 5.0;
  r.device = "cpu";
  r.threads = 1;
  return r;
}

using test::error_of;

}  // namespace

TEST(JanusConverter, BothOfficialShardFormatsConvertToTheSameBundle) {
  REQUIRE_HF_FOLDER();
  test::TempDir out;
  const std::string a = convert("safetensors", out), b = convert("bin", out);
  auto ra = io::SafetensorsReader::open(a + "/weights.safetensors");
  auto rb = io::SafetensorsReader::open(b + "/weights.safetensors");
  ASSERT_EQ(ra->names(), rb->names());
  for (const auto& name : ra->names()) EXPECT_TRUE(at::equal(ra->tensor(name), rb->tensor(name))) << name;
  // Only the generation path is kept: no understanding tower, text head or VQ encoder.
  for (const auto& name : ra->names()) {
    EXPECT_NE(name.rfind("vision_model.", 0), 0u) << name;
    EXPECT_NE(name.rfind("aligner.", 0), 0u) << name;
    EXPECT_EQ(name.find("lm_head"), std::string::npos) << name;
    EXPECT_EQ(name.find(".encoder."), std::string::npos) << name;
    EXPECT_EQ(name.rfind("gen_vision_model.quant_conv", 0), std::string::npos) << name;
  }
  EXPECT_TRUE(fs::exists(a + "/tokenizer/tokenizer.json"));
  EXPECT_TRUE(fs::exists(a + "/tokenizer/special_tokens_map.json"));
  // The conformance weights, bit for bit.
  auto reference = io::SafetensorsReader::open(test::conformance_dir() + "/janus_pro_tiny.weights.safetensors");
  for (const auto& name : reference->names()) EXPECT_TRUE(at::equal(reference->tensor(name), ra->tensor(name))) << name;
}

TEST(JanusConverter, RefusesFoldersThatAreNotJanusPro) {
  REQUIRE_HF_FOLDER();
  test::TempDir dir;
  fs::copy(hf_dir("safetensors"), dir.file("copy"));
  janus::JanusConvertOptions o;
  o.checkpoint = dir.file("copy");
  o.out_dir = dir.file("out");
  o.image_size = 32;
  // A shard the index names is missing.
  fs::remove(dir.file("copy/model-00002-of-00002.safetensors"));
  EXPECT_NE(error_of([&] { janus::convert_janus_checkpoint(o); }).find("model-00002-of-00002.safetensors"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(dir.file("out/model.json")));
  // A config whose language model does not match the tensors.
  fs::remove_all(dir.file("copy"));
  fs::copy(hf_dir("safetensors"), dir.file("copy"));
  {
    std::ifstream in(dir.file("copy/config.json"));
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    text.replace(text.find("\"num_hidden_layers\": 2"), 22, "\"num_hidden_layers\": 3");
    std::ofstream(dir.file("copy/config.json")) << text;
  }
  EXPECT_NE(error_of([&] { janus::convert_janus_checkpoint(o); }).find("layers.2."), std::string::npos);
  // The default 384 px generation does not fit this tiny context: the message says how to set it.
  o.image_size = 384;
  fs::remove_all(dir.file("copy"));
  fs::copy(hf_dir("safetensors"), dir.file("copy"));
  EXPECT_NE(error_of([&] { janus::convert_janus_checkpoint(o); }).find("--image-size"), std::string::npos);
}

TEST(JanusModel, CachedGenerationAgreesWithTheTeacherForcedForward) {
  REQUIRE_HF_FOLDER();
  test::TempDir out;
  const io::ModelBundle bundle = io::ModelBundle::open(convert("safetensors", out));
  const janus::JanusModel model = janus::JanusModel::load(bundle, at::kCPU, at::kFloat);
  const janus::PromptRows rows = janus::build_prompt_rows(*model.tokenizer, model.config, "a red cat on a sofa", "");
  // The template around the prompt: BOS first, the image-start tag last.
  EXPECT_EQ(rows.cond.front(), 590);
  EXPECT_EQ(rows.cond.back(), 598);
  for (size_t i = 1; i + 1 < rows.uncond.size(); ++i) EXPECT_EQ(rows.uncond[i], 597);
  raster::RasterParams params;
  params.cfg_scale = 1.0;
  params.sampling.sample = false;
  const at::Tensor cond = at::tensor(rows.cond);
  auto result = janus::generate_from_prompt(model, cond, at::Tensor(), 1, params);
  // Teacher forcing over [prompt; tokens]: each greedy token is the argmax of
  // the logits at the position before it.
  const int64_t p = cond.size(0);
  at::Tensor tokens = result.tokens;  // [1, N]
  at::Tensor embeds = at::cat({model.language->embed_text(cond.unsqueeze(0)),
                               model.image_embeds(tokens.narrow(1, 0, tokens.size(1) - 1))},
                              1);
  at::Tensor hidden = model.language->forward(embeds, 0, nullptr);
  at::Tensor logits = model.image_logits(hidden.narrow(1, p - 1, tokens.size(1)));
  EXPECT_TRUE(at::equal(logits.argmax(-1), tokens));
}

TEST(JanusSession, PromptGeneratesThroughTheSessionWithItsTokensAsCondition) {
  REQUIRE_HF_FOLDER();
  test::TempDir out;
  const std::string bundle = convert("bin", out);
  GenerationSession session;
  Events events;
  GenerationRequest r = prompt_request(bundle, "A photo of a cat sitting on a red sofa");
  r.emit_attention_map = true;
  r.emit_retained_masks = true;
  const GenerationResult result = session.run(r, &events);
  ASSERT_EQ(result.images.size(), 2u);
  EXPECT_EQ(result.images[0].width, 32);
  ASSERT_EQ(events.started.size(), 1u);
  const StartedEvent& s = events.started[0];
  const auto tokenizer = text::BpeTokenizer::load(bundle + "/tokenizer");
  const auto ids = tokenizer.encode(janus::templated_prompt(r.prompt, janus::JanusConfig()), true);
  EXPECT_EQ(s.condition_tokens, static_cast<int64_t>(ids.size()));
  ASSERT_EQ(s.condition_labels.size(), ids.size());
  EXPECT_EQ(s.condition_labels.back(), "<begin_of_image>");
  ASSERT_EQ(events.units.size(), 8u);
  ASSERT_TRUE(events.units.back().attention.has_value());
  const AttentionMap& map = *events.units.back().attention;
  EXPECT_EQ(map.positions, s.condition_tokens + 64);
  double prompt_mass = 0;
  for (int64_t i = 0; i < s.condition_tokens; ++i) prompt_mass += map.weights[static_cast<size_t>(i)];
  EXPECT_GT(prompt_mass, 0.0);
  // Same seed, same images; another prompt, other tokens.
  const GenerationResult again = session.run(r);
  EXPECT_EQ(again.tokens, result.tokens);
  r.prompt = "An astronaut riding a horse on the moon";
  EXPECT_NE(session.run(r).tokens, result.tokens);
}

TEST(JanusSession, NegativePromptKeepsCfgRowsAtEqualPositions) {
  REQUIRE_HF_FOLDER();
  test::TempDir out;
  const io::ModelBundle bundle = io::ModelBundle::open(convert("safetensors", out));
  const janus::JanusModel model = janus::JanusModel::load(bundle, at::kCPU, at::kFloat);
  const auto& tok = *model.tokenizer;
  const auto plain = janus::build_prompt_rows(tok, model.config, "a cat", "");
  const auto shorter = janus::build_prompt_rows(tok, model.config, "a cat on a sofa, oil painting", "blurry");
  EXPECT_EQ(shorter.cond.size(), shorter.uncond.size());
  EXPECT_EQ(shorter.uncond[1], 597);  // the negative row is lengthened with pads after BOS
  const auto longer = janus::build_prompt_rows(tok, model.config, "a cat", "blurry, low quality, watermark, text");
  EXPECT_EQ(longer.cond.size(), longer.uncond.size());
  EXPECT_GT(longer.cond.size(), plain.cond.size());
  EXPECT_EQ(longer.cond[1], 597);
  EXPECT_EQ(std::vector<int64_t>(longer.cond.end() - static_cast<int64_t>(plain.cond.size()) + 1, longer.cond.end()),
            std::vector<int64_t>(plain.cond.begin() + 1, plain.cond.end()));
  GenerationSession session;
  GenerationRequest r = prompt_request(bundle.dir, "a cat");
  const auto base = session.run(r);
  r.negative_prompt = "blurry, low quality";
  EXPECT_NE(session.run(r).tokens, base.tokens);
}

TEST(JanusSession, EveryRasterPolicyKeepsThePromptAndItsBudget) {
  test::TempDir dir;
  janus::write_random_janus_bundle(dir.path().string(), "janus-pro-tiny", janus::tiny_janus_config(), 5, "f32");
  GenerationSession session;
  int policies = 0;
  for (const PolicyInfo& info : policy_registry()) {
    if (std::find(info.families.begin(), info.families.end(), "raster") == info.families.end()) continue;
    ++policies;
    Events events;
    GenerationRequest r = prompt_request(dir.path().string(), "a lighthouse at dawn, watercolor");
    r.policy = parse_policy_spec(info.has_budget() ? info.name + ":rho=0.25" : info.name);
    r.emit_retained_masks = true;
    ASSERT_NO_THROW(session.run(r, &events)) << r.policy.text();
    const int64_t prompt = events.started.at(0).condition_tokens;
    const int64_t budget = info.has_budget() ? 64 : 256;  // a quarter of the 16x16 image tokens
    for (const UnitDoneEvent& u : events.units) {
      ASSERT_TRUE(u.retained.has_value());
      const RetainedMasks& m = *u.retained;
      for (int64_t layer = 0; layer < m.n_layer; ++layer)
        for (int64_t head = 0; head < m.kv_heads; ++head) {
          int64_t image = 0;
          for (int64_t p = 0; p < m.positions; ++p) {
            if (p < prompt) {
              ASSERT_TRUE(m.retained(layer, head, p)) << r.policy.text() << " evicted prompt position " << p;
            } else {
              image += m.retained(layer, head, p) ? 1 : 0;
            }
          }
          if (info.name != "headkv") {
            EXPECT_LE(image, budget) << r.policy.text() << " unit " << u.unit_index;
          }
        }
    }
  }
  EXPECT_GE(policies, 6);
}

TEST(JanusSession, BadRequestsSayWhatToDo) {
  test::TempDir dir;
  janus::write_random_janus_bundle(dir.file("janus"), "janus-pro-tiny", janus::tiny_janus_config(), 5, "f32");
  llamagen::write_random_llamagen_bundle(dir.file("llamagen"), "tiny", test::tiny_gqa_gpt(), test::tiny_vq(), 3);
  GenerationSession session;
  GenerationRequest r = prompt_request(dir.file("janus"), "");
  r.class_ids = {1};
  EXPECT_NE(error_of([&] { session.run(r); }).find("give a prompt"), std::string::npos);
  r = prompt_request(dir.file("llamagen"), "a cat");
  EXPECT_NE(error_of([&] { session.run(r); }).find("class-conditional"), std::string::npos);
  // The tiny model's context is 1024 positions: 256 image tokens leave 768 for the prompt.
  r = prompt_request(dir.file("janus"), std::string(2000, 'x'));
  const std::string too_long = error_of([&] { session.run(r); });
  EXPECT_NE(too_long.find("at most 768 prompt tokens"), std::string::npos) << too_long;
  fs::remove(dir.file("janus/tokenizer/tokenizer.json"));
  r = prompt_request(dir.file("janus"), "a cat");
  GenerationSession fresh;  // the first session keeps the model it loaded
  EXPECT_NE(error_of([&] { fresh.run(r); }).find("tokenizer.json"), std::string::npos);
}

TEST(JanusBench, PromptsDriveTheRunsAndClassesAreRefused) {
  test::TempDir dir;
  test::write_bytes(dir.file("prompts.txt"), "# scenes\n\na red fox in snow\r\n  \nan astronaut on a horse\n");
  const std::vector<BenchPrompt> prompts = read_prompt_file(dir.file("prompts.txt"));
  ASSERT_EQ(prompts.size(), 2u);
  EXPECT_EQ(prompts[0].text, "a red fox in snow");
  EXPECT_EQ(prompts[1].text, "an astronaut on a horse");
  test::write_bytes(dir.file("empty.txt"), "# nothing\n\n");
  EXPECT_NE(error_of([&] { read_prompt_file(dir.file("empty.txt")); }).find("holds no prompt"), std::string::npos);

  BenchOptions o;
  o.random_arch = "janus-pro-tiny";
  o.policies = {"full", "linear:rho=0.25"};
  o.batch = 2;
  o.images = 4;
  o.prompts = prompts;
  o.device = "cpu";
  o.threads = 1;
  o.warmup = false;
  const auto records = run_policy_bench(o);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].family, "janus-pro");
  EXPECT_EQ(records[0].images, 4);
  EXPECT_LT(records[1].kv_bytes_logical, records[0].kv_bytes_logical);
  EXPECT_GT(records[1].tokens_per_s, 0.0);
  o.classes = {1};
  EXPECT_NE(error_of([&] { run_policy_bench(o); }).find("--prompts FILE"), std::string::npos);
  o.classes.clear();
  o.random_arch = "llamagen-demo";
  EXPECT_NE(error_of([&] { run_policy_bench(o); }).find("use --classes"), std::string::npos);
}

TEST(JanusSession, AModelThatCannotFitIsRefusedBeforeLoading) {
  // Janus-Pro-7B's manifest and an empty weights file: the check reads no weights.
  test::TempDir dir;
  test::write_bytes(dir.file("weights.safetensors"), "");
  const janus::JanusConfig seven = janus::janus_preset("janus-pro-7b");
  io::write_bundle_manifest(dir.path().string(),
                            janus::janus_manifest("janus-pro-7b", seven, nlohmann::json::object()));
  const int64_t need = seven.parameter_count() * 4;
  if (system_available_bytes() <= 0 || system_available_bytes() >= need)
    GTEST_SKIP() << "this machine has room for Janus-Pro-7B in f32";
  GenerationRequest r = prompt_request(dir.path().string(), "a cat");
  r.dtype = "f32";
  GenerationSession session;
  const std::string message = error_of([&] { session.run(r); });
  EXPECT_NE(message.find("GiB for its weights in f32"), std::string::npos) << message;
  EXPECT_NE(message.find("--dtype bf16"), std::string::npos) << message;
}

TEST(JanusModel, Bf16RunsDecodeInBf16AsTheOfficialProgramDoes) {
  // generation_inference.py casts the whole model, the VQ decoder included, to
  // bf16 and converts the decoded images to float32.
  test::TempDir dir;
  janus::write_random_janus_bundle(dir.path().string(), "janus-pro-tiny", janus::tiny_janus_config(), 5, "bf16");
  const io::ModelBundle bundle = io::ModelBundle::open(dir.path().string());
  const janus::JanusModel bf16 = janus::JanusModel::load(bundle, at::kCPU, at::kBFloat16);
  const janus::JanusModel f32 = janus::JanusModel::load(bundle, at::kCPU, at::kFloat);
  const janus::JanusModel f16 = janus::JanusModel::load(bundle, at::kCPU, at::kHalf);
  EXPECT_EQ(bf16.vq->dtype(), at::kBFloat16);
  EXPECT_EQ(f32.vq->dtype(), at::kFloat);
  EXPECT_EQ(f16.vq->dtype(), at::kFloat);  // no official f16 decode: float32, as f32 runs
  const int64_t grid = bf16.config.grid_size();
  const at::Tensor codes = at::randint(0, bf16.config.image_token_size, {2, grid * grid},
                                       at::TensorOptions().dtype(at::kLong));
  const at::Tensor in_bf16 = bf16.vq->decode_codes(codes, grid, grid);
  const at::Tensor in_f32 = f32.vq->decode_codes(codes, grid, grid);
  EXPECT_EQ(in_bf16.scalar_type(), at::kFloat);
  EXPECT_EQ(in_f32.scalar_type(), at::kFloat);
  EXPECT_TRUE(at::equal(f16.vq->decode_codes(codes, grid, grid), in_f32));
  // The bf16 decode is a decode of the same image, rounded on the way.
  EXPECT_FALSE(at::equal(in_bf16, in_f32));
  const double spread = in_f32.std().item<double>();
  const double drift = (in_bf16 - in_f32).pow(2).mean().sqrt().item<double>();
  EXPECT_GT(drift, 0.0);
  EXPECT_LT(drift, 0.05 * spread) << "RMS difference " << drift << ", image spread " << spread;
}
