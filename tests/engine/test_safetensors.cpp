// The safetensors reader must accept valid files without copying and reject every
// kind of corruption with a message that names the file and the problem.
#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine/core/errors.h"
#include "engine/io/safetensors_reader.h"
#include "engine/io/safetensors_writer.h"
#include "tests/engine/test_helpers.h"

using namespace kvs;

namespace {

std::string make_file(const nlohmann::json& header, const std::string& data, bool pad = true) {
  std::string h = header.dump();
  while (pad && h.size() % 8) h.push_back(' ');
  std::string out;
  uint64_t n = h.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  return out + h + data;
}

std::string parse_error(const std::string& bytes) {
  try {
    io::parse_safetensors(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "x.safetensors");
  } catch (const FormatError& e) {
    return e.what();
  }
  return "no error";
}

nlohmann::json entry(const std::string& dtype, std::vector<int64_t> shape, uint64_t b, uint64_t e) {
  return {{"dtype", dtype}, {"shape", shape}, {"data_offsets", {b, e}}};
}

}  // namespace

TEST(Safetensors, ParsesValidHeader) {
  const std::string f =
      make_file({{"a", entry("F32", {2, 2}, 0, 16)}, {"b", entry("I64", {1}, 16, 24)}, {"__metadata__", {{"k", "v"}}}},
                std::string(24, '\0'));
  auto index = io::parse_safetensors(reinterpret_cast<const uint8_t*>(f.data()), f.size(), "x");
  ASSERT_EQ(index.tensors.size(), 2u);
  EXPECT_EQ(index.find("a")->shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(index.metadata.at("k"), "v");
  EXPECT_EQ(index.data_bytes, 24u);
}

TEST(Safetensors, RejectsTruncatedHeaderLength) {
  EXPECT_NE(parse_error("abc").find("too short"), std::string::npos);
  std::string f = make_file({{"a", entry("F32", {4}, 0, 16)}}, std::string(16, '\0'));
  EXPECT_NE(parse_error(f.substr(0, 20)).find("exceeds the file size"), std::string::npos);
}

TEST(Safetensors, RejectsTruncatedData) {
  std::string f = make_file({{"a", entry("F32", {4}, 0, 16)}}, std::string(16, '\0'));
  const std::string msg = parse_error(f.substr(0, f.size() - 4));
  EXPECT_NE(msg.find("x.safetensors"), std::string::npos) << msg;
  EXPECT_NE(msg.find("lies beyond the data section"), std::string::npos) << msg;
}

TEST(Safetensors, RejectsBadJsonAndBadFields) {
  std::string bad_json = make_file(nlohmann::json::object(), "");
  bad_json.replace(8, 2, "{x");
  EXPECT_NE(parse_error(bad_json).find("not valid JSON"), std::string::npos);
  EXPECT_NE(parse_error(make_file({{"a", entry("F8_E4M3", {1}, 0, 1)}}, std::string(1, '\0')))
                .find("unsupported dtype 'F8_E4M3'"),
            std::string::npos);
  EXPECT_NE(parse_error(make_file({{"a", entry("F32", {3}, 0, 8)}}, std::string(8, '\0'))).find("needs 12 bytes"),
            std::string::npos);
  EXPECT_NE(parse_error(make_file({{"a", entry("F32", {2}, 8, 0)}}, std::string(8, '\0'))).find("end before begin"),
            std::string::npos);
  EXPECT_NE(parse_error(make_file({{"a", {{"dtype", "F32"}, {"shape", {1}}}}}, ""))
                .find("must have dtype, shape and data_offsets"),
            std::string::npos);
  EXPECT_NE(parse_error(make_file({{"a", entry("F32", {-1}, 0, 4)}}, std::string(4, '\0'))).find("non-negative"),
            std::string::npos);
}

TEST(Safetensors, RejectsOverlapAndDuplicates) {
  const std::string overlap = make_file({{"a", entry("F32", {2}, 0, 8)}, {"b", entry("F32", {2}, 4, 12)}},
                                        std::string(12, '\0'));
  EXPECT_NE(parse_error(overlap).find("overlap"), std::string::npos);
  std::string h =
      R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})";
  std::string dup;
  uint64_t n = h.size();
  for (int i = 0; i < 8; ++i) dup.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  dup += h + "xy";
  EXPECT_NE(parse_error(dup).find("more than once"), std::string::npos);
}

TEST(Safetensors, RoundTripsAllDtypesWithoutCopy) {
  test::TempDir dir;
  const std::string path = dir.file("t.safetensors");
  io::NamedTensors tensors = {{"f32", at::arange(6, at::kFloat).reshape({2, 3})},
                              {"f16", at::arange(4, at::kFloat).to(at::kHalf)},
                              {"bf16", at::arange(4, at::kFloat).to(at::kBFloat16)},
                              {"i64", at::arange(3, at::kLong)},
                              {"i32", at::arange(5, at::kInt)},
                              {"u8", at::arange(7, at::kByte)},
                              {"i8", at::arange(-3, 4, at::kChar)},
                              {"empty", at::zeros({0, 4}, at::kFloat)}};
  io::write_safetensors(path, tensors, {{"note", "hello"}});
  auto reader = io::SafetensorsReader::open(path);
  EXPECT_EQ(reader->index().metadata.at("note"), "hello");
  for (const auto& [name, t] : tensors) {
    at::Tensor got = reader->tensor(name);
    EXPECT_EQ(got.scalar_type(), t.scalar_type()) << name;
    EXPECT_TRUE(at::equal(got, t)) << name;
  }
  // Zero copy: two reads of an aligned tensor share the mapping.
  EXPECT_EQ(reader->tensor("f32").data_ptr(), reader->tensor("f32").data_ptr());
  EXPECT_THROW(reader->tensor("missing"), FormatError);
  // Owned copies (a model's weights): equal values, each read its own memory.
  auto owned = io::SafetensorsReader::open(path, io::TensorMemory::OwnedCopy);
  for (const auto& [name, t] : tensors) EXPECT_TRUE(at::equal(owned->tensor(name), t)) << name;
  EXPECT_NE(owned->tensor("f32").data_ptr(), owned->tensor("f32").data_ptr());
}

TEST(Safetensors, MissingFileIsFileError) {
  try {
    io::SafetensorsReader::open("/nonexistent/w.safetensors");
    FAIL();
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/w.safetensors: does not exist"), std::string::npos);
  }
}

TEST(Safetensors, ReadsConformanceWeights) {
  if (const std::string why = test::conformance_skip_reason(); !why.empty()) GTEST_SKIP() << why;
  auto reader = io::SafetensorsReader::open(test::conformance_dir() + "/llamagen_c2i_tiny.weights.safetensors");
  EXPECT_EQ(reader->tensor("gpt.tok_embeddings.weight").sizes(), (at::IntArrayRef{512, 128}));
}
