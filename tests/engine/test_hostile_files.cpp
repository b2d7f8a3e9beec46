// Hostile files given to every reader of outside input: pickles that try to run
// code or exhaust the reader, checkpoints, safetensors files and bundles that lie
// about sizes, truncated files. Each must be refused with a kvs::FormatError of
// one line that names the file and the problem; nothing may be executed or
// written (the scratch folder holds only the input afterwards). The table in
// docs/reliability.md lists these cases with their messages.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "engine/cache/policies/amskv_calibration.h"
#include "engine/cache/policies/head_variance_profile.h"
#include "engine/cache/policies/layer_selectivity_profile.h"
#include "engine/cache/policies/scale_attention_profile.h"
#include "engine/core/errors.h"
#include "engine/image/png_file.h"
#include "engine/io/model_bundle.h"
#include "engine/io/safetensors_reader.h"
#include "engine/io/torch_checkpoint.h"
#include "engine/io/zip_archive.h"
#include "hostile_files.h"

namespace {
namespace fs = std::filesystem;
using kvs::test::checkpoint_archive;
using kvs::test::PickleBytes;
using kvs::test::ZipBytes;

class HostileFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("kvs_hostile_" + std::to_string(::getpid()) + "_" +
                                             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    marker_ = (dir_ / "pwned").string();
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  std::string write(const std::string& name, const std::string& bytes) const {
    const fs::path path = dir_ / name;
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << bytes;
    return path.string();
  }

  // Reads `path` with `read`, which must throw FormatError; checks the message
  // names the file and holds `expect` on one line, and that nothing new exists.
  void expect_refused(const std::string& path, const std::function<void()>& read, const std::string& expect) {
    std::vector<fs::path> before;
    for (const auto& e : fs::recursive_directory_iterator(dir_)) before.push_back(e.path());
    std::string message;
    try {
      read();
      ADD_FAILURE() << path << ": read without an error";
    } catch (const kvs::FormatError& e) {
      message = e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << path << ": expected kvs::FormatError, got: " << e.what();
    }
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find(expect), std::string::npos) << "expected '" << expect << "' in: " << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << "not one line: " << message;
    std::vector<fs::path> after;
    for (const auto& e : fs::recursive_directory_iterator(dir_)) after.push_back(e.path());
    EXPECT_EQ(after.size(), before.size()) << path << ": the reader wrote something";
    EXPECT_FALSE(fs::exists(marker_)) << "a command of the file ran";
  }

  void expect_checkpoint_refused(const std::string& name, const std::string& bytes, const std::string& expect) {
    const std::string path = write(name, bytes);
    expect_refused(
        path, [&] { kvs::io::read_torch_state_dict(path, "checkpoint"); }, expect);
  }

  fs::path dir_;
  std::string marker_;
};

// ---- pickles that try to run code ------------------------------------------------------

TEST_F(HostileFiles, OsSystemThroughGlobalAndReduceIsNeverCalled) {
  // {"model": {"w": os.system("touch <marker>")}}
  PickleBytes p;
  p.op('}').str("model").op('}').str("w").global("os", "system").str("touch " + marker_).op('\x85').op('R');
  p.op('s').op('s').stop();
  expect_checkpoint_refused("os_system.pt", checkpoint_archive(p.bytes),
                            "state dict \"model\" entry 'w' is an opaque object made by os.system, expected a tensor");
}

TEST_F(HostileFiles, BuiltinsEvalThroughStackGlobalIsNeverCalled) {
  PickleBytes p;
  p.stack_global("builtins", "eval").str("__import__('os').system('touch " + marker_ + "')").op('\x85').op('R');
  p.stop();
  expect_checkpoint_refused("builtins_eval.pt", checkpoint_archive(p.bytes),
                            "top level is an opaque object made by builtins.eval, expected a dict");
}

TEST_F(HostileFiles, BuiltinsExecAsADictValueIsNeverCalled) {
  // A state dict whose entry is exec(...) made through NEWOBJ and BUILD.
  PickleBytes p;
  p.op('}').str("w").stack_global("builtins", "exec").str("open('" + marker_ + "', 'w')").op('\x85').op('\x81');
  p.op('}').op('b').op('s').stop();
  expect_checkpoint_refused("builtins_exec.pt", checkpoint_archive(p.bytes),
                            "entry 'w' is an opaque object made by builtins.exec, expected a tensor");
}

TEST_F(HostileFiles, UnknownGlobalAsAStorageTypeIsRefused) {
  PickleBytes p;
  p.op('}').str("w").global("torch._utils", "_rebuild_tensor_v2").op('(');
  p.op('(').str("storage").global("evil", "Storage").str("0").str("cpu").long8(4).op('t').op('Q');
  p.long8(0).long8(4).op('\x85').long8(1).op('\x85').op('\x89').op(')').op('t').op('R').op('s').stop();
  expect_checkpoint_refused("unknown_storage.pt", checkpoint_archive(p.bytes, {{"0", {1, 2, 3, 4}}}),
                            "tensor 'w' has storage type evil.Storage, which is not supported");
}

// ---- pickles that try to exhaust the reader ----------------------------------------------

TEST_F(HostileFiles, AMillionNestedMarksAreRefused) {
  PickleBytes p;
  p.bytes.append(1000000, '(');
  p.op('}').stop();
  expect_checkpoint_refused("deep_marks.pt", checkpoint_archive(p.bytes), "more than 65536 nested marks");
}

TEST_F(HostileFiles, AMillionNestedListsAreNotRecursedInto) {
  // [[[[...]]]] a million deep: built and freed without recursion.
  PickleBytes p;
  for (int i = 0; i < 1000000; ++i) p.op(']');
  for (int i = 0; i < 999999; ++i) p.op('a');
  p.stop();
  expect_checkpoint_refused("deep_lists.pt", checkpoint_archive(p.bytes), "top level is a list, expected a dict");
}

// ---- tensors that lie about their storage --------------------------------------------------

TEST_F(HostileFiles, StorageLargerThanItsRecordIsRefused) {
  PickleBytes p;
  p.op('}').str("w").tensor("0", 1000, 0, {1000}, {1}).op('s').stop();
  expect_checkpoint_refused("big_storage.pt", checkpoint_archive(p.bytes, {{"0", {1, 2, 3, 4}}}),
                            "record data/0 has 16 bytes, expected 4000 (1000 x float32)");
}

TEST_F(HostileFiles, StorageWhoseByteSizeOverflowsIsRefused) {
  PickleBytes p;
  p.op('}').str("w").tensor("0", int64_t{1} << 62, 0, {4}, {1}).op('s').stop();
  expect_checkpoint_refused("overflow_storage.pt", checkpoint_archive(p.bytes, {{"0", {1, 2, 3, 4}}}),
                            "record data/0 has 16 bytes, expected more than 2^64");
}

TEST_F(HostileFiles, TensorOutsideItsStorageIsRefused) {
  PickleBytes p;
  p.op('}').str("w").tensor("0", 4, 3, {2}, {1}).op('s').stop();
  expect_checkpoint_refused("outside.pt", checkpoint_archive(p.bytes, {{"0", {1, 2, 3, 4}}}),
                            "tensor view (offset 3) outside its storage data/0 of 4 elements");
}

TEST_F(HostileFiles, ShapeTimesStrideOverflowIsRefused) {
  PickleBytes p;
  p.op('}').str("w").tensor("0", 4, 0, {int64_t{1} << 61, 2}, {8, 1}).op('s').stop();
  expect_checkpoint_refused("stride_overflow.pt", checkpoint_archive(p.bytes, {{"0", {1, 2, 3, 4}}}),
                            "outside its storage data/0 of 4 elements");
  PickleBytes q;
  q.op('}').str("w").tensor("0", 4, 0, {int64_t{1} << 62, 8}, {0, 0}).op('s').stop();
  expect_checkpoint_refused("numel_overflow.pt", checkpoint_archive(q.bytes, {{"0", {1, 2, 3, 4}}}),
                            "tensor has too many elements");
}

TEST_F(HostileFiles, NegativeStrideIsRefused) {
  PickleBytes p;
  p.op('}').str("w").tensor("0", 4, 3, {4}, {-1}).op('s').stop();
  expect_checkpoint_refused("negative_stride.pt", checkpoint_archive(p.bytes, {{"0", {1, 2, 3, 4}}}),
                            "tensor stride has a negative entry -1");
}

// ---- damaged zip containers ----------------------------------------------------------------

TEST_F(HostileFiles, TruncatedCheckpointIsRefused) {
  PickleBytes p;
  p.op('}').str("w").tensor("0", 4, 0, {4}, {1}).op('s').stop();
  const std::string whole = checkpoint_archive(p.bytes, {{"0", {1, 2, 3, 4}}});
  expect_checkpoint_refused("truncated.pt", whole.substr(0, whole.size() / 2),
                            "damaged or truncated zip archive: no end-of-central-directory record");
}

TEST_F(HostileFiles, CompressedEntryIsRefused) {
  ZipBytes zip;
  zip.add("data.pkl", "x");
  zip.entries[0].method = 8;
  expect_checkpoint_refused(
      "deflated.pt", zip.bytes(),
      "zip entry archive/data.pkl is compressed (method 8); torch.save writes stored entries only");
}

TEST_F(HostileFiles, EntryLongerThanTheFileIsRefused) {
  PickleBytes p;
  p.op('}').stop();
  ZipBytes zip;
  zip.add("data.pkl", p.bytes);
  expect_checkpoint_refused("long_entry.pt", zip.bytes(1000000), "runs past the start of the central directory");
}

TEST_F(HostileFiles, ChangedBytesFailTheCrcCheck) {
  PickleBytes p;
  p.op('}').stop();
  std::string bytes = checkpoint_archive(p.bytes);
  const auto at = bytes.find(p.bytes);
  bytes[at + 2] = ']';  // EMPTY_DICT -> EMPTY_LIST after the CRC was taken
  expect_checkpoint_refused("crc.pt", bytes, "record data.pkl does not match its CRC-32");
}

TEST_F(HostileFiles, EntryCountBeyondTheDirectoryIsRefused) {
  PickleBytes p;
  p.op('}').stop();
  std::string bytes = checkpoint_archive(p.bytes);
  bytes[bytes.size() - 12] = '\x7f';  // total entries of the end record: 0x7f02
  bytes[bytes.size() - 11] = '\x7f';
  expect_checkpoint_refused("count.pt", bytes, "entries cannot fit in a central directory");
}

// ---- safetensors files that lie about sizes ------------------------------------------------

std::string safetensors_bytes(const std::string& header, std::size_t data_bytes, uint64_t declared_length = 0) {
  std::string out;
  const uint64_t n = declared_length != 0 ? declared_length : header.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  return out + header + std::string(data_bytes, '\0');
}

TEST_F(HostileFiles, SafetensorsThatLieAboutSizesAreRefused) {
  struct Case {
    std::string name, bytes, expect;
  };
  const std::string ok = R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})";
  const std::vector<Case> cases = {
      {"header_length.safetensors", safetensors_bytes(ok, 16, uint64_t{1} << 40), "header length 1099511627776"},
      {"span_past_data.safetensors", safetensors_bytes(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8),
       "lies beyond the data section"},
      {"shape_vs_span.safetensors", safetensors_bytes(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})", 16),
       "tensor 'w' with dtype F32 and shape [3]"},
      {"shape_overflow.safetensors",
       safetensors_bytes(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,16]}})", 16),
       "is too large"},
      {"truncated.safetensors", safetensors_bytes(ok, 16).substr(0, 30), "header length"},
  };
  for (const Case& c : cases) {
    const std::string path = write(c.name, c.bytes);
    expect_refused(
        path, [&] { kvs::io::SafetensorsReader::open(path); }, c.expect);
  }
}

// ---- bundles that lie ------------------------------------------------------------------------

TEST_F(HostileFiles, BundleManifestsThatLieAreRefused) {
  struct Case {
    std::string name, manifest, expect;
  };
  const std::string weights = R"("files": {"weights": "w.safetensors"})";
  const std::vector<Case> cases = {
      {"version",
       R"({"format": "kvstudio-bundle", "format_version": 4294967297, "family": "var", "architecture": {}, )" +
           weights + "}",
       "format_version 4294967297 is newer than this KV Studio understands"},
      {"format_type", R"({"format": 1, "format_version": 1})", "field \"format\" must be \"kvstudio-bundle\""},
      {"escape",
       R"({"format": "kvstudio-bundle", "format_version": 1, "family": "var", "architecture": {},)"
       R"( "files": {"weights": "../../etc/passwd"}})",
       "files.weights must be a file inside the bundle folder"},
      {"shared_escape",
       R"({"format": "kvstudio-bundle", "format_version": 1, "family": "var", "architecture": {},)"
       R"( "files": {"weights": "w.safetensors", "evaluation_classifier": {"shared": "../../etc/passwd"}}})",
       "files.evaluation_classifier must be {\"shared\": \"<file name>\"}"},
      {"name_type",
       R"({"format": "kvstudio-bundle", "format_version": 1, "name": 7, "family": "var", "architecture": {}, )" +
           weights + "}",
       "field \"name\" must be a string"},
      {"truncated", R"({"format": "kvstudio-bundle", "format_ver)", "not valid JSON"},
  };
  for (const Case& c : cases) {
    const std::string path = write(c.name + "/model.json", c.manifest);
    write(c.name + "/w.safetensors", safetensors_bytes("{}", 0));
    expect_refused(
        path, [&] { kvs::io::ModelBundle::open(path); }, c.expect);
  }
  // A well-formed manifest whose weights file lies about its header length.
  const std::string good =
      R"({"format": "kvstudio-bundle", "format_version": 1, "family": "var", "architecture": {}, )" + weights + "}";
  write("lying_weights/model.json", good);
  const std::string lying = write("lying_weights/w.safetensors", safetensors_bytes("{}", 0, 1u << 20));
  const kvs::io::ModelBundle bundle = kvs::io::ModelBundle::open((dir_ / "lying_weights").string());
  expect_refused(
      lying, [&] { kvs::io::SafetensorsReader::open(bundle.weights_path()); }, "header length 1048576");
}

// ---- PNGs and calibration files ----------------------------------------------------------------

std::string png_chunk(const std::string& type, const std::string& data, uint32_t declared = 0) {
  std::string out;
  const uint32_t n = declared != 0 ? declared : static_cast<uint32_t>(data.size());
  for (int i = 3; i >= 0; --i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  const std::string body = type + data;
  const uint32_t crc = kvs::io::zip_crc32(reinterpret_cast<const uint8_t*>(body.data()), body.size());
  out += body;
  for (int i = 3; i >= 0; --i) out.push_back(static_cast<char>((crc >> (8 * i)) & 0xff));
  return out;
}

TEST_F(HostileFiles, PngsThatLieAboutSizesAreRefused) {
  const std::string signature = "\x89PNG\r\n\x1a\n";
  auto ihdr = [](uint32_t w, uint32_t h) {
    std::string d;
    for (uint32_t v : {w, h})
      for (int i = 3; i >= 0; --i) d.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    return d + std::string("\x08\x02\x00\x00\x00", 5);
  };
  // Text chunk declaring 2 GB (libpng would clear that much before reading it).
  const std::string path = write("huge_chunk.png",
                                 signature + png_chunk("IHDR", ihdr(4, 4)) + png_chunk("tEXt", "a", 0x7a000000));
  expect_refused(
      path, [&] { kvs::read_png(path); }, "corrupt PNG (a chunk declares 2046820352 bytes but only");
  // A 16384 x 16384 image in a file of 58 bytes.
  const std::string big = write("huge_image.png", signature + png_chunk("IHDR", ihdr(16384, 16384)) +
                                                      png_chunk("IDAT", "x") + png_chunk("IEND", ""));
  expect_refused(
      big, [&] { kvs::read_png(big); }, "bytes can hold");
  const std::string cut = write("truncated.png", signature + png_chunk("IHDR", ihdr(4, 4)).substr(0, 10));
  expect_refused(
      cut, [&] { kvs::read_png(cut); }, "corrupt PNG");
}

TEST_F(HostileFiles, CalibrationFilesThatLieAboutSizesAreRefused) {
  const std::string heat = write("heatkv_calibration.json",
                                 R"({"format": "kvstudio-scale-attention-profile", "version": 1, "layers": 2,)"
                                 R"( "heads": 4611686018427387904, "unit_tokens": [1, 4], "beta": [1, 0, 0.5, 0.5]})");
  expect_refused(
      heat, [&] { kvs::ScaleAttentionProfile::load(heat); },
      "beta has 4 values, expected layers x heads x scales^2 = more than 2^63");
  const std::string format = write("amskv_calibration.json", R"({"format": 5})");
  expect_refused(
      format, [&] { kvs::AmsKvCalibration::load(format); }, "format is not 'kvstudio-amskv-calibration'");
  const std::string hack = write("hack_calibration.json",
                                 R"({"format": "kvstudio-head-variance-profile", "version": 1, "layers": 4,)"
                                 R"( "heads": 4611686018427387904, "unit_tokens": [1, 4], "variance": []})");
  expect_refused(
      hack, [&] { kvs::HeadVarianceProfile::load(hack); },
      "variance has 0 values, expected layers x heads x scales = more than 2^63");
  const std::string layers = write("scalekv_calibration.json",
                                   R"({"format": "kvstudio-scalekv-calibration", "version": 1, "layers": 1e300,)"
                                   R"( "unit_tokens": [1, 4], "top_k": 16, "current_ratio": [], "history_top_k": []})");
  expect_refused(
      layers, [&] { kvs::LayerSelectivityProfile::load(layers); }, "field \"layers\" must be an integer, got 1e+300");
}

}  // namespace
