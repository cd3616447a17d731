// Whole-file reads and atomic writes, for the small text files tailor handles (logs,
// configs, source files it patches). Big or untrusted binaries go through MappedFile.
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "util/expected.h"

namespace tailor {

/// The whole file; nullopt when it cannot be opened or read.
std::optional<std::string> read_file(const std::string& path);

/// Writes `text` beside `path` and renames it over `path`, so a reader (or an interrupted
/// run) never sees half a file. Errors name the path.
Expected<void> write_file_atomic(const std::string& path, std::string_view text);

/// An exclusive flock(2) on PATH.lock (its folder made when missing), held for a
/// read-modify-write of a small state file that several tailor runs share; it waits for
/// the holder. ok() is false when the lock file cannot be made or locked.
class ExclusiveFileLock {
public:
  explicit ExclusiveFileLock(const std::string& path);
  ~ExclusiveFileLock();
  ExclusiveFileLock(const ExclusiveFileLock&) = delete;
  ExclusiveFileLock& operator=(const ExclusiveFileLock&) = delete;
  bool ok() const { return m_fd >= 0; }

private:
  int m_fd = -1;
};

/// tailor's cache folder for `what`: ${XDG_CACHE_HOME:-$HOME/.cache}/tailor/<what>, or
/// /tmp/tailor-<what> when neither is set.
std::string user_cache_dir(std::string_view what);

}  // namespace tailor
