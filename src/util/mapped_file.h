// A read-only memory map of a file: parsers see a span and the kernel pages in only
// what they touch (headers), which is what keeps `inspect` at megabytes, not gigabytes.
#pragma once
#include <string>

#include "util/byte_reader.h"
#include "util/expected.h"

namespace tailor {

class MappedFile {
 public:
  static Expected<MappedFile> open(const std::string& path);
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  Bytes bytes() const { return {static_cast<const std::byte*>(m_data), m_size}; }
  const std::string& path() const { return m_path; }

 private:
  MappedFile() = default;
  std::string m_path;
  void* m_data = nullptr;
  size_t m_size = 0;
};

}  // namespace tailor
