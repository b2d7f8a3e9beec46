// Row-scaled 8-bit weight storage: the safetensors convention (an I8 tensor and
// its "::row_scale" F32 tensor read back as one float tensor), its validation,
// and `kvstudio-train compact`'s rewrite of a bundle (only the named prefixes'
// matrices change, within half a quantisation step; everything else byte for
// byte; a second run changes nothing; the bundle still loads).
#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>

#include "engine/core/errors.h"
#include "engine/io/bundle_loading.h"
#include "engine/io/model_bundle.h"
#include "engine/io/row_scaled_int8.h"
#include "engine/io/safetensors_reader.h"
#include "engine/io/safetensors_writer.h"
#include "engine/models/llamagen/llamagen_model.h"
#include "engine/models/llamagen/llamagen_random_init.h"
#include "tests/engine/test_helpers.h"

using namespace kvs;

namespace {

std::string format_error(const std::string& path) {
  try {
    auto reader = io::SafetensorsReader::open(path);
    for (const auto& e : reader->index().tensors) reader->tensor(e.name);
  } catch (const FormatError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(RowScaledInt8, EncodesEachRowWithinHalfAStep) {
  at::manual_seed(3);
  const at::Tensor w = at::randn({5, 3, 2, 2}) * at::arange(1, 6, at::kFloat).view({5, 1, 1, 1});
  auto [q, scale] = io::encode_row_scaled(w);
  ASSERT_EQ(q.scalar_type(), at::kChar);
  ASSERT_EQ(q.sizes(), w.sizes());
  ASSERT_EQ(scale.sizes(), (at::IntArrayRef{5}));
  const at::Tensor decoded = q.to(at::kFloat) * scale.view({5, 1, 1, 1});
  const at::Tensor error = (decoded - w).abs().reshape({5, -1}).amax(1);
  EXPECT_TRUE((error <= scale * 0.5001f).all().item<bool>()) << error << scale;
  // Each row's largest magnitude is stored as +-127: the full int8 range is used.
  EXPECT_TRUE((q.abs().reshape({5, -1}).amax(1) == 127).all().item<bool>());
  // An all-zero row keeps zeros (scale 0, no division by zero).
  auto [qz, sz] = io::encode_row_scaled(at::zeros({2, 8}));
  EXPECT_TRUE(at::equal(qz, at::zeros({2, 8}, at::kChar)));
  EXPECT_EQ(sz.sum().item<float>(), 0.0f);
  EXPECT_THROW(io::encode_row_scaled(at::full({2, 2}, NAN)), InvalidArgumentError);
  EXPECT_THROW(io::encode_row_scaled(at::ones({})), InvalidArgumentError);
}

TEST(RowScaledInt8, EmptyTensorsRoundTrip) {
  test::TempDir dir;
  for (const auto& shape : {std::vector<int64_t>{0, 4}, std::vector<int64_t>{3, 0}}) {
    auto [q, scale] = io::encode_row_scaled(at::zeros(shape));
    io::write_safetensors(dir.file("e.safetensors"), {{"e", q}, {"e::row_scale", scale}});
    const at::Tensor back = io::SafetensorsReader::open(dir.file("e.safetensors"))->tensor("e");
    EXPECT_EQ(back.sizes(), at::IntArrayRef(shape));
    EXPECT_EQ(back.scalar_type(), at::kFloat);
  }
}

TEST(RowScaledInt8, ReadsThePairAsOneFloatTensor) {
  test::TempDir dir;
  const at::Tensor w = at::randn({4, 6});
  auto [q, scale] = io::encode_row_scaled(w);
  io::write_safetensors(dir.file("w.safetensors"), {{"m.weight", q}, {"m.weight::row_scale", scale}, {"plain", q}});
  auto reader = io::SafetensorsReader::open(dir.file("w.safetensors"));
  ASSERT_EQ(reader->index().tensors.size(), 2u);  // the scale is folded into its partner
  EXPECT_FALSE(reader->contains("m.weight::row_scale"));
  const io::TensorEntry* e = reader->index().find("m.weight");
  EXPECT_TRUE(e->row_scaled && e->decodes_to_float());
  EXPECT_FALSE(reader->index().find("plain")->decodes_to_float());  // I8 without scales stays integer
  const at::Tensor got = reader->tensor("m.weight");
  EXPECT_EQ(got.scalar_type(), at::kFloat);
  EXPECT_TRUE(at::equal(got, q.to(at::kFloat) * scale.unsqueeze(1)));
  EXPECT_NO_THROW(io::require_floating_tensors(*reader, {"plain"}));
  EXPECT_THROW(io::require_floating_tensors(*reader), ModelMismatchError);
}

TEST(RowScaledInt8, RefusesBrokenPairsNamingTheTensor) {
  test::TempDir dir;
  const at::Tensor q = at::ones({4, 6}, at::kChar);
  const auto write = [&](const io::NamedTensors& t) {
    io::write_safetensors(dir.file("w.safetensors"), t);
    return format_error(dir.file("w.safetensors"));
  };
  EXPECT_NE(write({{"a::row_scale", at::ones({4})}}).find("tensor 'a::row_scale' has no I8 tensor 'a' to scale"),
            std::string::npos);
  EXPECT_NE(write({{"a", q.to(at::kHalf)}, {"a::row_scale", at::ones({4})}}).find("stored as F16, not I8"),
            std::string::npos);
  EXPECT_NE(write({{"a", q}, {"a::row_scale", at::ones({3})}})
                .find("tensor 'a::row_scale' must be F32 of shape [4] (one scale per row of 'a'), got F32 [3]"),
            std::string::npos);
  EXPECT_NE(write({{"a", q}, {"a::row_scale", at::ones({4}, at::kHalf)}}).find("must be F32 of shape [4]"),
            std::string::npos);
  EXPECT_NE(write({{"a", q}, {"a::row_scale", at::full({4}, -1.0f)}}).find("negative or non-finite scale"),
            std::string::npos);
  EXPECT_NE(write({{"a", q}, {"a::row_scale", at::full({4}, INFINITY)}}).find("negative or non-finite scale"),
            std::string::npos);
  EXPECT_NE(write({{"a", at::ones({}, at::kChar)}, {"a::row_scale", at::ones({1})}}).find("has no rows"),
            std::string::npos);
}

TEST(RowScaledInt8, CompactRewritesOnlyTheNamedMatrices) {
  test::TempDir dir;
  const std::string folder = dir.path().string();
  llamagen::write_random_llamagen_bundle(folder, "t", test::tiny_gqa_gpt(), test::tiny_vq(), 1);
  const std::string weights = folder + "/weights.safetensors";
  std::filesystem::copy_file(weights, dir.file("before.safetensors"));
  auto before = io::SafetensorsReader::open(dir.file("before.safetensors"));

  EXPECT_NE(test::error_of([&] { io::store_row_scaled(folder, {"nothing."}, "t"); }).find("no tensor of"),
            std::string::npos);
  const io::RowScaledStoreResult r = io::store_row_scaled(folder, {"gpt."}, "kvstudio-train compact test");
  EXPECT_GT(r.tensors_converted, 0);
  EXPECT_LT(r.bytes_after, r.bytes_before);

  auto after = io::SafetensorsReader::open(weights);
  ASSERT_EQ(after->names(), before->names());
  int64_t converted = 0;
  for (const auto& e : after->index().tensors) {
    const at::Tensor original = before->tensor(e.name);
    const at::Tensor now = after->tensor(e.name);
    if (e.row_scaled) {
      ++converted;
      EXPECT_EQ(e.name.rfind("gpt.", 0), 0u) << e.name;
      EXPECT_GE(original.dim(), 2) << e.name;
      EXPECT_GE(original.numel(), io::kRowScaledMinElements) << e.name;
      const at::Tensor step = original.abs().reshape({original.size(0), -1}).amax(1) / 127.0f;
      const at::Tensor error = (now - original.to(at::kFloat)).abs().reshape({original.size(0), -1}).amax(1);
      EXPECT_TRUE((error <= step * 0.5001f + 1e-12f).all().item<bool>()) << e.name;
    } else {
      EXPECT_EQ(now.scalar_type(), original.scalar_type()) << e.name;
      EXPECT_TRUE(at::equal(now, original)) << e.name;
    }
  }
  EXPECT_EQ(converted, r.tensors_converted);
  const auto manifest = io::ModelBundle::open(folder).manifest;
  EXPECT_EQ(manifest["provenance"]["weights_storage"]["tensors"], r.tensors_converted);
  EXPECT_EQ(manifest["provenance"]["weights_storage"]["command"], "kvstudio-train compact test");

  // Idempotent: the second run converts nothing and leaves the file as it was.
  const std::string first = test::read_bytes(weights);
  EXPECT_EQ(io::store_row_scaled(folder, {"gpt."}, "again").tensors_converted, 0);
  EXPECT_EQ(test::read_bytes(weights), first);

  auto model = llamagen::LlamaGenModel::load(io::ModelBundle::open(folder), at::Device(at::kCPU));
  EXPECT_EQ(model.name, "t");
}
