// Whole-file reads and atomic writes, for the small text files tailor handles (logs,
// configs, source files it patches). Big or untrusted binaries go through MappedFile.
#pragma once
#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

#include "util/expected.h"

namespace tailor {

/// An errno value as tailor's messages say it: "permission denied" (EACCES, EPERM), "no
/// such file or directory" (ENOENT), else strerror's words.
std::string errno_text(int error_number);

/// The whole file; nullopt when it cannot be opened or read.
std::optional<std::string> read_file(const std::string& path);

/// Writes `text` to `path`.tailor-tmp and renames it over `path`, so a reader (or an
/// interrupted run) never sees half a file. The file is created with `mode` less the
/// umask (0600: a secret, never readable by others, not even for a moment). Errors name
/// the path.
Expected<void> write_file_atomic(const std::string& path, std::string_view text,
                                 mode_t mode = 0666);

/// A file written in pieces (an archive, a slimmed library) beside its destination and
/// renamed over it once complete: `.<name>.tailor-tmp-XXXXXX` in the destination's folder
/// (the same filesystem, so the rename is atomic), removed unless committed.
class AtomicFile {
 public:
  static Expected<AtomicFile> beside(const std::string& dest);
  AtomicFile() = default;
  AtomicFile(AtomicFile&& o) noexcept;
  AtomicFile& operator=(AtomicFile&& o) noexcept;
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  /// The open temporary file; -1 once committed or discarded.
  int fd() const { return m_fd; }
  /// The temporary file's path (empty once committed).
  const std::string& path() const { return m_path; }
  const std::string& dest() const { return m_dest; }
  /// The permission bits `mode`, fsync, close, then the rename over the destination. The
  /// temporary file is removed when any step fails.
  Expected<void> commit(mode_t mode);

 private:
  void discard();
  std::string m_dest, m_path;
  int m_fd = -1;
};

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

/// An exclusive flock(2) on the folder DIR itself (opened read-only as a directory), held for
/// a read-modify-write of state kept in it, such as a wheelhouse's: unlike ExclusiveFileLock
/// it adds no file to the folder. It waits for the holder; ok() is false when the folder
/// cannot be opened or locked.
class ExclusiveFolderLock {
 public:
  explicit ExclusiveFolderLock(const std::string& dir);
  ~ExclusiveFolderLock();
  ExclusiveFolderLock(const ExclusiveFolderLock&) = delete;
  ExclusiveFolderLock& operator=(const ExclusiveFolderLock&) = delete;
  bool ok() const { return m_fd >= 0; }

 private:
  int m_fd = -1;
};

/// tailor's cache folder for `what`: ${XDG_CACHE_HOME:-$HOME/.cache}/tailor/<what>, or
/// /tmp/tailor-<what> when neither is set.
std::string user_cache_dir(std::string_view what);

}  // namespace tailor
