#pragma once
// The pickle virtual machine of the torch.save reader, torch-free so that it
// can be fuzzed on its own. It runs data.pkl for protocols 2..5 and knows dicts
// (OrderedDict included), tensor storages named by persistent ids and tensor
// views (torch._utils._rebuild_tensor_v2); every other class or function the
// pickle names (argparse.Namespace, os.system, builtins.eval, ...) becomes an
// opaque placeholder that is never imported, resolved or called. Its stack,
// marks, memo and total work are bounded by limits and by the input's size, so
// malformed or hostile input throws kvs::FormatError rather than crashing,
// recursing or exhausting memory.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace kvs::io::pickle {

// Values of the pickle machine. Containers, strings and objects live in arenas owned
// by the Unpickler and are referred to by index, so that a hostile pickle can build
// arbitrarily deep or cyclic structures (TUPLE1 repeated a million times, a list
// appended to itself) without recursive destruction or reference-count cycles.

enum class Kind : uint8_t {
  None,
  Bool,
  Int,
  BigInt,
  Float,
  Str,
  Bytes,
  Tuple,
  List,
  Set,
  FrozenSet,
  Dict,
  Global,   // a class or function named by GLOBAL/STACK_GLOBAL, never resolved
  Object,   // the opaque result of calling/instantiating an unknown Global
  Storage,  // a tensor storage named by a persistent id (not loaded yet)
  Tensor,   // a validated view into a Storage (loaded only if selected)
};

struct Value {
  Kind kind = Kind::None;
  int64_t num = 0;      // Bool / Int
  double real = 0;      // Float
  std::size_t ref = 0;  // index into the arena of its kind
};

struct DictData {
  std::vector<std::pair<Value, Value>> items;  // insertion order, as Python dicts
  // Python replaces the value of an existing key in place; these indexes find
  // the keys that can be compared cheaply (strings and ints, the only ones that
  // appear as keys in checkpoints). String keys are views into the string arena,
  // whose strings never change or move once created.
  std::unordered_map<std::string_view, std::size_t> by_str;
  std::unordered_map<int64_t, std::size_t> by_int;
};

struct GlobalData {
  std::string module, name;
  std::string full() const { return module + "." + name; }
};

struct ObjectData {
  std::size_t global = 0;  // the Global that made it (also through calls of its
                           // results), e.g. argparse.Namespace; only for messages
  Value args;              // REDUCE/NEWOBJ arguments, kept for inspection
  Value state;             // BUILD state (None when absent)
};

// A storage named by a persistent id ('storage', type, key, location, numel);
// what the type means is the caller's business (torch_checkpoint_index.h).
struct StorageData {
  GlobalData type;  // torch.FloatStorage, torch.float16, ...
  std::string key;  // record data/<key>
  int64_t numel = 0;
};

struct TensorData {
  std::size_t storage = 0;  // index into the storage arena
  int64_t offset = 0;       // in elements
  std::vector<int64_t> sizes, strides;
};

// The pickle machine. It implements the opcodes torch.save emits (protocols 2..5)
// and nothing that could import or call code: GLOBAL only records a name.

class Unpickler {
 public:
  // Limits far above anything a checkpoint needs (pickle batches containers in
  // 1000s), low enough that malformed input fails fast instead of exhausting memory.
  static constexpr std::size_t kMaxStack = std::size_t{1} << 22;
  static constexpr std::size_t kMaxMarks = std::size_t{1} << 16;
  static constexpr std::size_t kMaxMemo = std::size_t{1} << 24;
  static constexpr std::size_t kMaxDims = 64;
  static constexpr std::size_t kWorkPerByte = 32;
  static constexpr std::size_t kWorkBase = std::size_t{1} << 20;

  Unpickler(const uint8_t* data, std::size_t size, std::string origin)
      : data_(data), size_(size), origin_(std::move(origin)) {}

  Value load();

  // Arenas, read by the caller after load().
  std::deque<std::string> strings;
  std::deque<std::vector<Value>> seqs;  // Tuple, List, Set, FrozenSet
  std::deque<DictData> dicts;
  std::deque<GlobalData> globals;
  std::deque<ObjectData> objects;
  std::deque<StorageData> storages;
  std::deque<TensorData> tensors;

  std::string describe(const Value& v) const;
  [[noreturn]] void fail(const std::string& msg) const;

 private:
  // --- reading the byte stream ---
  const uint8_t* take(std::size_t n) {
    if (n > size_ - pos_)
      fail("needs " + std::to_string(n) + " bytes but only " + std::to_string(size_ - pos_) +
           " remain (truncated pickle?)");
    const uint8_t* p = data_ + pos_;
    pos_ += n;
    return p;
  }
  uint64_t take_le(std::size_t n) {
    const uint8_t* p = take(n);
    uint64_t v = 0;
    for (std::size_t i = n; i-- > 0;) v = (v << 8) | p[i];
    return v;
  }
  std::string take_string(uint64_t n) {
    if (n > size_ - pos_)
      fail("string of " + std::to_string(n) + " bytes but only " + std::to_string(size_ - pos_) +
           " remain (truncated pickle?)");
    const uint8_t* p = take(static_cast<std::size_t>(n));
    return std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(n));
  }
  std::string take_line() {
    const void* nl = std::memchr(data_ + pos_, '\n', size_ - pos_);
    if (nl == nullptr) fail("name is not terminated by a newline");
    const std::size_t n = static_cast<const uint8_t*>(nl) - (data_ + pos_);
    std::string s(reinterpret_cast<const char*>(data_ + pos_), n);
    pos_ += n + 1;
    return s;
  }

  // --- the stack; MARK starts a new frame that pops may not cross (as in Python) ---
  std::size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  void push(const Value& v) {
    if (stack_.size() >= kMaxStack) fail("stack deeper than " + std::to_string(kMaxStack) + " entries");
    stack_.push_back(v);
  }
  Value pop() {
    if (stack_.size() <= floor()) fail("stack underflow");
    Value v = stack_.back();
    stack_.pop_back();
    return v;
  }
  Value& top() {
    if (stack_.size() <= floor()) fail("stack underflow");
    return stack_.back();
  }
  std::vector<Value> pop_mark() {
    if (marks_.empty()) fail("no MARK on the stack");
    const std::size_t m = marks_.back();
    marks_.pop_back();
    charge(stack_.size() - m);
    std::vector<Value> items(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return items;
  }

  // --- constructors of values ---
  static Value scalar(Kind kind, int64_t num = 0) {
    Value v;
    v.kind = kind;
    v.num = num;
    return v;
  }
  static Value ref(Kind kind, std::size_t index) {
    Value v;
    v.kind = kind;
    v.ref = index;
    return v;
  }
  Value new_string(Kind kind, std::string s) {
    strings.push_back(std::move(s));
    return ref(kind, strings.size() - 1);
  }
  Value new_seq(Kind kind, std::vector<Value> items) {
    seqs.push_back(std::move(items));
    return ref(kind, seqs.size() - 1);
  }
  Value new_dict() {
    dicts.emplace_back();
    return ref(Kind::Dict, dicts.size() - 1);
  }
  Value new_object(std::size_t global, const Value& args) {
    charge(1);
    objects.push_back(ObjectData{global, args, Value{}});
    return ref(Kind::Object, objects.size() - 1);
  }
  // Work done for the input so far: elements moved into containers, key bytes
  // hashed, names copied. A valid pickle does O(1) such work per input byte;
  // memo references (BINGET) let a malformed one ask for far more (a big memoized
  // tuple passed to a million calls), which must fail rather than exhaust memory.
  void charge(std::size_t units) {
    work_ += units;
    if (work_ > kWorkPerByte * size_ + kWorkBase)
      fail("the pickle asks for far more work than its size justifies (a pickle bomb?)");
  }
  Value decode_long(const uint8_t* p, std::size_t n);

  void dict_set(std::size_t dict, const Value& key, const Value& value);
  void set_items(Value& target, const std::vector<Value>& items);
  void append_items(Value& target, const std::vector<Value>& items);
  void memo_put(uint64_t index);
  Value memo_get(uint64_t index);
  Value global(std::string module, std::string name);
  Value call(const Value& fn, const Value& args);
  Value instantiate(const Value& cls, const Value& args);
  void build(Value& target, const Value& state);
  Value persistent_load(const Value& pid);
  Value rebuild_tensor(const std::vector<Value>& args);
  const GlobalData* global_of(const Value& v) const { return v.kind == Kind::Global ? &globals[v.ref] : nullptr; }
  int64_t int_arg(const Value& v, const char* what) const;
  std::vector<int64_t> int_tuple(const Value& v, const char* what) const;

  const uint8_t* data_;
  std::size_t size_;
  std::string origin_;
  std::size_t pos_ = 0;
  std::size_t op_at_ = 0;  // offset of the opcode being executed, for messages
  uint8_t op_ = 0;
  std::vector<Value> stack_;
  std::vector<std::size_t> marks_;
  std::unordered_map<uint64_t, Value> memo_;
  std::size_t work_ = 0;
};

// Whether `s` is well-formed UTF-8 (state dict keys must be).
bool valid_utf8(const std::string& s);

}  // namespace kvs::io::pickle
