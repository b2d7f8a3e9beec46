#pragma once
// Builders for hand-made hostile files (test_hostile_files.cpp): pickle bytes
// written opcode by opcode, and zip archives laid out as torch.save lays them
// out (stored entries under one folder, a central directory, no Zip64), whose
// every field a test may then falsify.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kvs::test {

// Pickle bytes, protocol 2, built opcode by opcode.
struct PickleBytes {
  std::string bytes = std::string("\x80\x02", 2);
  PickleBytes& op(char c) {
    bytes.push_back(c);
    return *this;
  }
  PickleBytes& raw(const std::string& s) {
    bytes += s;
    return *this;
  }
  PickleBytes& str(const std::string& s) {  // BINUNICODE
    op('X');
    for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<char>((s.size() >> (8 * i)) & 0xff));
    bytes += s;
    return *this;
  }
  PickleBytes& int1(uint8_t v) { return op('K').op(static_cast<char>(v)); }
  PickleBytes& long8(int64_t v) {  // LONG1 with 8 bytes
    op('\x8a').op('\x08');
    for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff));
    return *this;
  }
  PickleBytes& global(const std::string& module, const std::string& name) {  // GLOBAL
    return op('c').raw(module + "\n" + name + "\n");
  }
  PickleBytes& stack_global(const std::string& module, const std::string& name) {  // STACK_GLOBAL
    return str(module).str(name).op('\x93');
  }
  // ('storage', torch.<type>, key, 'cpu', numel) as a persistent id.
  PickleBytes& storage(const std::string& key, int64_t numel, const std::string& type = "FloatStorage") {
    op('(').str("storage").global("torch", type).str(key).str("cpu").long8(numel).op('t').op('Q');
    return *this;
  }
  // _rebuild_tensor_v2(storage, offset, sizes, strides, False, ())
  PickleBytes& tensor(const std::string& key, int64_t numel, int64_t offset, const std::vector<int64_t>& sizes,
                      const std::vector<int64_t>& strides) {
    global("torch._utils", "_rebuild_tensor_v2").op('(');
    storage(key, numel).long8(offset);
    op('(');
    for (int64_t s : sizes) long8(s);
    op('t').op('(');
    for (int64_t s : strides) long8(s);
    op('t').op('\x89').op(')').op('t').op('R');
    return *this;
  }
  PickleBytes& stop() { return op('.'); }
};

// A zip archive of stored entries, each under "archive/" as torch.save names them.
struct ZipBytes {
  struct Entry {
    std::string name, data;
    uint16_t method = 0;  // 0 stored, 8 deflated (the data is then taken as is)
  };
  std::vector<Entry> entries;

  ZipBytes& add(const std::string& name, const std::string& data) {
    entries.push_back({"archive/" + name, data, 0});
    return *this;
  }
  // The archive's bytes; `size_delta` is added to every entry's recorded size.
  std::string bytes(int64_t size_delta = 0) const;
};

// A torch.save-like archive: data.pkl, byteorder, then data/<key> for each storage.
std::string checkpoint_archive(const std::string& pickle,
                               const std::vector<std::pair<std::string, std::vector<float>>>& storages = {});

}  // namespace kvs::test
