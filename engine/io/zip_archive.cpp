#include "engine/io/zip_archive.h"

#include <zlib.h>

#include <algorithm>
#include <limits>

#include "engine/core/errors.h"
#include "engine/io/message_text.h"

namespace kvs::io {
namespace {

constexpr uint32_t kLocalHeader = 0x04034b50;
constexpr uint32_t kCentralHeader = 0x02014b50;
constexpr uint32_t kEndOfDirectory = 0x06054b50;
constexpr uint32_t kZip64EndOfDirectory = 0x06064b50;
constexpr uint32_t kZip64Locator = 0x07064b50;
constexpr std::size_t kEndOfDirectoryBytes = 22;
constexpr std::size_t kCentralHeaderBytes = 46;
constexpr std::size_t kLocalHeaderBytes = 30;
constexpr std::size_t kZip64LocatorBytes = 20;
constexpr std::size_t kZip64EndOfDirectoryBytes = 56;

uint64_t le(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = n; i-- > 0;) v = (v << 8) | p[i];
  return v;
}

}  // namespace

uint32_t zip_crc32(const uint8_t* data, std::size_t size) {
  uLong crc = ::crc32(0L, Z_NULL, 0);
  // zlib takes 32-bit lengths; records of several GB are checked in pieces.
  constexpr std::size_t kChunk = std::size_t{1} << 30;
  while (size > 0) {
    const std::size_t n = std::min(size, kChunk);
    crc = ::crc32(crc, data, static_cast<uInt>(n));
    data += n;
    size -= n;
  }
  return static_cast<uint32_t>(crc);
}

ZipArchive::ZipArchive(const uint8_t* data, std::size_t size, std::string origin)
    : data_(data), size_(size), origin_(std::move(origin)) {
  read_directory();
}

void ZipArchive::fail(const std::string& what) const {
  throw FormatError(origin_ + ": damaged or truncated zip archive: " + what);
}

const ZipEntry* ZipArchive::find(std::string_view name) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), name,
                             [](const ZipEntry& e, std::string_view n) { return e.name < n; });
  return it != entries_.end() && it->name == name ? &*it : nullptr;
}

std::string_view ZipArchive::bytes(const ZipEntry& entry, bool check_crc) const {
  const auto* p = data_ + entry.data_offset;
  const std::size_t n = static_cast<std::size_t>(entry.size);
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
  // Fuzzing builds skip the check so that mutations reach the parsers behind it.
  if (check_crc && zip_crc32(p, n) != entry.crc32)
    throw FormatError(origin_ + ": damaged zip archive: record " + one_line(entry.name) +
                      " does not match its CRC-32 (the file was changed or corrupted after it was written)");
#else
  (void)check_crc;
#endif
  return std::string_view(reinterpret_cast<const char*>(p), n);
}

void ZipArchive::read_directory() {
  if (size_ < kEndOfDirectoryBytes) fail("the file is too short to be a zip archive");
  // The end-of-directory record is the last 22 bytes plus a comment of at most
  // 64 KiB: search backwards over that window only.
  std::size_t eocd = std::string::npos;
  const std::size_t lowest = size_ - kEndOfDirectoryBytes > 0xffff ? size_ - kEndOfDirectoryBytes - 0xffff : 0;
  for (std::size_t at = size_ - kEndOfDirectoryBytes + 1; at-- > lowest;) {
    if (le(data_ + at, 4) == kEndOfDirectory && at + kEndOfDirectoryBytes + le(data_ + at + 20, 2) <= size_) {
      eocd = at;
      break;
    }
  }
  if (eocd == std::string::npos) fail("no end-of-central-directory record (the end of the file is missing)");
  const uint8_t* e = data_ + eocd;
  uint64_t disk = le(e + 4, 2), dir_disk = le(e + 6, 2);
  uint64_t count = le(e + 10, 2), dir_size = le(e + 12, 4), dir_offset = le(e + 16, 4);
  std::size_t dir_end_limit = eocd;

  // torch.save always writes the Zip64 records; their values take precedence.
  if (eocd >= kZip64LocatorBytes && le(data_ + eocd - kZip64LocatorBytes, 4) == kZip64Locator) {
    const uint8_t* loc = data_ + eocd - kZip64LocatorBytes;
    const uint64_t at = le(loc + 8, 8);
    if (le(loc + 4, 4) != 0 || le(loc + 16, 4) > 1) fail("split over several disks, which is not supported");
    if (at > eocd - kZip64LocatorBytes || eocd - kZip64LocatorBytes - at < kZip64EndOfDirectoryBytes)
      fail("the Zip64 end-of-directory offset " + std::to_string(at) + " is outside the file");
    const uint8_t* z = data_ + at;
    if (le(z, 4) != kZip64EndOfDirectory) fail("no Zip64 end-of-directory record where its locator points");
    disk = le(z + 16, 4);
    dir_disk = le(z + 20, 4);
    count = le(z + 32, 8);
    dir_size = le(z + 40, 8);
    dir_offset = le(z + 48, 8);
    dir_end_limit = static_cast<std::size_t>(at);
  }
  if (disk != 0 || dir_disk != 0) fail("split over several disks, which is not supported");
  if (dir_offset > dir_end_limit || dir_size > dir_end_limit - dir_offset)
    fail("the central directory (offset " + std::to_string(dir_offset) + ", " + std::to_string(dir_size) +
         " bytes) lies outside the file");
  if (count > dir_size / kCentralHeaderBytes)
    fail(std::to_string(count) + " entries cannot fit in a central directory of " + std::to_string(dir_size) +
         " bytes");

  std::string prefix;  // the top-level folder, from the first entry
  entries_.reserve(static_cast<std::size_t>(count));
  std::size_t pos = static_cast<std::size_t>(dir_offset);
  const std::size_t dir_end = static_cast<std::size_t>(dir_offset + dir_size);
  for (uint64_t i = 0; i < count; ++i) {
    if (dir_end - pos < kCentralHeaderBytes || le(data_ + pos, 4) != kCentralHeader)
      fail("central directory entry " + std::to_string(i) + " is malformed");
    const uint8_t* c = data_ + pos;
    const uint64_t flags = le(c + 8, 2), method = le(c + 10, 2);
    const uint32_t crc = static_cast<uint32_t>(le(c + 16, 4));
    uint64_t packed = le(c + 20, 4), size = le(c + 24, 4);
    const std::size_t name_len = le(c + 28, 2), extra_len = le(c + 30, 2), comment_len = le(c + 32, 2);
    uint64_t start_disk = le(c + 34, 2), local = le(c + 42, 4);
    if (dir_end - pos - kCentralHeaderBytes < name_len + extra_len + comment_len)
      fail("central directory entry " + std::to_string(i) + " runs past the directory");
    std::string name(reinterpret_cast<const char*>(c + kCentralHeaderBytes), name_len);
    const uint8_t* extra = c + kCentralHeaderBytes + name_len;
    // Zip64 extended information: the 64-bit values of the fields set to all ones.
    for (std::size_t x = 0; x + 4 <= extra_len;) {
      const uint64_t id = le(extra + x, 2), len = le(extra + x + 2, 2);
      if (x + 4 + len > extra_len) fail("entry " + one_line(name) + " has a malformed extra field");
      if (id == 0x0001) {
        const uint8_t* f = extra + x + 4;
        std::size_t left = len;
        auto take = [&](uint64_t* field, int n) {
          if (left < static_cast<std::size_t>(n)) fail("entry " + one_line(name) + " has a short Zip64 field");
          *field = le(f, n);
          f += n;
          left -= static_cast<std::size_t>(n);
        };
        if (size == 0xffffffffu) take(&size, 8);
        if (packed == 0xffffffffu) take(&packed, 8);
        if (local == 0xffffffffu) take(&local, 8);
        if (start_disk == 0xffff) take(&start_disk, 4);
      }
      x += 4 + len;
    }
    pos += kCentralHeaderBytes + name_len + extra_len + comment_len;

    if ((flags & 0x1) != 0) fail("entry " + one_line(name) + " is encrypted, which torch.save never does");
    if (method != 0)
      throw FormatError(origin_ + ": zip entry " + one_line(name) + " is compressed (method " + std::to_string(method) +
                        "); torch.save writes stored entries only (was the archive repacked?)");
    if (packed != size)
      fail("stored entry " + one_line(name) + " has " + std::to_string(packed) + " bytes packed but " +
           std::to_string(size) + " unpacked");
    if (start_disk != 0) fail("split over several disks, which is not supported");

    // The local header repeats the name; the data follows it and its extra field.
    if (local > dir_offset || dir_offset - local < kLocalHeaderBytes || le(data_ + local, 4) != kLocalHeader)
      fail("entry " + one_line(name) + " has no local header at offset " + std::to_string(local));
    const uint8_t* h = data_ + local;
    const uint64_t local_name = le(h + 26, 2), local_extra = le(h + 28, 2);
    const uint64_t data_at = local + kLocalHeaderBytes + local_name + local_extra;
    if (data_at > dir_offset || size > dir_offset - data_at)
      fail("entry " + one_line(name) + " (" + std::to_string(size) + " bytes at offset " + std::to_string(data_at) +
           ") runs past the start of the central directory");
    if (local_name != name_len ||
        std::string_view(reinterpret_cast<const char*>(h + kLocalHeaderBytes), name_len) != name)
      fail("entry " + one_line(name) + " has another name in its local header");

    const std::size_t slash = name.find('/');
    if (slash == std::string::npos || slash == 0 || slash + 1 == name.size())
      fail("entry '" + one_line(name) + "' is not a file inside the archive's top-level folder");
    if (i == 0) prefix = name.substr(0, slash + 1);
    if (name.compare(0, prefix.size(), prefix) != 0)
      fail("entry " + one_line(name) + " is outside the top-level folder " + one_line(prefix));
    entries_.push_back(ZipEntry{name.substr(prefix.size()), data_at, size, crc});
  }
  std::sort(entries_.begin(), entries_.end(), [](const ZipEntry& a, const ZipEntry& b) { return a.name < b.name; });
  for (std::size_t i = 1; i < entries_.size(); ++i)
    if (entries_[i].name == entries_[i - 1].name) fail("two entries are named " + one_line(prefix + entries_[i].name));
}

}  // namespace kvs::io
