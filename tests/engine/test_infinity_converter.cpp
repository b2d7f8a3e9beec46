// Infinity's converter on files laid out like the official downloads, made
// from the infinity_tiny conformance weights: the Infinity state dict as a
// folder of safetensors shards (Infinity-8B's form), the BSQ-VAE state dict
// (encoder and quantizer buffers included, which are dropped) in its wrapped
// and its plain names, and a T5 Hugging Face folder with the decoder and LM
// head beside the encoder. The bundle holds the case's tensors bit for bit,
// loads and generates; a missing tensor is refused by name before anything is
// written.
#include <gtest/gtest.h>

#include <ATen/Functions.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <regex>

#include "engine/io/model_bundle.h"
#include "engine/io/safetensors_reader.h"
#include "engine/io/safetensors_writer.h"
#include "engine/models/generation_session.h"
#include "engine/models/infinity/infinity_converter.h"
#include "tests/engine/test_helpers.h"

using namespace kvs;
using namespace kvs::infinity;
namespace fs = std::filesystem;

namespace {

struct OfficialFiles {
  test::TempDir dir;
  std::string checkpoint, vae, vae_plain, t5;
};

// The case's tensors under `prefix`, renamed by `rename` (empty: dropped).
io::NamedTensors part(const io::SafetensorsReader& r, const std::string& prefix,
                      const std::function<std::string(const std::string&)>& rename = {}) {
  io::NamedTensors out;
  for (const std::string& name : r.names()) {
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string key = rename ? rename(name.substr(prefix.size())) : name.substr(prefix.size());
    if (!key.empty()) out.emplace_back(key, r.tensor(name).clone());
  }
  return out;
}

const OfficialFiles* official_files() {
  static std::unique_ptr<OfficialFiles> files;
  if (files) return files.get();
  const std::string base = test::conformance_dir() + "/infinity_tiny";
  if (!fs::exists(base + ".json")) return nullptr;
  files = std::make_unique<OfficialFiles>();
  auto weights = io::SafetensorsReader::open(base + ".weights.safetensors");
  // The transformer as two shards with an index.
  const io::NamedTensors infinity = part(*weights, "infinity.");
  files->checkpoint = files->dir.file("infinity_8b_weights");
  fs::create_directories(files->checkpoint);
  nlohmann::json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", nlohmann::json::object()}};
  io::NamedTensors first(infinity.begin(), infinity.begin() + static_cast<std::ptrdiff_t>(infinity.size() / 2));
  io::NamedTensors second(infinity.begin() + static_cast<std::ptrdiff_t>(infinity.size() / 2), infinity.end());
  io::write_safetensors(files->checkpoint + "/model-00001-of-00002.safetensors", first);
  io::write_safetensors(files->checkpoint + "/model-00002-of-00002.safetensors", second);
  for (const auto& [n, t] : first) index["weight_map"][n] = "model-00001-of-00002.safetensors";
  for (const auto& [n, t] : second) index["weight_map"][n] = "model-00002-of-00002.safetensors";
  std::ofstream(files->checkpoint + "/model.safetensors.index.json") << index.dump();
  // The VAE with an encoder tensor the converter drops, wrapped and plain.
  io::NamedTensors vae = part(*weights, "vae.",
                              [](const std::string& n) { return n.rfind("decoder.", 0) == 0 ? n : std::string(); });
  vae.emplace_back("encoder.conv_in.conv.weight", at::ones({4, 3, 3, 3}));
  files->vae = files->dir.file("vae.safetensors");
  io::write_safetensors(files->vae, vae);
  io::NamedTensors plain;
  for (const auto& [n, t] : vae)
    plain.emplace_back(std::regex_replace(n, std::regex(R"(\.(conv|norm)\.(weight|bias)$)"), ".$2"), t);
  files->vae_plain = files->dir.file("vae_plain.safetensors");
  io::write_safetensors(files->vae_plain, plain);
  // The T5 folder: config.json, spiece.model, the encoder plus a decoder tensor and the LM head.
  files->t5 = files->dir.file("flan-t5");
  fs::create_directories(files->t5);
  std::ifstream in(base + ".json");
  const nlohmann::json manifest = nlohmann::json::parse(in);
  std::ofstream(files->t5 + "/config.json") << manifest.at("constructors").at("t5").at("config_json").dump();
  fs::copy_file(base + ".t5_tokenizer/spiece.model", files->t5 + "/spiece.model");
  io::NamedTensors t5 = part(*weights, "t5.");
  t5.emplace_back("decoder.final_layer_norm.weight", at::ones({256}));
  t5.emplace_back("lm_head.weight", at::zeros({220, 256}));
  io::write_safetensors(files->t5 + "/model.safetensors", t5);
  return files.get();
}

}  // namespace

TEST(InfinityConverter, TheThreeDownloadsBecomeABundleHoldingTheOfficialTensors) {
  if (const std::string why = test::conformance_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  const OfficialFiles* files = official_files();
  if (!files) GTEST_SKIP() << "no infinity_tiny case";
  for (const std::string& vae : {files->vae, files->vae_plain}) {
    const test::TempDir out;
    InfinityConvertOptions o;
    o.checkpoint = files->checkpoint;
    o.vae = vae;
    o.t5 = files->t5;
    o.out_dir = out.file("bundle");
    o.pixel_budget = "0.06M";
    const InfinityConvertReport report = convert_infinity_checkpoint(o);
    EXPECT_EQ(report.config.transformer.depth, 4);
    EXPECT_EQ(report.config.transformer.block_chunks, 2);
    EXPECT_EQ(report.config.transformer.num_heads, 2);
    EXPECT_EQ(report.config.vae.codebook_dim, 16);
    EXPECT_EQ(report.config.vae.patch_size, 4);
    EXPECT_EQ(report.config.vae.ch_mult, (std::vector<int64_t>{1, 1, 2}));
    EXPECT_EQ(report.tensors_dropped, 3);  // the encoder tensor, T5's decoder tensor and LM head
    // Bit for bit: every bundle tensor is the case's under the same name.
    auto reference = io::SafetensorsReader::open(test::conformance_dir() + "/infinity_tiny.weights.safetensors");
    auto bundle = io::SafetensorsReader::open(o.out_dir + "/weights.safetensors");
    for (const std::string& name : bundle->names()) {
      ASSERT_TRUE(reference->contains(name)) << name;
      EXPECT_TRUE(at::equal(bundle->tensor(name), reference->tensor(name))) << name;
    }
    GenerationRequest request;
    request.model_path = o.out_dir;
    request.prompt = "a photo of a red sports car on a mountain road";
    request.cfg_scale = 3.0;
    request.sampling.temperature = 0.5;
    GenerationSession session;
    const GenerationResult result = session.run(io::ModelBundle::open(o.out_dir), request, nullptr);
    ASSERT_EQ(result.images.size(), 1u);
    EXPECT_EQ(result.images[0].width, 64);
  }
}

TEST(InfinityConverter, AMissingTensorIsRefusedByNameBeforeAnythingIsWritten) {
  if (const std::string why = test::conformance_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  const OfficialFiles* files = official_files();
  if (!files) GTEST_SKIP() << "no infinity_tiny case";
  const test::TempDir work;
  // The VAE without one upsampling convolution's bias.
  auto vae = io::SafetensorsReader::open(files->vae);
  io::NamedTensors kept;
  for (const std::string& n : vae->names())
    if (n != "decoder.up.1.upsample.conv.conv.bias") kept.emplace_back(n, vae->tensor(n).clone());
  const std::string broken = work.file("vae_broken.safetensors");
  io::write_safetensors(broken, kept);
  InfinityConvertOptions o;
  o.checkpoint = files->checkpoint;
  o.vae = broken;
  o.t5 = files->t5;
  o.out_dir = work.file("bundle");
  o.pixel_budget = "0.06M";
  const std::string error = test::error_of([&] { convert_infinity_checkpoint(o); });
  EXPECT_NE(error.find("decoder.up.1.upsample.conv.conv.bias"), std::string::npos) << error;
  EXPECT_FALSE(fs::exists(o.out_dir));
  o.vae = files->vae;
  o.t5 = work.file("nowhere");
  EXPECT_NE(test::error_of([&] { convert_infinity_checkpoint(o); }).find("not a folder"), std::string::npos);
}
