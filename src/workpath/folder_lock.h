// One build at a time per work folder and per output folder. An flock(2) on a lock file,
// held for the whole run: the kernel drops it when the process ends in any way, so a
// stale lock cannot exist. The holder writes its pid into the file so a second build can
// say whom it waits for. The lock files live in tailor's own folder,
// ${XDG_CACHE_HOME:-~/.cache}/tailor/locks/<sha256 of the place and the folder's path>.lock,
// never in or beside the user's folders: a build must leave the output folder as it was
// (not even created) when it fails, and nothing in the user's tree (`git status`) when it
// succeeds. The holder removes its file as it lets go, so the folder holds only the locks of
// running builds; a process that then gets the lock of a removed file sees that the path no
// longer names it and locks the file there instead, so two builds never hold two different
// files of one folder. (A process killed with -9 leaves its file: the next build of that
// folder takes it over and removes it.) The path is made canonical as far
// as it exists (symbolic links resolved), so two spellings of one folder share one lock;
// the locks are per user (another user's build has its own cache folder).
#pragma once
#include <cstdio>
#include <string>

#include "util/expected.h"

namespace tailor::workpath {

class FolderLock {
 public:
  enum class Place { inside, beside };
  /// Locks `dir` (creating it for Place::inside, the work folder; an output folder is not
  /// created). `place` keeps a work folder's lock apart from an output folder's of the
  /// same path. When another process holds
  /// the lock: with `wait`, prints `waiting for tailor build pid N using DIR` once to
  /// `note` (may be null) and waits, giving up when tailor is interrupted; without, an
  /// error naming the holder.
  static Expected<FolderLock> acquire(const std::string& dir, Place place, bool wait,
                                      std::FILE* note);
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

/// The lock file for `dir` at `place`, in tailor's lock folder.
std::string folder_lock_path(const std::string& dir, FolderLock::Place place);

}  // namespace tailor::workpath
