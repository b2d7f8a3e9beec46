// kvs::io::read_torch_state_dict against real torch.save files (written by
// tests/data/make_torch_checkpoints.py into $KVSTUDIO_TORCH_CKPT_DIR, see
// torch_checkpoint_tests.cmake) and against hand-made archives whose data.pkl is
// malformed or hostile (those need no Python and always run).
#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <caffe2/serialize/inline_container.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "engine/core/errors.h"
#include "engine/io/torch_checkpoint.h"

namespace {
namespace fs = std::filesystem;
using kvs::io::read_torch_state_dict;
using StateDict = std::vector<std::pair<std::string, at::Tensor>>;

// ---- helpers for the generated checkpoints -------------------------------------

std::string ckpt_dir() {
  const char* dir = std::getenv("KVSTUDIO_TORCH_CKPT_DIR");
  return dir ? dir : "";
}

#define REQUIRE_CKPT_DIR()                                                                                   \
  do {                                                                                                       \
    if (ckpt_dir().empty())                                                                                  \
      GTEST_SKIP() << "KVSTUDIO_TORCH_CKPT_DIR is not set (run tests/data/make_torch_checkpoints.py OUTDIR " \
                      "and point it there; ctest does this through the make_torch_checkpoints fixture)";     \
  } while (0)

std::string ckpt(const std::string& name) { return (fs::path(ckpt_dir()) / name).string(); }

nlohmann::json expected() {
  std::ifstream in(ckpt("expected.json"));
  if (!in) throw std::runtime_error("cannot open " + ckpt("expected.json"));
  return nlohmann::json::parse(in);
}

c10::ScalarType dtype_from_name(const std::string& name) {
  static const std::pair<const char*, c10::ScalarType> kTable[] = {{"float32", at::kFloat}, {"float64", at::kDouble},
                                                                   {"float16", at::kHalf},  {"bfloat16", at::kBFloat16},
                                                                   {"int64", at::kLong},    {"int32", at::kInt},
                                                                   {"int16", at::kShort},   {"int8", at::kChar},
                                                                   {"uint8", at::kByte},    {"bool", at::kBool}};
  for (const auto& [n, t] : kTable)
    if (name == n) return t;
  throw std::runtime_error("unknown dtype in expected.json: " + name);
}

double element_sum(const at::Tensor& t) { return t.to(at::kDouble).sum().item<double>(); }

// Sum of element i times i in row-major order: sensitive to the order of elements.
double weighted_sum(const at::Tensor& t) {
  at::Tensor flat = t.to(at::kDouble).reshape({-1});
  return (flat * at::arange(flat.numel(), at::TensorOptions().dtype(at::kDouble))).sum().item<double>();
}

void expect_close(double got, double want, const std::string& what) {
  EXPECT_LE(std::abs(got - want), 1e-3 * std::max(1.0, std::abs(want)))
      << what << ": got " << got << ", expected " << want;
}

std::vector<std::string> keys_of(const StateDict& sd) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : sd) keys.push_back(k);
  return keys;
}

void expect_matches(const StateDict& sd, const nlohmann::json& want, const std::string& file) {
  ASSERT_EQ(sd.size(), want.size()) << file;
  for (std::size_t i = 0; i < sd.size(); ++i) {
    const auto& [key, t] = sd[i];
    const auto& w = want[i];
    const std::string what = file + " " + key;
    EXPECT_EQ(key, w["key"].get<std::string>()) << file << " entry " << i;
    EXPECT_EQ(t.sizes().vec(), w["shape"].get<std::vector<int64_t>>()) << what;
    EXPECT_EQ(t.scalar_type(), dtype_from_name(w["dtype"].get<std::string>())) << what;
    EXPECT_TRUE(t.device().is_cpu()) << what;
    expect_close(element_sum(t), w["sum"].get<double>(), what + " sum");
    expect_close(weighted_sum(t), w["wsum"].get<double>(), what + " weighted sum");
  }
}

// Runs `fn`, expects a kvs::FormatError, and returns its message.
template <typename Fn>
std::string format_error_of(Fn fn) {
  try {
    fn();
  } catch (const kvs::FormatError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected kvs::FormatError, got another exception: " << e.what();
    return "";
  }
  ADD_FAILURE() << "expected kvs::FormatError, nothing was thrown";
  return "";
}

// ---- hand-made archives ----------------------------------------------------------

// Builds pickle bytes opcode by opcode.
struct Pickle {
  std::string bytes = std::string("\x80\x02", 2);  // PROTO 2
  Pickle& op(char c) {
    bytes.push_back(c);
    return *this;
  }
  Pickle& op(unsigned char c) { return op(static_cast<char>(c)); }
  Pickle& u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    return *this;
  }
  Pickle& str(const std::string& s) {  // BINUNICODE
    op('X').u32(static_cast<uint32_t>(s.size()));
    bytes += s;
    return *this;
  }
  Pickle& int1(uint8_t v) { return op('K').op(static_cast<char>(v)); }
  Pickle& global(const std::string& module, const std::string& name) {
    op('c');
    bytes += module + "\n" + name + "\n";
    return *this;
  }
  // _rebuild_tensor_v2(('storage', torch.FloatStorage, key, 'cpu', numel), offset, (size,), (1,), False, ())
  Pickle& tensor1d(const std::string& key, uint8_t numel, uint8_t offset, uint8_t size) {
    global("torch._utils", "_rebuild_tensor_v2").op('(');
    op('(').str("storage").global("torch", "FloatStorage").str(key).str("cpu").int1(numel).op('t').op('Q');
    int1(offset).int1(size).op('\x85').int1(1).op('\x85').op('\x89').op(')').op('t').op('R');
    return *this;
  }
  Pickle& stop() { return op('.'); }
};

class Scratch {
 public:
  Scratch() {
    dir_ = fs::path(::testing::TempDir()) / ("kvs_torch_ckpt_" + std::to_string(::getpid()) + "_" +
                                             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // A zip archive as torch.save lays it out: <name>/data.pkl, <name>/data/<key>, version.
  std::string archive(const std::string& name, const std::string& pickle,
                      const std::vector<std::pair<std::string, std::vector<float>>>& storages = {}) const {
    const std::string file = path(name);
    caffe2::serialize::PyTorchStreamWriter writer(file);
    writer.writeRecord("data.pkl", pickle.data(), pickle.size());
    for (const auto& [key, values] : storages)
      writer.writeRecord("data/" + key, values.data(), values.size() * sizeof(float));
    writer.writeEndOfFile();
    return file;
  }

 private:
  fs::path dir_;
};

std::string read_record(const std::string& file, const std::string& record) {
  caffe2::serialize::PyTorchStreamReader reader(file);
  auto [ptr, n] = reader.getRecord(record);
  return std::string(static_cast<const char*>(ptr.get()), n);
}

// ---- generated checkpoints ---------------------------------------------------------

TEST(TorchCheckpoint, EveryValidCheckpointMatchesWhatPyTorchSaved) {
  REQUIRE_CKPT_DIR();
  const auto want = expected();
  ASSERT_GE(want["valid"].size(), 10u);
  for (const auto& [file, tensors] : want["valid"].items()) {
    SCOPED_TRACE(file);
    StateDict sd;
    ASSERT_NO_THROW(sd = read_torch_state_dict(ckpt(file), "checkpoint")) << file;
    expect_matches(sd, tensors, file);
  }
}

TEST(TorchCheckpoint, ModuleStateDictUnderModelKeepsInsertionOrder) {
  REQUIRE_CKPT_DIR();
  const StateDict sd = read_torch_state_dict(ckpt("model_wrapped.pt"), "checkpoint");
  // The OrderedDict's _metadata attribute (applied with BUILD) is not an entry.
  const std::vector<std::string> order = {"counts",      "embed.weight", "proj.weight",     "proj.bias",
                                          "norm.weight", "norm.bias",    "blocks.0.weight", "blocks.1.weight"};
  EXPECT_EQ(keys_of(sd), order);
  EXPECT_EQ(sd[0].second.scalar_type(), at::kLong);
  EXPECT_TRUE(at::equal(sd[0].second, at::arange(6, at::TensorOptions().dtype(at::kLong)).reshape({2, 3})));
  // The same tensors whatever wraps them.
  for (const char* other : {"raw_state_dict.pt", "state_dict_key.pt", "module_protocol5.pt", "cuda_location.pt"}) {
    const StateDict o = read_torch_state_dict(ckpt(other), "checkpoint");
    ASSERT_EQ(keys_of(o), order) << other;
    for (std::size_t i = 0; i < sd.size(); ++i)
      EXPECT_TRUE(at::equal(sd[i].second, o[i].second)) << other << " " << sd[i].first;
  }
}

TEST(TorchCheckpoint, TrainingCheckpointIgnoresOptimizerStepsArgsAndExtras) {
  REQUIRE_CKPT_DIR();
  const StateDict model = read_torch_state_dict(ckpt("model_wrapped.pt"), "checkpoint");
  for (const char* file : {"training.pt", "training_protocol4.pt"}) {
    const StateDict sd = read_torch_state_dict(ckpt(file), "checkpoint");
    ASSERT_EQ(keys_of(sd), keys_of(model)) << file;
    for (std::size_t i = 0; i < sd.size(); ++i) EXPECT_TRUE(at::equal(sd[i].second, model[i].second)) << file;
  }
}

TEST(TorchCheckpoint, HalfBFloat16AndIntegerDtypesAreKept) {
  REQUIRE_CKPT_DIR();
  const StateDict sd = read_torch_state_dict(ckpt("dtypes.pt"), "checkpoint");
  std::map<std::string, c10::ScalarType> types;
  for (const auto& [k, t] : sd) types[k] = t.scalar_type();
  EXPECT_EQ(types["half"], at::kHalf);
  EXPECT_EQ(types["bf16"], at::kBFloat16);
  EXPECT_EQ(types["double"], at::kDouble);
  EXPECT_EQ(types["int32"], at::kInt);
  EXPECT_EQ(types["int16"], at::kShort);
  EXPECT_EQ(types["int8"], at::kChar);
  EXPECT_EQ(types["uint8"], at::kByte);
  EXPECT_EQ(types["bool"], at::kBool);
  EXPECT_EQ(types["scalar"], at::kFloat);
  const StateDict typed = read_torch_state_dict(ckpt("dtype_storage_types.pt"), "checkpoint");
  ASSERT_EQ(keys_of(typed), (std::vector<std::string>{"h", "f", "i"}));
  EXPECT_EQ(typed[0].second.scalar_type(), at::kHalf);
  EXPECT_EQ(typed[1].second.scalar_type(), at::kFloat);
  EXPECT_EQ(typed[2].second.scalar_type(), at::kLong);
}

TEST(TorchCheckpoint, NonContiguousViewsKeepOffsetAndStrides) {
  REQUIRE_CKPT_DIR();
  const StateDict sd = read_torch_state_dict(ckpt("views.pt"), "checkpoint");
  ASSERT_EQ(keys_of(sd), (std::vector<std::string>{"transposed_slice", "row", "every_other", "expanded", "empty"}));
  // base = arange(60).reshape(6, 10); transposed_slice = base[1:5, 2:8].t()
  const at::Tensor t = sd[0].second;
  ASSERT_EQ(t.sizes().vec(), (std::vector<int64_t>{6, 4}));
  EXPECT_FALSE(t.is_contiguous());
  for (int64_t i = 0; i < 6; ++i)
    for (int64_t j = 0; j < 4; ++j)
      EXPECT_EQ(t[i][j].item<float>(), static_cast<float>((1 + j) * 10 + 2 + i)) << i << "," << j;
  const at::Tensor row = sd[1].second;
  for (int64_t j = 0; j < 10; ++j) EXPECT_EQ(row[j].item<float>(), static_cast<float>(30 + j));
  // Views of one storage share it, as after torch.load.
  EXPECT_TRUE(t.is_alias_of(row));
  EXPECT_EQ(sd[3].second.stride(1), 0);
  EXPECT_EQ(sd[4].second.numel(), 0);
}

TEST(TorchCheckpoint, ParametersAreReadAsTensors) {
  REQUIRE_CKPT_DIR();
  const StateDict sd = read_torch_state_dict(ckpt("parameters.pt"), "checkpoint");
  ASSERT_EQ(keys_of(sd), (std::vector<std::string>{"weight", "bias"}));
  EXPECT_EQ(sd[0].second.sizes().vec(), (std::vector<int64_t>{2, 3}));
}

TEST(TorchCheckpoint, TextFileIsNotACheckpoint) {
  REQUIRE_CKPT_DIR();
  const std::string path = ckpt("not_a_checkpoint.pt");
  const std::string msg = format_error_of([&] { read_torch_state_dict(path, "checkpoint"); });
  EXPECT_NE(msg.find("checkpoint " + path +
                     ": not a PyTorch checkpoint (expected the zip format written by torch.save)"),
            std::string::npos)
      << msg;
}

TEST(TorchCheckpoint, LegacyFormatIsExplained) {
  REQUIRE_CKPT_DIR();
  const std::string path = ckpt("legacy_format.pt");
  const std::string msg = format_error_of([&] { read_torch_state_dict(path, "tokenizer"); });
  EXPECT_NE(msg.find("tokenizer " + path + ": not a PyTorch checkpoint"), std::string::npos) << msg;
  EXPECT_NE(msg.find("legacy format"), std::string::npos) << msg;
}

TEST(TorchCheckpoint, TruncatedFileIsAFormatError) {
  REQUIRE_CKPT_DIR();
  const std::string path = ckpt("truncated.pt");
  const std::string msg = format_error_of([&] { read_torch_state_dict(path, "checkpoint"); });
  EXPECT_NE(msg.find("checkpoint " + path + ": damaged or truncated"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << "only the first line of LibTorch's message: " << msg;
}

TEST(TorchCheckpoint, NonTensorEntryIsNamed) {
  REQUIRE_CKPT_DIR();
  const std::string path = ckpt("non_tensor.pt");
  const std::string msg = format_error_of([&] { read_torch_state_dict(path, "checkpoint"); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("entry 'scale' is a float, expected a tensor"), std::string::npos) << msg;
}

TEST(TorchCheckpoint, TopLevelListIsRejected) {
  REQUIRE_CKPT_DIR();
  const std::string msg = format_error_of([&] { read_torch_state_dict(ckpt("top_level_list.pt"), "checkpoint"); });
  EXPECT_NE(msg.find("top level is a list, expected a dict"), std::string::npos) << msg;
}

TEST(TorchCheckpoint, EveryInvalidFileIsAFormatError) {
  REQUIRE_CKPT_DIR();
  const auto want = expected();
  ASSERT_GE(want["invalid"].size(), 5u);
  for (const auto& file : want["invalid"]) {
    const std::string name = file.get<std::string>();
    const std::string msg = format_error_of([&] { read_torch_state_dict(ckpt(name), "checkpoint"); });
    EXPECT_NE(msg.find(ckpt(name)), std::string::npos) << name << ": " << msg;
  }
}

// Random single-byte changes and truncations of a real data.pkl: every outcome is a
// state dict or a kvs::Error, never a crash, a hang or another exception type.
TEST(TorchCheckpoint, MutatedPicklesFailCleanly) {
  REQUIRE_CKPT_DIR();
  Scratch scratch;
  const std::string original = read_record(ckpt("training.pt"), "data.pkl");
  // The storages data/0..N of training.pt, so that unmodified ids resolve.
  caffe2::serialize::PyTorchStreamReader src(ckpt("training.pt"));
  std::mt19937 rng(42);
  int ok = 0, rejected = 0;
  for (int iter = 0; iter < 300; ++iter) {
    std::string pkl = original;
    if (iter % 3 == 0) {
      pkl.resize(rng() % pkl.size());
    } else {
      for (int k = 0; k < 1 + iter % 4; ++k) pkl[rng() % pkl.size()] = static_cast<char>(rng() & 0xff);
    }
    const std::string file = scratch.path("m.pt");
    {
      caffe2::serialize::PyTorchStreamWriter writer(file);
      writer.writeRecord("data.pkl", pkl.data(), pkl.size());
      for (const auto& name : src.getAllRecords()) {
        if (name.rfind("data/", 0) != 0) continue;
        auto [ptr, n] = src.getRecord(name);
        writer.writeRecord(name, ptr.get(), n);
      }
      writer.writeEndOfFile();
    }
    try {
      read_torch_state_dict(file, "checkpoint");
      ++ok;
    } catch (const kvs::Error& e) {
      ++rejected;
      EXPECT_NE(std::string(e.what()).find(file), std::string::npos) << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "iteration " << iter << ": unexpected exception type: " << e.what();
    }
  }
  EXPECT_GT(rejected, 0);
  std::cout << "mutated pickles: " << ok << " read, " << rejected << " rejected\n";
}

// ---- hand-made archives (no Python needed) ---------------------------------------------

TEST(TorchCheckpoint, MissingFileIsAFileError) {
  EXPECT_THROW(read_torch_state_dict("/nonexistent/dir/x.pt", "checkpoint"), kvs::FileError);
  try {
    read_torch_state_dict("/nonexistent/dir/x.pt", "tokenizer");
  } catch (const kvs::FileError& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer /nonexistent/dir/x.pt: does not exist"), std::string::npos);
  }
}

TEST(TorchCheckpoint, HandMadeStateDictIsRead) {
  Scratch s;
  Pickle p;
  p.op('}').op('(').str("w").tensor1d("0", 4, 1, 3).str("all").tensor1d("0", 4, 0, 4).op('u').stop();
  const StateDict sd = read_torch_state_dict(s.archive("ok.pt", p.bytes, {{"0", {1, 2, 3, 4}}}), "checkpoint");
  ASSERT_EQ(keys_of(sd), (std::vector<std::string>{"w", "all"}));
  EXPECT_EQ(element_sum(sd[0].second), 9.0);  // elements 1..3 of the storage
  EXPECT_EQ(element_sum(sd[1].second), 10.0);
}

TEST(TorchCheckpoint, ViewOutsideItsStorageIsRejected) {
  Scratch s;
  Pickle p;
  p.op('}').str("w").tensor1d("0", 4, 2, 3).op('s').stop();  // elements 2..4 of 4
  const std::string msg = format_error_of([&] {
    read_torch_state_dict(s.archive("oob.pt", p.bytes, {{"0", {1, 2, 3, 4}}}), "checkpoint");
  });
  EXPECT_NE(msg.find("outside its storage data/0 of 4 elements"), std::string::npos) << msg;
}

TEST(TorchCheckpoint, StorageRecordOfTheWrongSizeIsRejected) {
  Scratch s;
  Pickle p;
  p.op('}').str("w").tensor1d("0", 8, 0, 8).op('s').stop();
  const std::string msg = format_error_of([&] {
    read_torch_state_dict(s.archive("size.pt", p.bytes, {{"0", {1, 2, 3, 4}}}), "checkpoint");
  });
  EXPECT_NE(msg.find("record data/0 has 16 bytes, expected 32"), std::string::npos) << msg;
}

TEST(TorchCheckpoint, MissingStorageRecordIsRejected) {
  Scratch s;
  Pickle p;
  p.op('}').str("w").tensor1d("7", 4, 0, 4).op('s').stop();
  const std::string msg = format_error_of(
      [&] { read_torch_state_dict(s.archive("missing.pt", p.bytes), "checkpoint"); });
  EXPECT_NE(msg.find("tensor 'w' refers to the missing record data/7"), std::string::npos) << msg;
}

TEST(TorchCheckpoint, MalformedPicklesNameTheProblem) {
  Scratch s;
  struct Case {
    std::string name, pickle, expect;
  };
  Pickle unknown;
  unknown.op('}').op('I');  // INT (protocol 0) is not supported
  Pickle no_stop;
  no_stop.op('}');
  Pickle long_string;
  long_string.op('X').u32(1000).op('a');
  Pickle bad_memo;
  bad_memo.op('h').op('\x07');
  Pickle underflow;
  underflow.op('}').op('s');
  Pickle protocol;
  protocol.bytes = std::string("\x80\x09}.", 4);
  Pickle two_values;
  two_values.op('}').op('}').stop();
  Pickle unhashable;
  unhashable.op('}').op(']').op('N').op('s').stop();
  const std::vector<Case> cases = {
      {"unknown.pt", unknown.bytes, "unknown pickle opcode 0x49 at offset 3"},
      {"no_stop.pt", no_stop.bytes, "ends without a STOP opcode"},
      {"long_string.pt", long_string.bytes, "string of 1000 bytes but only 1 remain"},
      {"bad_memo.pt", bad_memo.bytes, "memo entry 7 is not defined"},
      {"underflow.pt", underflow.bytes, "(opcode SETITEM): stack underflow"},
      {"protocol.pt", protocol.bytes, "pickle protocol 9 is not supported"},
      {"two_values.pt", two_values.bytes, "STOP with 2 values"},
      {"unhashable.pt", unhashable.bytes, "not hashable"},
  };
  for (const auto& c : cases) {
    const std::string file = s.archive(c.name, c.pickle);
    const std::string msg = format_error_of([&] { read_torch_state_dict(file, "checkpoint"); });
    EXPECT_NE(msg.find("checkpoint " + file + ": "), std::string::npos) << c.name << ": " << msg;
    EXPECT_NE(msg.find(c.expect), std::string::npos) << c.name << ": " << msg;
  }
}

TEST(TorchCheckpoint, DeepAndCyclicStructuresDoNotCrash) {
  Scratch s;
  // A million nested tuples: no recursion in building or freeing them.
  Pickle deep;
  deep.op('N');
  deep.bytes.append(1000000, '\x85');  // TUPLE1
  deep.stop();
  std::string msg = format_error_of([&] { read_torch_state_dict(s.archive("deep.pt", deep.bytes), "checkpoint"); });
  EXPECT_NE(msg.find("top level is a tuple"), std::string::npos) << msg;
  // A list that contains itself, next to a state dict: ignored.
  Pickle cyclic;
  cyclic.op('}').op('(').str("loop").op(']').op('q').op('\x00').op('h').op('\x00').op('a');
  cyclic.str("model").op('}').str("w").tensor1d("0", 4, 0, 4).op('s').op('u').stop();
  const StateDict sd = read_torch_state_dict(s.archive("cyclic.pt", cyclic.bytes, {{"0", {1, 2, 3, 4}}}), "checkpoint");
  EXPECT_EQ(keys_of(sd), std::vector<std::string>{"w"});
}

TEST(TorchCheckpoint, PickleBombsAreStopped) {
  Scratch s;
  // args = ([(None, None)] * 20000,), then OrderedDict(*args) 5000 times through the
  // memo: 6 bytes of input per call, 20000 insertions each.
  Pickle p;
  p.global("collections", "OrderedDict").op('q').op('\x01');
  p.op('N').op('N').op('\x86').op('q').op('\x02').op('0');
  p.op(']').op('(');
  for (int i = 0; i < 20000; ++i) p.op('h').op('\x02');
  p.op('e').op('\x85').op('q').op('\x00').op('0');
  for (int i = 0; i < 5000; ++i) p.op('h').op('\x01').op('h').op('\x00').op('R').op('0');
  p.op('}').stop();
  const std::string msg = format_error_of([&] { read_torch_state_dict(s.archive("bomb.pt", p.bytes), "checkpoint"); });
  EXPECT_NE(msg.find("far more work than its size justifies"), std::string::npos) << msg;
}

TEST(TorchCheckpoint, GlobalsAreNeverExecuted) {
  Scratch s;
  const std::string marker = s.path("pwned");
  // {"evil": os.system("touch <marker>"), "model": {"w": tensor}}
  Pickle p;
  p.op('}').op('(').str("evil").global("os", "system").str("touch " + marker).op('\x85').op('R');
  p.str("model").op('}').str("w").tensor1d("0", 4, 0, 4).op('s').op('u').stop();
  const StateDict sd = read_torch_state_dict(s.archive("evil.pt", p.bytes, {{"0", {1, 2, 3, 4}}}), "checkpoint");
  EXPECT_EQ(keys_of(sd), std::vector<std::string>{"w"});
  EXPECT_FALSE(fs::exists(marker));
  // In the selected state dict the opaque object is an error that names it.
  Pickle q;
  q.op('}').str("evil").global("os", "system").str("touch " + marker).op('\x85').op('R').op('s').stop();
  const std::string msg = format_error_of([&] { read_torch_state_dict(s.archive("evil2.pt", q.bytes), "checkpoint"); });
  EXPECT_NE(msg.find("entry 'evil' is an opaque object made by os.system, expected a tensor"), std::string::npos)
      << msg;
  EXPECT_FALSE(fs::exists(marker));
}

TEST(TorchCheckpoint, ZipWithoutTorchRecordsIsRejected) {
  Scratch s;
  const std::string file = s.path("other.pt");
  {
    caffe2::serialize::PyTorchStreamWriter writer(file);
    const std::string text = "hello";
    writer.writeRecord("readme.txt", text.data(), text.size());
    writer.writeEndOfFile();
  }
  const std::string msg = format_error_of([&] { read_torch_state_dict(file, "checkpoint"); });
  EXPECT_NE(msg.find("no data.pkl"), std::string::npos) << msg;
}

}  // namespace
