#pragma once
// The zip container of torch.save files, read from bytes in memory (a mapped
// file) without LibTorch, so that it can be fuzzed on its own.
//
// Only what torch.save writes is accepted: stored (uncompressed) entries, found
// through the central directory (the local headers of torch.save's writer carry
// no sizes, they follow the data in a descriptor), Zip64 sizes and offsets,
// every entry under one top-level folder ("archive/data.pkl", the folder named
// after the file). Anything else (compression, encryption, split archives, two
// entries of one name, an entry reaching past the end of the file) is a
// FormatError naming the origin and the problem. Nothing is read outside the
// given bytes, and the work is bounded by their size.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kvs::io {

struct ZipEntry {
  std::string name;          // without the top-level folder: "data.pkl", "data/0"
  uint64_t data_offset = 0;  // of the entry's bytes in the archive
  uint64_t size = 0;
  uint32_t crc32 = 0;
};

class ZipArchive {
 public:
  // Parses the directory of `size` bytes at `data`; `origin` starts every
  // message ("checkpoint /path/x.pt"). The bytes must outlive the archive.
  ZipArchive(const uint8_t* data, std::size_t size, std::string origin);

  const std::vector<ZipEntry>& entries() const { return entries_; }
  const ZipEntry* find(std::string_view name) const;

  // The bytes of `entry`; with `check_crc`, a FormatError when they do not
  // match the CRC-32 the directory records (a damaged file).
  std::string_view bytes(const ZipEntry& entry, bool check_crc = true) const;

  const std::string& origin() const { return origin_; }

 private:
  [[noreturn]] void fail(const std::string& what) const;
  void read_directory();

  const uint8_t* data_;
  std::size_t size_;
  std::string origin_;
  std::vector<ZipEntry> entries_;  // sorted by name
};

// The CRC-32 of zip (and PNG, gzip): polynomial 0xEDB88320, reflected.
uint32_t zip_crc32(const uint8_t* data, std::size_t size);

}  // namespace kvs::io
