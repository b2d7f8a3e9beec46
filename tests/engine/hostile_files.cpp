#include "hostile_files.h"

#include <cstring>

#include "engine/io/zip_archive.h"

namespace kvs::test {
namespace {

void put(std::string& out, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

}  // namespace

std::string ZipBytes::bytes(int64_t size_delta) const {
  std::string out, directory;
  for (const Entry& e : entries) {
    const uint64_t offset = out.size();
    const auto crc = io::zip_crc32(reinterpret_cast<const uint8_t*>(e.data.data()), e.data.size());
    const uint64_t size = static_cast<uint64_t>(static_cast<int64_t>(e.data.size()) + size_delta);
    put(out, 0x04034b50, 4);
    put(out, 20, 2);
    put(out, 0, 2);
    put(out, e.method, 2);
    put(out, 0, 4);  // time, date
    put(out, crc, 4);
    put(out, size, 4);
    put(out, size, 4);
    put(out, e.name.size(), 2);
    put(out, 0, 2);
    out += e.name;
    out += e.data;
    put(directory, 0x02014b50, 4);
    put(directory, 20, 2);
    put(directory, 20, 2);
    put(directory, 0, 2);
    put(directory, e.method, 2);
    put(directory, 0, 4);
    put(directory, crc, 4);
    put(directory, size, 4);
    put(directory, size, 4);
    put(directory, e.name.size(), 2);
    put(directory, 0, 2);  // extra
    put(directory, 0, 2);  // comment
    put(directory, 0, 2);  // disk
    put(directory, 0, 2);  // internal attributes
    put(directory, 0, 4);  // external attributes
    put(directory, offset, 4);
    directory += e.name;
  }
  const uint64_t directory_offset = out.size();
  out += directory;
  put(out, 0x06054b50, 4);
  put(out, 0, 2);
  put(out, 0, 2);
  put(out, entries.size(), 2);
  put(out, entries.size(), 2);
  put(out, directory.size(), 4);
  put(out, directory_offset, 4);
  put(out, 0, 2);
  return out;
}

std::string checkpoint_archive(const std::string& pickle,
                               const std::vector<std::pair<std::string, std::vector<float>>>& storages) {
  ZipBytes zip;
  zip.add("data.pkl", pickle).add("byteorder", "little");
  for (const auto& [key, values] : storages) {
    std::string data(values.size() * sizeof(float), '\0');
    if (!values.empty()) std::memcpy(data.data(), values.data(), data.size());
    zip.add("data/" + key, data);
  }
  return zip.bytes();
}

}  // namespace kvs::test
