// Lumina-mGPT on the engine side: the image vocabulary read from token names,
// the official size list, vqgan.yaml's reader, and a tiny random model end to
// end: every row ends in its end-of-line token, the image has the size the
// prompt asked for, CFG's unconditional branch (with or without a negative
// prompt) keeps exactly the image tokens the conditional branch keeps under
// every raster policy, the prompt and header are never evicted, and bad
// requests fail with messages that say what to do.
#include <gtest/gtest.h>

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>

#include <cstdlib>
#include <filesystem>
#include <set>

#include "engine/cache/policies/policy_registry.h"
#include "engine/core/errors.h"
#include "engine/io/model_bundle.h"
#include "engine/io/safetensors_reader.h"
#include "engine/io/simple_yaml.h"
#include "engine/models/generation_session.h"
#include "engine/models/lumina/image_vocabulary.h"
#include "engine/models/lumina/lumina_converter.h"
#include "engine/models/lumina/lumina_generation.h"
#include "engine/models/lumina/lumina_model.h"
#include "engine/models/lumina/lumina_prompt.h"
#include "engine/models/lumina/lumina_random_init.h"
#include "tests/engine/test_helpers.h"

using namespace kvs;
using namespace kvs::lumina;

namespace {

const test::TempDir& tiny_bundle_dir() {
  static const test::TempDir dir;
  static const bool written = [] {
    write_random_lumina_bundle(dir.file("tiny"), "lumina-tiny", tiny_lumina_config(), 7, "f32");
    return true;
  }();
  (void)written;
  return dir;
}

std::string lumina_folders() {
  const char* dir = std::getenv("KVSTUDIO_LUMINA_FOLDERS");
  return dir ? dir : "";
}

#define REQUIRE_LUMINA_FOLDERS()                                                                                      \
  if (const std::string why = test::fixture_skip_reason(std::filesystem::exists(lumina_folders() + "/hf/config.json") \
                                                            ? lumina_folders()                                        \
                                                            : "",                                                     \
                                                        "KVSTUDIO_LUMINA_FOLDERS");                                   \
      !why.empty())                                                                                                   \
  GTEST_SKIP() << why

const LuminaModel& tiny_model() {
  static const LuminaModel model = LuminaModel::load(io::ModelBundle::open(tiny_bundle_dir().file("tiny")),
                                                     at::Device(at::kCPU), at::kFloat);
  return model;
}

}  // namespace

TEST(LuminaVocabulary, ImageNamesSpellTheCodeInLetters) {
  EXPECT_EQ(image_code_of_name("IMGIMGAZ"), 0);
  EXPECT_EQ(image_code_of_name("IMGIMGBCZ"), 12);
  EXPECT_EQ(image_code_of_name("IMGIMGIBJBZ"), 8191);
  EXPECT_EQ(image_code_of_name("IMGIMGKZ"), -1);
  EXPECT_EQ(image_code_of_name("<s>"), -1);
  for (int64_t code : {0, 7, 10, 1234, 8191}) EXPECT_EQ(image_code_of_name(image_name_of_code(code)), code);
}

TEST(LuminaVocabulary, TheTableComesFromTheTokenizerNotAnOffset) {
  const LuminaModel& model = tiny_model();
  // The random bundle's tokenizer writes code c at id c + 4 (the released order).
  const at::Tensor ids = at::tensor({4, 5, 8195}, at::TensorOptions().dtype(at::kLong));
  EXPECT_TRUE(at::equal(model.vocabulary->codes_of(ids), ids - 4));
  EXPECT_TRUE(at::equal(model.vocabulary->ids_of(ids - 4), ids));
  EXPECT_NE(test::error_of([&] { model.vocabulary->codes_of(at::tensor({8196}, at::kLong)); }), "no error");
}

TEST(LuminaConfig, TheOfficialSizeListOfA768Model) {
  const auto sizes = lumina_resolutions(768);
  std::set<std::pair<int64_t, int64_t>> seen;
  for (const auto& s : sizes) {
    seen.insert({s.width, s.height});
    EXPECT_LE((s.width / 32) * (s.height / 32), 24 * 24);
    EXPECT_LE(std::max(s.width, s.height), 4 * std::min(s.width, s.height));
  }
  EXPECT_TRUE(seen.count({768, 768}));
  EXPECT_TRUE(seen.count({1536, 384}));
  EXPECT_TRUE(seen.count({384, 1536}));
  const LuminaImageSize s = parse_lumina_image_size("768x768");
  EXPECT_EQ(s.line_tokens(), 49);
  EXPECT_EQ(s.body_tokens(), 2352);  // the papers' N at 768 px
  EXPECT_NE(test::error_of([] { parse_lumina_image_size("770x768"); }).find("multiples of 32"), std::string::npos);
  EXPECT_NE(test::error_of([] { parse_lumina_image_size("big"); }).find("WIDTHxHEIGHT"), std::string::npos);
}

TEST(SimpleYaml, ReadsAVqganConfiguration) {
  const std::string text =
      "model:\n  target: chameleon.vqgan.VQModel\n  params:\n    embed_dim: 8\n    n_embed: 8192  # codes\n"
      "    ddconfig:\n      double_z: false\n      z_channels: 32\n      resolution: 32\n      ch: 32\n"
      "      ch_mult:\n      - 1\n      - 1\n      - 2\n      num_res_blocks: 2\n"
      "      attn_resolutions: []\n      dropout: 0.0\n    lossconfig:\n      target: x.DummyLoss\n";
  const nlohmann::json j = io::parse_simple_yaml(text, "vqgan.yaml");
  const nlohmann::json& params = j.at("model").at("params");
  EXPECT_EQ(params.at("n_embed").get<int64_t>(), 8192);
  EXPECT_EQ(params.at("ddconfig").at("ch_mult"), nlohmann::json({1, 1, 2}));
  EXPECT_TRUE(params.at("ddconfig").at("attn_resolutions").empty());
  EXPECT_EQ(params.at("ddconfig").at("double_z"), false);
  const VqganConfig c = vqgan_config_from_params(params);
  EXPECT_EQ(c.z_channels, 32);
  EXPECT_EQ(c.upsampling(), 4);
  EXPECT_EQ(test::error_of([] { io::parse_simple_yaml("a: 1\n\tb: 2\n", "f.yaml"); }),
            "f.yaml: line 2: tabs are not allowed for indentation");
  EXPECT_NE(test::error_of([] { io::parse_simple_yaml("a: &x 1\n", "f.yaml"); }).find("line 1"), std::string::npos);
  EXPECT_NE(test::error_of([] { io::parse_simple_yaml("a:\n  - b: 1\n", "f.yaml"); }).find("scalars"),
            std::string::npos);
  EXPECT_NE(test::error_of([] { io::parse_simple_yaml("a: 1\na: 2\n", "f.yaml"); }).find("twice"), std::string::npos);
}

TEST(LuminaGeneration, RowsEndInEndOfLineTokensAndTheImageHasTheAskedSize) {
  GenerationRequest request;
  request.model_path = tiny_bundle_dir().file("tiny");
  request.prompt = "a red fox in the snow";
  request.image_size = "128x64";  // non-square: 8 rows of 4... tokens: H = 4, W = 8
  request.images = 2;
  request.cfg_scale = 3.0;
  request.sampling.top_k = 50;
  request.seed = 3;
  GenerationSession session;
  const GenerationResult result = session.run(io::ModelBundle::open(request.model_path), request, nullptr);
  ASSERT_EQ(result.images.size(), 2u);
  EXPECT_EQ(result.images[0].width, 8 * 4);  // W tokens x the tiny VQGAN's x4
  EXPECT_EQ(result.images[0].height, 4 * 4);
  ASSERT_EQ(result.tokens[0].size(), 4u * 9u);
  for (size_t i = 0; i < result.tokens[0].size(); ++i) {
    const int32_t t = result.tokens[0][i];
    if ((i + 1) % 9 == 0) EXPECT_EQ(t, 8803) << "position " << i;
    else EXPECT_TRUE(t >= 4 && t < 8196) << "position " << i << " holds " << t;
  }
  // A full cache holds what the official program's two caches hold: the full-cache
  // equivalent counts each branch's own prefix, not the padding that aligned them.
  EXPECT_EQ(result.kv_bytes_logical_final, result.kv_bytes_full);
  request.negative_prompt = "blurry, dark, low quality, a muddy grey picture with no clouds at all";
  const GenerationResult negative = session.run(io::ModelBundle::open(request.model_path), request, nullptr);
  EXPECT_EQ(negative.kv_bytes_logical_final, negative.kv_bytes_full);
  EXPECT_GT(negative.kv_bytes_full, result.kv_bytes_full);
  request.negative_prompt.clear();
  // The same request gives the same tokens.
  const GenerationResult again = session.run(io::ModelBundle::open(request.model_path), request, nullptr);
  EXPECT_EQ(again.tokens, result.tokens);
}

namespace {

// Runs the tiny model under `spec` and checks, at every line end and in every
// layer, that the two CFG branches hold the same image positions and that the
// condition (prompt + header) is all there.
void check_branches_agree(const std::string& spec, const std::string& negative) {
  const LuminaModel& model = tiny_model();
  const LuminaImageSize size{512, 256};  // 16 rows of 32 + 1 tokens
  const LuminaPrompt prompt = build_lumina_prompt(*model.tokenizer, model.config, "three clouds over the sea", negative,
                                                  size);
  const int64_t condition = static_cast<int64_t>(std::max(prompt.cond.size(), prompt.uncond_prefix.size())) + 3;
  raster::RasterParams params;
  params.cfg_scale = 4.0;
  params.sampling.top_k = 100;
  params.seed = 11;
  LuminaSteps steps;
  steps.size = size;
  auto policy = make_policy(parse_policy_spec(spec),
                            lumina_policy_context(model.config, size, condition, 1, true, params.seed));
  raster::RasterHooks hooks;
  hooks.policy = [&] { return policy.get(); };
  int64_t checked = 0, evicted_somewhere = 0;
  hooks.on_token = [&](int64_t done, const at::Tensor&, const KvStore& cache) {
    if (done % size.line_tokens() != 0) return;
    for (int64_t layer = 0; layer < cache.n_layer(); ++layer)
      for (int64_t head = 0; head < cache.kv_heads(); ++head) {
        std::vector<int64_t> cond = cache.positions(layer, 0, head), uncond = cache.positions(layer, 1, head);
        std::vector<int64_t> cond_image, uncond_image;
        int64_t cond_prefix = 0, uncond_prefix = 0;
        for (int64_t p : cond) (p >= condition ? cond_image.push_back(p) : void(++cond_prefix));
        for (int64_t p : uncond) (p >= condition ? uncond_image.push_back(p) : void(++uncond_prefix));
        EXPECT_EQ(cond_image, uncond_image) << spec << " layer " << layer << " head " << head;
        EXPECT_EQ(cond_prefix, static_cast<int64_t>(prompt.cond.size()) + 3) << spec;
        EXPECT_EQ(uncond_prefix, static_cast<int64_t>(prompt.uncond_prefix.size()) + 3) << spec;
        if (static_cast<int64_t>(cond_image.size()) < done) ++evicted_somewhere;
        ++checked;
      }
  };
  generate_from_prompt(model, prompt.cond, prompt.uncond_prefix, 1, params, steps, hooks);
  EXPECT_GT(checked, 0);
  if (spec != "full") {
    EXPECT_GT(evicted_somewhere, 0) << spec << " never evicted";
  }
}

}  // namespace

TEST(LuminaGeneration, BothCfgBranchesKeepTheSameImageTokensUnderEveryRasterPolicy) {
  for (const std::string spec : {"full", "linear:rho=1/4", "headkv:rho=1/4", "streaming:rho=1/4", "h2o:rho=1/4",
                                 "snapkv:rho=1/4", "rkv:rho=1/4", "random:rho=1/4"})
    check_branches_agree(spec, "");
}

TEST(LuminaGeneration, ANegativePromptLongerOrShorterThanThePromptKeepsTheBranchesAligned) {
  check_branches_agree("linear:rho=1/4", "blurry, dark, low quality, a muddy grey picture with no clouds at all");
  check_branches_agree("streaming:rho=1/4", "dark");
}

TEST(LuminaGeneration, BadRequestsSayWhatToDo) {
  GenerationRequest request;
  request.model_path = tiny_bundle_dir().file("tiny");
  request.prompt = "a fox";
  GenerationSession session;
  const io::ModelBundle bundle = io::ModelBundle::open(request.model_path);
  request.image_size = "100x100";
  EXPECT_NE(test::error_of([&] { session.run(bundle, request, nullptr); }).find("multiples of 32"), std::string::npos);
  request.image_size = "";
  request.cfg_interval = 5;
  EXPECT_NE(test::error_of([&] { session.run(bundle, request, nullptr); }).find("CFG on every image step"),
            std::string::npos);
  request.cfg_interval = -1;
  request.prompt = "   ";
  EXPECT_NE(test::error_of([&] { session.run(bundle, request, nullptr); }).find("prompt"), std::string::npos);
  GenerationRequest classes;
  classes.class_ids = {1};
  classes.image_size = "256x256";
  EXPECT_EQ(test::error_of([&] { classes.validate(); }), "an image size needs a prompt (text-to-image models)");
}

TEST(LuminaConverter, TheTwoDownloadsBecomeABundleHoldingTheOfficialTensors) {
  REQUIRE_LUMINA_FOLDERS();
  const test::TempDir out;
  LuminaConvertOptions o;
  o.checkpoint = lumina_folders() + "/hf";
  o.vqgan = lumina_folders() + "/chameleon";
  o.out_dir = out.file("bundle");
  o.image_size = 128;
  const LuminaConvertReport report = convert_lumina_checkpoint(o);
  EXPECT_EQ(report.weight_files.size(), 2u);
  EXPECT_EQ(report.tensors_dropped, 4);  // the HF model's VQ encoder (2), the VQGAN's encoder side (2)
  EXPECT_EQ(report.config.lm.hidden_size, 48);
  EXPECT_EQ(report.config.vqgan.upsampling(), 4);
  // Bit for bit the case's tensors, under the same names.
  auto converted = io::SafetensorsReader::open(out.file("bundle") + "/weights.safetensors");
  auto reference = io::SafetensorsReader::open(test::conformance_dir() + "/lumina_mgpt_tiny.weights.safetensors");
  ASSERT_EQ(converted->names().size(), reference->names().size());
  for (const std::string& name : reference->names())
    EXPECT_TRUE(at::equal(converted->tensor(name), reference->tensor(name))) << name;
  // It loads with its tokenizer (the case's shuffled image names) and generates.
  const LuminaModel model = LuminaModel::load(io::ModelBundle::open(out.file("bundle")), at::Device(at::kCPU),
                                              at::kFloat);
  EXPECT_EQ(model.config.image_size, 128);
  GenerationRequest request;
  request.model_path = out.file("bundle");
  request.prompt = "A red fox sitting in the snow at sunrise.";
  request.cfg_scale = 4.0;
  request.sampling.top_k = 2000;
  GenerationSession session;
  const GenerationResult result = session.run(io::ModelBundle::open(request.model_path), request, nullptr);
  ASSERT_EQ(result.images.size(), 1u);
  EXPECT_EQ(result.images[0].width, 32);  // 8 tokens of the case's x4 VQGAN
}

TEST(LuminaConverter, AMissingFileIsRefusedByNameBeforeAnythingIsWritten) {
  REQUIRE_LUMINA_FOLDERS();
  const test::TempDir work;
  namespace fs = std::filesystem;
  fs::copy(lumina_folders(), work.path() / "in", fs::copy_options::recursive);
  LuminaConvertOptions o;
  o.checkpoint = (work.path() / "in" / "hf").string();
  o.vqgan = (work.path() / "in" / "chameleon").string();
  o.out_dir = work.file("bundle");
  fs::remove(work.path() / "in" / "chameleon" / "vqgan.ckpt");
  EXPECT_NE(test::error_of([&] { convert_lumina_checkpoint(o); }).find("vqgan.ckpt"), std::string::npos);
  EXPECT_FALSE(fs::exists(work.file("bundle")));
  o.vqgan = "";
  EXPECT_NE(test::error_of([&] { convert_lumina_checkpoint(o); }).find("--vqgan is required"), std::string::npos);
  o.vqgan = (work.path() / "in" / "chameleon").string();
  fs::copy_file(lumina_folders() + "/chameleon/vqgan.ckpt", work.path() / "in" / "chameleon" / "vqgan.ckpt");
  fs::remove(work.path() / "in" / "hf" / "model-00002-of-00002.safetensors");
  EXPECT_NE(test::error_of([&] { convert_lumina_checkpoint(o); }).find("model-00002-of-00002.safetensors"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(work.file("bundle")));
}

TEST(LuminaConverter, MetasImageNamesMustBeTheTokenizersOwn) {
  REQUIRE_LUMINA_FOLDERS();
  const test::TempDir work;
  namespace fs = std::filesystem;
  fs::copy(lumina_folders(), work.path() / "in", fs::copy_options::recursive);
  // Swap two image tokens' names in Meta's text_tokenizer.json.
  const fs::path meta = work.path() / "in" / "chameleon" / "text_tokenizer.json";
  nlohmann::json j = nlohmann::json::parse(test::read_bytes(meta.string()));
  std::string first, second;
  for (const auto& [name, id] : j.at("model").at("vocab").items()) {
    if (id == 4) first = name;
    if (id == 5) second = name;
  }
  j["model"]["vocab"][first] = 5;
  j["model"]["vocab"][second] = 4;
  fs::permissions(meta, fs::perms::owner_write, fs::perm_options::add);
  test::write_bytes(meta.string(), j.dump());
  LuminaConvertOptions o;
  o.checkpoint = (work.path() / "in" / "hf").string();
  o.vqgan = (work.path() / "in" / "chameleon").string();
  o.out_dir = work.file("bundle");
  EXPECT_NE(test::error_of([&] { convert_lumina_checkpoint(o); }).find("names the image tokens differently"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(work.file("bundle")));
}
