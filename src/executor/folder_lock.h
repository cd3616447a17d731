// One build at a time per work folder and per output folder. An flock(2) on a lock file,
// held for the whole run: the kernel drops it when the process ends in any way, so a
// stale lock cannot exist. The holder writes its pid into the file so a second build can
// say whom it waits for. The work folder's lock file lies inside it (`.tailor.lock`);
// the output folder's lies beside it (`.<name>.tailor.lock`), because a build that fails
// must leave the output folder as it was, not even created.
#pragma once
#include <cstdio>
#include <string>

#include "util/expected.h"

namespace tailor::executor {

class FolderLock {
public:
  enum class Place { inside, beside };
  /// Locks `dir` (creating it when the lock file lies inside). When another process holds
  /// the lock: with `wait`, prints `waiting for tailor build pid N using DIR` once to
  /// `note` (may be null) and waits, giving up when tailor is interrupted; without, an
  /// error naming the holder.
  static Expected<FolderLock> acquire(const std::string& dir, Place place, bool wait, std::FILE* note);
  FolderLock(FolderLock&& other) noexcept;
  FolderLock& operator=(FolderLock&&) = delete;
  FolderLock(const FolderLock&) = delete;
  ~FolderLock();  ///< releases the lock (the file stays: removing it would race)

  const std::string& lock_path() const { return m_path; }

private:
  FolderLock(int fd, std::string path) : m_fd(fd), m_path(std::move(path)) {}
  int m_fd = -1;
  std::string m_path;
};

/// The lock file for `dir` at `place`.
std::string folder_lock_path(const std::string& dir, FolderLock::Place place);

}  // namespace tailor::executor
