// Bundles and weights: strict key/shape checking with messages a user can act on.
#include <ATen/Functions.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <optional>
#include <utility>
#include <vector>

#include "engine/core/errors.h"
#include "engine/io/bundle_file_path.h"
#include "engine/io/model_bundle.h"
#include "engine/io/safetensors_reader.h"
#include "engine/io/safetensors_writer.h"
#include "engine/models/llamagen/llamagen_model.h"
#include "engine/models/llamagen/llamagen_random_init.h"
#include "tests/engine/test_helpers.h"

using namespace kvs;

namespace {

// Rewrites a bundle's weights through `edit`.
void edit_weights(const test::TempDir& dir, const std::function<void(io::NamedTensors&)>& edit) {
  io::NamedTensors tensors;
  {
    auto reader = io::SafetensorsReader::open(dir.file("weights.safetensors"));
    for (const auto& n : reader->names()) tensors.emplace_back(n, reader->tensor(n).clone());
  }
  edit(tensors);
  io::write_safetensors(dir.file("weights.safetensors"), tensors);
}

std::string load_error(const test::TempDir& dir) {
  try {
    llamagen::LlamaGenModel::load(io::ModelBundle::open(dir.path().string()), at::Device(at::kCPU));
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

struct Bundle {
  test::TempDir dir;
  Bundle() {
    llamagen::write_random_llamagen_bundle(dir.path().string(), "t", test::tiny_gqa_gpt(), test::tiny_vq(), 1);
  }
};

}  // namespace

TEST(ModelBundle, LoadsARandomBundle) {
  Bundle b;
  auto model = llamagen::LlamaGenModel::load(io::ModelBundle::open(b.dir.path().string()), at::Device(at::kCPU));
  EXPECT_EQ(model.name, "t");
  EXPECT_EQ(model.image_size(), 8);
}

TEST(ModelBundle, WrongShapeIsNamed) {
  Bundle b;
  edit_weights(b.dir, [](io::NamedTensors& t) {
    for (auto& [n, v] : t)
      if (n == "gpt.norm.weight") v = at::ones({32});
  });
  const std::string msg = load_error(b.dir);
  EXPECT_NE(msg.find("tensor gpt.norm.weight has shape [32], expected [64]"), std::string::npos) << msg;
}

TEST(ModelBundle, UnknownAndMissingKeysAreNamed) {
  Bundle b;
  edit_weights(b.dir, [](io::NamedTensors& t) {
    t.emplace_back("gpt.bogus.weight", at::ones({2}));
    t.erase(std::remove_if(t.begin(), t.end(), [](const auto& p) { return p.first == "gpt.output.weight"; }), t.end());
  });
  const std::string msg = load_error(b.dir);
  EXPECT_NE(msg.find("unexpected tensors: gpt.bogus.weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find("missing tensors: gpt.output.weight"), std::string::npos) << msg;
}

TEST(ModelBundle, TruncatedWeightsAreReported) {
  Bundle b;
  const std::string bytes = test::read_bytes(b.dir.file("weights.safetensors"));
  test::write_bytes(b.dir.file("weights.safetensors"), bytes.substr(0, bytes.size() / 2));
  const std::string msg = load_error(b.dir);
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
}

TEST(ModelBundle, ManifestProblemsAreReported) {
  test::TempDir empty;
  EXPECT_NE(load_error(empty).find("no model.json"), std::string::npos);
  Bundle b;
  test::write_bytes(b.dir.file("model.json"), "{not json");
  EXPECT_NE(load_error(b.dir).find("model.json: not valid JSON"), std::string::npos);
  test::write_bytes(b.dir.file("model.json"), R"({"format":"kvstudio-bundle","format_version":1,"family":"llamagen",
    "architecture":{"gpt":{"dim":64,"n_layer":2,"n_head":3}},"tokenizer":{},"files":{"weights":"weights.safetensors"}})");
  EXPECT_NE(load_error(b.dir).find("dim 64 is not divisible by n_head 3"), std::string::npos) << load_error(b.dir);
  test::write_bytes(b.dir.file("model.json"), R"({"format":"kvstudio-bundle","format_version":1,"family":"llamagen",
    "architecture":{},"files":{"weights":"../escape.safetensors"}})");
  EXPECT_NE(load_error(b.dir).find("inside the bundle folder"), std::string::npos) << load_error(b.dir);
}

// A manifest names files inside its folder or, by name alone, in the folder
// "shared" beside it; every other form is refused when the bundle opens, with
// the field named, before any file is read.
TEST(ModelBundle, FilesOutsideTheBundleAndTheSharedFolderAreRefused) {
  test::TempDir root;
  const std::string folder = root.file("models/b");
  llamagen::write_random_llamagen_bundle(folder, "b", test::tiny_gqa_gpt(), test::tiny_vq(), 1);
  const std::string manifest_file = folder + "/model.json";
  const nlohmann::json good = io::ModelBundle::open(folder).manifest;
  const std::vector<std::pair<nlohmann::json, std::string>> cases = {
      {"../escape.safetensors", "files.extra must be a file inside the bundle folder"},
      {"/etc/passwd", "files.extra must be a file inside the bundle folder"},
      {"", "files.extra must be a file inside the bundle folder"},
      {{{"shared", "../../etc/passwd"}}, "files.extra must be {\"shared\": \"<file name>\"}"},
      {{{"shared", "sub/file.safetensors"}}, "files.extra must be {\"shared\": \"<file name>\"}"},
      {{{"shared", ".."}}, "files.extra must be {\"shared\": \"<file name>\"}"},
      {{{"shared", ""}}, "files.extra must be {\"shared\": \"<file name>\"}"},
      {{{"shared", "a.safetensors"}, {"also", "b"}}, "files.extra must be {\"shared\": \"<file name>\"}"},
      {{{"path", "a.safetensors"}}, "files.extra must be {\"shared\": \"<file name>\"}"},
      {7, "files.extra must be a file name or {\"shared\": \"<file name>\"}"},
  };
  for (const auto& [entry, expected] : cases) {
    nlohmann::json m = good;
    m["files"]["extra"] = entry;
    test::write_bytes(manifest_file, m.dump());
    try {
      io::ModelBundle::open(folder);
      ADD_FAILURE() << "accepted " << entry.dump();
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << entry.dump() << ": " << e.what();
    }
  }
  // The weights are always the bundle's own.
  nlohmann::json m = good;
  m["files"]["weights"] = {{"shared", "weights.safetensors"}};
  test::write_bytes(manifest_file, m.dump());
  EXPECT_THROW(io::ModelBundle::open(folder), FormatError);
  // A well-formed shared name resolves beside the bundle folder, nowhere else.
  m = good;
  m["files"]["extra"] = {{"shared", "x.safetensors"}};
  m["files"]["own"] = "sub/y.safetensors";
  test::write_bytes(manifest_file, m.dump());
  const io::ModelBundle bundle = io::ModelBundle::open(folder);
  const std::filesystem::path dir(bundle.dir);
  ASSERT_EQ(dir.parent_path(), std::filesystem::path(root.file("models")));
  EXPECT_EQ(io::bundle_file_path(bundle, "own"), std::optional<std::string>((dir / "sub/y.safetensors").string()));
  EXPECT_EQ(io::bundle_file_path(bundle, "none"), std::nullopt);
  EXPECT_THROW(io::bundle_file_path(bundle, "extra"), FileError);  // not there yet
  std::filesystem::create_directories(dir.parent_path() / "shared");
  test::write_bytes((dir.parent_path() / "shared/x.safetensors").string(), "x");
  EXPECT_EQ(io::bundle_file_path(bundle, "extra"),
            std::optional<std::string>((dir.parent_path() / "shared/x.safetensors").string()));
}

TEST(ModelBundle, BundledDemoModelLoads) {
  auto bundle = io::ModelBundle::open(std::string(KVSTUDIO_SOURCE_DIR) + "/resources/models/llamagen-demo");
  auto model = llamagen::LlamaGenModel::load(bundle, at::Device(at::kCPU));
  EXPECT_EQ(model.gpt->config().grid_size(), 16);
  EXPECT_EQ(model.image_size(), 64);
}
