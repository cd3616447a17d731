// Opening and reading paths a user names, without trusting them: a FIFO named `x.so`
// must not block, /dev/zero must not be read until memory runs out, and a file we may
// not read must say "permission denied", not "not an ELF". Every reader of a user path
// goes through here (MappedFile too).
#pragma once
#include <cstdint>
#include <string>

#include "util/expected.h"

namespace tailor {

/// An open, regular, readable file (the descriptor is closed by the destructor).
class RegularFile {
 public:
  /// Opens `path` for reading without blocking (O_NONBLOCK, so a FIFO or a device never
  /// waits for a writer), refuses anything that is not a regular file, then clears
  /// O_NONBLOCK. Errors: "PATH: permission denied", "PATH: not a regular file (a FIFO)".
  static Expected<RegularFile> open(const std::string& path);
  /// The same for an already open descriptor (standard input); it is not closed.
  static Expected<RegularFile> adopt(int fd, const std::string& name);
  RegularFile(RegularFile&& other) noexcept;
  RegularFile& operator=(RegularFile&& other) noexcept;
  RegularFile(const RegularFile&) = delete;
  RegularFile& operator=(const RegularFile&) = delete;
  ~RegularFile();

  int fd() const { return m_fd; }
  uint64_t size() const { return m_size; }
  const std::string& path() const { return m_path; }

 private:
  RegularFile() = default;
  std::string m_path;
  int m_fd = -1;
  uint64_t m_size = 0;
  bool m_owned = true;
};

enum class BinaryData { allowed, refused };

/// A whole text file of at most max_bytes: regular files only (checked before reading
/// a byte), "PATH: 600.0 MiB, larger than the 512.0 MiB tailor reads" otherwise.
/// `path` "-" reads standard input: a regular file or a pipe, still bounded by max_bytes.
/// With BinaryData::refused, a NUL byte in the first 64 KiB stops the read at once
/// ("PATH: binary data (a NUL byte at offset 0x0), not text"), so a large file of zeros
/// costs 64 KiB, not its size.
Expected<std::string> read_text_file(const std::string& path, uint64_t max_bytes,
                                     BinaryData binary = BinaryData::allowed);

/// Up to `count` bytes from the start of a regular file (fewer when it is shorter):
/// the magic-number check, with the errors of RegularFile::open.
Expected<std::string> read_file_head(const std::string& path, size_t count);

}  // namespace tailor
