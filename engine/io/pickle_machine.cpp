#include "engine/io/pickle_machine.h"

#include <cstdio>
#include <cstring>

#include "engine/core/errors.h"
#include "engine/io/message_text.h"

namespace kvs::io::pickle {
namespace {

const char* opcode_name(uint8_t op) {
  switch (op) {
    case 0x80: return "PROTO";
    case 0x95: return "FRAME";
    case '.': return "STOP";
    case '(': return "MARK";
    case '0': return "POP";
    case '1': return "POP_MARK";
    case '2': return "DUP";
    case 'N': return "NONE";
    case 0x88: return "NEWTRUE";
    case 0x89: return "NEWFALSE";
    case 'J': return "BININT";
    case 'K': return "BININT1";
    case 'M': return "BININT2";
    case 0x8a: return "LONG1";
    case 0x8b: return "LONG4";
    case 'G': return "BINFLOAT";
    case 0x8c: return "SHORT_BINUNICODE";
    case 'X': return "BINUNICODE";
    case 0x8d: return "BINUNICODE8";
    case 'C': return "SHORT_BINBYTES";
    case 'B': return "BINBYTES";
    case 0x8e: return "BINBYTES8";
    case 'U': return "SHORT_BINSTRING";
    case 'T': return "BINSTRING";
    case ')': return "EMPTY_TUPLE";
    case 't': return "TUPLE";
    case 0x85: return "TUPLE1";
    case 0x86: return "TUPLE2";
    case 0x87: return "TUPLE3";
    case ']': return "EMPTY_LIST";
    case 'a': return "APPEND";
    case 'e': return "APPENDS";
    case 'l': return "LIST";
    case '}': return "EMPTY_DICT";
    case 'd': return "DICT";
    case 's': return "SETITEM";
    case 'u': return "SETITEMS";
    case 0x8f: return "EMPTY_SET";
    case 0x90: return "ADDITEMS";
    case 0x91: return "FROZENSET";
    case 'c': return "GLOBAL";
    case 0x93: return "STACK_GLOBAL";
    case 'R': return "REDUCE";
    case 'b': return "BUILD";
    case 0x81: return "NEWOBJ";
    case 0x92: return "NEWOBJ_EX";
    case 'q': return "BINPUT";
    case 'r': return "LONG_BINPUT";
    case 0x94: return "MEMOIZE";
    case 'h': return "BINGET";
    case 'j': return "LONG_BINGET";
    case 'Q': return "BINPERSID";
    default: return nullptr;
  }
}

}  // namespace

bool valid_utf8(const std::string& s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    if (len == 0 || i + len > s.size()) return false;
    for (std::size_t k = 1; k < len; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return false;
    i += len;
  }
  return true;
}

void Unpickler::fail(const std::string& msg) const {
  const char* name = opcode_name(op_);
  throw FormatError(origin_ + ": malformed data.pkl at offset " + std::to_string(op_at_) + " (opcode " +
                    (name ? name : "?") + "): " + msg);
}

std::string Unpickler::describe(const Value& v) const {
  switch (v.kind) {
    case Kind::None: return "None";
    case Kind::Bool: return "a bool";
    case Kind::Int: return "an int";
    case Kind::BigInt: return "an int too large for 64 bits";
    case Kind::Float: return "a float";
    case Kind::Str: return "a string";
    case Kind::Bytes: return "bytes";
    case Kind::Tuple: return "a tuple";
    case Kind::List: return "a list";
    case Kind::Set:
    case Kind::FrozenSet: return "a set";
    case Kind::Dict: return "a dict";
    case Kind::Global: return "the class or function " + one_line(globals[v.ref].full());
    case Kind::Object: return "an opaque object made by " + one_line(globals[objects[v.ref].global].full());
    case Kind::Storage: return "a tensor storage";
    case Kind::Tensor: return "a tensor";
  }
  return "an unknown value";
}

Value Unpickler::decode_long(const uint8_t* p, std::size_t n) {
  // Little-endian two's complement of any length; values beyond int64 are kept as
  // BigInt (legal in ignored entries such as a random seed, an error only if used).
  if (n == 0) return scalar(Kind::Int, 0);
  const bool negative = (p[n - 1] & 0x80) != 0;
  const std::size_t k = n < 8 ? n : 8;
  uint64_t u = 0;
  for (std::size_t i = 0; i < k; ++i) u |= static_cast<uint64_t>(p[i]) << (8 * i);
  if (k < 8 && negative) u |= ~uint64_t{0} << (8 * k);
  if (n > 8) {
    const uint8_t ext = negative ? 0xff : 0x00;
    for (std::size_t i = 8; i < n; ++i)
      if (p[i] != ext) return scalar(Kind::BigInt);
    if (((u >> 63) != 0) != negative) return scalar(Kind::BigInt);
  }
  return scalar(Kind::Int, static_cast<int64_t>(u));
}

void Unpickler::dict_set(std::size_t dict, const Value& key, const Value& value) {
  DictData& d = dicts[dict];
  switch (key.kind) {
    case Kind::Str: {
      charge(strings[key.ref].size());
      auto [it, inserted] = d.by_str.try_emplace(std::string_view(strings[key.ref]), d.items.size());
      if (!inserted) {
        d.items[it->second].second = value;
        return;
      }
      break;
    }
    case Kind::Int:
    case Kind::Bool: {  // True == 1 in Python, so they share a slot
      auto [it, inserted] = d.by_int.try_emplace(key.num, d.items.size());
      if (!inserted) {
        d.items[it->second].second = value;
        return;
      }
      break;
    }
    case Kind::List:
    case Kind::Dict:
    case Kind::Set: fail("dict key is " + describe(key) + ", which is not hashable");
    default: break;
  }
  d.items.emplace_back(key, value);
}

void Unpickler::set_items(Value& target, const std::vector<Value>& items) {
  if (items.size() % 2 != 0) fail("odd number of items for a dict");
  if (target.kind == Kind::Object) return;  // dict subclasses (defaultdict, ...): opaque
  if (target.kind != Kind::Dict) fail("cannot set items on " + describe(target));
  charge(items.size());
  const std::size_t dict = target.ref;
  for (std::size_t i = 0; i < items.size(); i += 2) dict_set(dict, items[i], items[i + 1]);
}

void Unpickler::append_items(Value& target, const std::vector<Value>& items) {
  if (target.kind == Kind::Object) return;  // list subclasses (deque, ...): opaque
  if (target.kind != Kind::List) fail("cannot append to " + describe(target));
  charge(items.size());
  auto& list = seqs[target.ref];
  list.insert(list.end(), items.begin(), items.end());
}

void Unpickler::memo_put(uint64_t index) {
  const Value v = top();
  auto it = memo_.find(index);
  if (it != memo_.end()) {
    it->second = v;
    return;
  }
  if (memo_.size() >= kMaxMemo) fail("more than " + std::to_string(kMaxMemo) + " memo entries");
  memo_.emplace(index, v);
}

Value Unpickler::memo_get(uint64_t index) {
  auto it = memo_.find(index);
  if (it == memo_.end()) fail("memo entry " + std::to_string(index) + " is not defined");
  return it->second;
}

Value Unpickler::global(std::string module, std::string name) {
  if (module.empty() || name.empty()) fail("empty module or name in a global reference");
  charge(module.size() + name.size());
  globals.push_back(GlobalData{std::move(module), std::move(name)});
  return ref(Kind::Global, globals.size() - 1);
}

int64_t Unpickler::int_arg(const Value& v, const char* what) const {
  if (v.kind != Kind::Int) fail(std::string(what) + " is " + describe(v) + ", expected an int");
  return v.num;
}

std::vector<int64_t> Unpickler::int_tuple(const Value& v, const char* what) const {
  if (v.kind != Kind::Tuple && v.kind != Kind::List)
    fail(std::string(what) + " is " + describe(v) + ", expected a tuple");
  const auto& items = seqs[v.ref];
  if (items.size() > kMaxDims) fail(std::string(what) + " has more than " + std::to_string(kMaxDims) + " dimensions");
  std::vector<int64_t> out;
  out.reserve(items.size());
  for (const Value& item : items) {
    const int64_t n = int_arg(item, what);
    if (n < 0) fail(std::string(what) + " has a negative entry " + std::to_string(n));
    out.push_back(n);
  }
  return out;
}

// torch._utils._rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad,
// backward_hooks[, metadata]): a view into a storage. requires_grad, the hooks and the
// metadata do not affect the values and are ignored.
Value Unpickler::rebuild_tensor(const std::vector<Value>& args) {
  if (args.size() != 6 && args.size() != 7)
    fail("_rebuild_tensor_v2 takes 6 or 7 arguments, got " + std::to_string(args.size()));
  if (args[0].kind != Kind::Storage) fail("_rebuild_tensor_v2 storage is " + describe(args[0]));
  TensorData t;
  t.storage = args[0].ref;
  t.offset = int_arg(args[1], "tensor storage offset");
  t.sizes = int_tuple(args[2], "tensor size");
  t.strides = int_tuple(args[3], "tensor stride");
  charge(t.sizes.size() + t.strides.size());
  if (t.offset < 0) fail("negative tensor storage offset");
  if (t.sizes.size() != t.strides.size())
    fail("tensor size has " + std::to_string(t.sizes.size()) + " dimensions but stride has " +
         std::to_string(t.strides.size()));
  // Every element the view can address must lie inside the storage; all arithmetic
  // is overflow-checked (an overflow can only mean an out-of-bounds view).
  const int64_t numel = storages[t.storage].numel;
  const std::string where = "tensor view (offset " + std::to_string(t.offset) + ") outside its storage data/" +
                            one_line(storages[t.storage].key) + " of " + std::to_string(numel) + " elements";
  int64_t count = 1;
  int64_t last = t.offset;
  bool empty = false;
  for (std::size_t d = 0; d < t.sizes.size(); ++d) {
    if (t.sizes[d] == 0) empty = true;
    if (__builtin_mul_overflow(count, t.sizes[d], &count)) fail("tensor has too many elements");
  }
  if (empty) {
    if (t.offset > numel) fail(where);
  } else {
    for (std::size_t d = 0; d < t.sizes.size(); ++d) {
      int64_t span = 0;
      if (__builtin_mul_overflow(t.sizes[d] - 1, t.strides[d], &span) || __builtin_add_overflow(last, span, &last))
        fail(where);
    }
    if (last >= numel) fail(where);
  }
  tensors.push_back(std::move(t));
  return ref(Kind::Tensor, tensors.size() - 1);
}

Value Unpickler::call(const Value& fn, const Value& args) {
  if (args.kind != Kind::Tuple) fail("call arguments are " + describe(args) + ", expected a tuple");
  if (fn.kind == Kind::Object) return new_object(objects[fn.ref].global, args);
  const GlobalData* g = global_of(fn);
  if (g == nullptr) fail("cannot call " + describe(fn));
  const bool ordered_dict = g->module == "collections" && g->name == "OrderedDict";
  const bool rebuild_tensor_v2 = g->module == "torch._utils" && g->name == "_rebuild_tensor_v2";
  const bool rebuild_parameter = g->module == "torch._utils" && g->name == "_rebuild_parameter";
  // Arguments of anything else are kept by reference, never copied.
  if (!ordered_dict && !rebuild_tensor_v2 && !rebuild_parameter) return new_object(fn.ref, args);
  if (seqs[args.ref].size() > 7)
    fail(g->full() + " called with " + std::to_string(seqs[args.ref].size()) + " arguments");
  const std::vector<Value> a = seqs[args.ref];  // a copy: rebuilding may grow the arenas
  if (ordered_dict) {
    // OrderedDict() or OrderedDict([(k, v), ...]).
    Value d = new_dict();
    if (a.size() > 1) fail("OrderedDict takes at most 1 argument, got " + std::to_string(a.size()));
    if (a.size() == 1) {
      if (a[0].kind != Kind::List && a[0].kind != Kind::Tuple) fail("OrderedDict argument is " + describe(a[0]));
      charge(seqs[a[0].ref].size());
      const std::vector<Value> pairs = seqs[a[0].ref];
      for (const Value& p : pairs) {
        if ((p.kind != Kind::Tuple && p.kind != Kind::List) || seqs[p.ref].size() != 2)
          fail("OrderedDict item is not a (key, value) pair");
        const Value key = seqs[p.ref][0], value = seqs[p.ref][1];
        dict_set(d.ref, key, value);
      }
    }
    return d;
  }
  if (rebuild_tensor_v2) return rebuild_tensor(a);
  if (a.size() == 3 && a[0].kind == Kind::Tensor)
    return a[0];  // _rebuild_parameter(data, requires_grad, hooks): the parameter's data
  return new_object(fn.ref, args);
}

Value Unpickler::instantiate(const Value& cls, const Value& args) {
  if (args.kind != Kind::Tuple) fail("NEWOBJ arguments are " + describe(args) + ", expected a tuple");
  if (cls.kind == Kind::Object) return new_object(objects[cls.ref].global, args);
  const GlobalData* g = global_of(cls);
  if (g == nullptr) fail("cannot instantiate " + describe(cls));
  if (g->module == "collections" && g->name == "OrderedDict") {
    if (!seqs[args.ref].empty()) fail("OrderedDict.__new__ with arguments");
    return new_dict();
  }
  return new_object(cls.ref, args);
}

void Unpickler::build(Value& target, const Value& state) {
  if (target.kind == Kind::Object) {
    objects[target.ref].state = state;
    return;
  }
  if (target.kind == Kind::Dict) {
    // An OrderedDict with instance attributes (state_dict()._metadata): the state
    // is its __dict__, or a (__dict__, slots) pair. Attributes are not needed.
    auto dict_or_none = [](const Value& v) { return v.kind == Kind::Dict || v.kind == Kind::None; };
    if (state.kind == Kind::Dict) return;
    if (state.kind == Kind::Tuple && seqs[state.ref].size() == 2 && dict_or_none(seqs[state.ref][0]) &&
        dict_or_none(seqs[state.ref][1]))
      return;
    fail("dict state is " + describe(state) + ", expected a dict of attributes");
  }
  fail("cannot set the state of " + describe(target));
}

// ('storage', storage_type, key, location, numel): the tensor data in record data/<key>.
// The location (e.g. "cuda:0") is ignored: everything is read to the CPU.
Value Unpickler::persistent_load(const Value& pid) {
  if (pid.kind != Kind::Tuple) fail("persistent id is " + describe(pid) + ", expected a tuple");
  const std::vector<Value>& p = seqs[pid.ref];
  if (p.empty() || p[0].kind != Kind::Str || strings[p[0].ref] != "storage")
    fail("persistent id is not a ('storage', ...) tuple");
  if (p.size() != 5) fail("storage persistent id has " + std::to_string(p.size()) + " fields, expected 5");
  const GlobalData* type = global_of(p[1]);
  if (type == nullptr) fail("storage type is " + describe(p[1]));
  if (p[2].kind != Kind::Str) fail("storage key is " + describe(p[2]));
  if (p[3].kind != Kind::Str) fail("storage location is " + describe(p[3]));
  const int64_t numel = int_arg(p[4], "storage size");
  if (numel < 0) fail("negative storage size");
  charge(type->module.size() + type->name.size() + strings[p[2].ref].size());
  storages.push_back(StorageData{*type, strings[p[2].ref], numel});
  return ref(Kind::Storage, storages.size() - 1);
}

Value Unpickler::load() {
  while (true) {
    if (pos_ >= size_) {
      op_at_ = pos_;
      op_ = 0;
      fail("the pickle ends without a STOP opcode (truncated?)");
    }
    op_at_ = pos_;
    op_ = data_[pos_++];
    switch (op_) {
      case 0x80: {  // PROTO
        const uint8_t proto = *take(1);
        if (proto < 2 || proto > 5)
          fail("pickle protocol " + std::to_string(proto) + " is not supported (expected 2..5)");
        break;
      }
      case 0x95: {  // FRAME: a read-ahead hint; only its length is checked
        const uint64_t n = take_le(8);
        if (n > size_ - pos_) fail("frame of " + std::to_string(n) + " bytes is longer than the rest of the pickle");
        break;
      }
      case '.': {  // STOP
        if (!marks_.empty() || stack_.size() != 1)
          fail("STOP with " + std::to_string(stack_.size()) + " values and " + std::to_string(marks_.size()) +
               " marks on the stack, expected one value");
        return stack_.back();
      }
      case '(':  // MARK
        if (marks_.size() >= kMaxMarks) fail("more than " + std::to_string(kMaxMarks) + " nested marks");
        marks_.push_back(stack_.size());
        break;
      case '0':  // POP (pops a mark when the frame is empty, as Python does)
        if (stack_.size() > floor()) stack_.pop_back();
        else if (!marks_.empty()) marks_.pop_back();
        else fail("stack underflow");
        break;
      case '1': pop_mark(); break;  // POP_MARK
      case '2': {                   // DUP
        const Value v = top();
        push(v);
        break;
      }
      case 'N': push(Value{}); break;
      case 0x88: push(scalar(Kind::Bool, 1)); break;
      case 0x89: push(scalar(Kind::Bool, 0)); break;
      case 'J': push(scalar(Kind::Int, static_cast<int32_t>(static_cast<uint32_t>(take_le(4))))); break;
      case 'K': push(scalar(Kind::Int, static_cast<int64_t>(take_le(1)))); break;
      case 'M': push(scalar(Kind::Int, static_cast<int64_t>(take_le(2)))); break;
      case 0x8a: {  // LONG1
        const std::size_t n = static_cast<std::size_t>(take_le(1));
        push(decode_long(take(n), n));
        break;
      }
      case 0x8b: {  // LONG4
        const int64_t n = static_cast<int32_t>(static_cast<uint32_t>(take_le(4)));
        if (n < 0) fail("negative LONG4 length");
        const uint8_t* p = take(static_cast<std::size_t>(n));
        push(decode_long(p, static_cast<std::size_t>(n)));
        break;
      }
      case 'G': {  // BINFLOAT: big-endian IEEE double
        const uint8_t* p = take(8);
        uint64_t bits = 0;
        for (int i = 0; i < 8; ++i) bits = (bits << 8) | p[i];
        Value v;
        v.kind = Kind::Float;
        std::memcpy(&v.real, &bits, sizeof bits);
        push(v);
        break;
      }
      case 0x8c: push(new_string(Kind::Str, take_string(take_le(1)))); break;   // SHORT_BINUNICODE
      case 'X': push(new_string(Kind::Str, take_string(take_le(4)))); break;    // BINUNICODE
      case 0x8d: push(new_string(Kind::Str, take_string(take_le(8)))); break;   // BINUNICODE8
      case 'C': push(new_string(Kind::Bytes, take_string(take_le(1)))); break;  // SHORT_BINBYTES
      case 'B': push(new_string(Kind::Bytes, take_string(take_le(4)))); break;  // BINBYTES
      case 0x8e:
        push(new_string(Kind::Bytes, take_string(take_le(8))));
        break;  // BINBYTES8
      // Python 2 str: torch.load decodes it as text.
      case 'U': push(new_string(Kind::Str, take_string(take_le(1)))); break;  // SHORT_BINSTRING
      case 'T': {                                                             // BINSTRING
        const int64_t n = static_cast<int32_t>(static_cast<uint32_t>(take_le(4)));
        if (n < 0) fail("negative BINSTRING length");
        push(new_string(Kind::Str, take_string(static_cast<uint64_t>(n))));
        break;
      }
      case ')': push(new_seq(Kind::Tuple, {})); break;
      case 't': push(new_seq(Kind::Tuple, pop_mark())); break;
      case 0x85:
      case 0x86:
      case 0x87: {  // TUPLE1..3
        const std::size_t n = op_ - 0x84u;
        if (stack_.size() < floor() + n) fail("stack underflow");
        charge(n);
        std::vector<Value> items(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
        stack_.resize(stack_.size() - n);
        push(new_seq(Kind::Tuple, std::move(items)));
        break;
      }
      case ']': push(new_seq(Kind::List, {})); break;
      case 'l': push(new_seq(Kind::List, pop_mark())); break;
      case 'a': {  // APPEND
        const Value v = pop();
        append_items(top(), {v});
        break;
      }
      case 'e': {  // APPENDS
        const std::vector<Value> items = pop_mark();
        append_items(top(), items);
        break;
      }
      case '}': push(new_dict()); break;
      case 'd': {  // DICT
        const std::vector<Value> items = pop_mark();
        Value d = new_dict();
        set_items(d, items);
        push(d);
        break;
      }
      case 's': {  // SETITEM
        const Value value = pop();
        const Value key = pop();
        set_items(top(), {key, value});
        break;
      }
      case 'u': {  // SETITEMS
        const std::vector<Value> items = pop_mark();
        set_items(top(), items);
        break;
      }
      case 0x8f: push(new_seq(Kind::Set, {})); break;  // EMPTY_SET
      case 0x90: {                                     // ADDITEMS
        const std::vector<Value> items = pop_mark();
        Value& target = top();
        if (target.kind != Kind::Set) fail("cannot add items to " + describe(target));
        charge(items.size());
        auto& set = seqs[target.ref];
        set.insert(set.end(), items.begin(), items.end());
        break;
      }
      case 0x91: push(new_seq(Kind::FrozenSet, pop_mark())); break;  // FROZENSET
      case 'c': {                                                    // GLOBAL "module\nname\n"
        std::string module = take_line();
        std::string name = take_line();
        push(global(std::move(module), std::move(name)));
        break;
      }
      case 0x93: {  // STACK_GLOBAL
        const Value name = pop();
        const Value module = pop();
        if (module.kind != Kind::Str || name.kind != Kind::Str) fail("STACK_GLOBAL needs two strings");
        push(global(strings[module.ref], strings[name.ref]));
        break;
      }
      case 'R': {  // REDUCE
        const Value args = pop();
        const Value fn = pop();
        push(call(fn, args));
        break;
      }
      case 0x81: {  // NEWOBJ
        const Value args = pop();
        const Value cls = pop();
        push(instantiate(cls, args));
        break;
      }
      case 0x92: {  // NEWOBJ_EX
        const Value kwargs = pop();
        const Value args = pop();
        const Value cls = pop();
        if (kwargs.kind != Kind::Dict) fail("NEWOBJ_EX keyword arguments are " + describe(kwargs));
        push(instantiate(cls, args));
        break;
      }
      case 'b': {  // BUILD
        const Value state = pop();
        build(top(), state);
        break;
      }
      case 'q': memo_put(take_le(1)); break;        // BINPUT
      case 'r': memo_put(take_le(4)); break;        // LONG_BINPUT
      case 0x94: memo_put(memo_.size()); break;     // MEMOIZE
      case 'h': push(memo_get(take_le(1))); break;  // BINGET
      case 'j': push(memo_get(take_le(4))); break;  // LONG_BINGET
      case 'Q': {                                   // BINPERSID
        const Value pid = pop();
        push(persistent_load(pid));
        break;
      }
      default: {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", op_);
        throw FormatError(origin_ + ": malformed or unsupported data.pkl: unknown pickle opcode " + hex +
                          " at offset " + std::to_string(op_at_));
      }
    }
  }
}

}  // namespace kvs::io::pickle
