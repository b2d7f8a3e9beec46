#pragma once
// A read-only view of a whole file, memory-mapped copy-on-write (MAP_PRIVATE), so
// tensors can point into it without copying and an accidental in-place write
// cannot corrupt the file.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace kvs::io {

class MappedFile {
 public:
  // Throws FileError if the file is missing or unreadable.
  static std::shared_ptr<MappedFile> open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  uint8_t* mutable_data() { return data_; }
  std::size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile() = default;
  uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
  std::string path_;
};

// Reads a whole (small) file into memory; throws FileError.
std::string read_text_file(const std::string& path);
// Writes atomically (temporary file + rename) so a failure never leaves half a file.
void write_file_atomic(const std::string& path, const std::string& bytes);

}  // namespace kvs::io
