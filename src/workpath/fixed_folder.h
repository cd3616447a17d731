// The fixed path where no namespace can be made (fixed_path.h's folder route): a real
// folder at `/tmp/.tailor-build/<package>`, the same path the namespaces show, so the bytes
// and cache keys are the same whichever route a machine takes. For the run the work
// folder's contents move into it (a rename on one file system, else a copy that keeps
// times and modes, so Ninja's view of the tree is unchanged) and back afterwards, failed
// or interrupted runs included; the work folder's lock and logs stay where they are, and
// a fifo or socket (the jobserver's, held open by tailor) stays too, linked from the fixed
// folder. The fixed folder is held under a folder lock (folder_lock.h), so a second build
// of the same package, from any work folder, waits and says so. A tailor killed with -9
// leaves the contents in the fixed folder, with a marker naming the work folder they came
// from: the package's next build first moves them back there (where that folder has no
// entry of the same name), so neither a --source tree nor a build tree is lost.
#pragma once
#include <cstdio>
#include <string>
#include <vector>

#include "util/expected.h"
#include "workpath/folder_lock.h"

namespace tailor::workpath {

/// Whether `fixed` can be this user's real build folder. Its parent (the fixed root) is
/// made, sticky and writable by all like /tmp, when missing; it must be a folder owned by
/// root or this user (another user could move a folder in it under this build's feet),
/// and `fixed` missing or a folder of this user's, neither a link. Makes what is missing.
Expected<void> check_fixed_folder(const std::string& fixed);

/// The fixed root alone, as check_fixed_folder checks it (made when missing).
Expected<void> check_fixed_root(const std::string& root);

class FixedFolder {
 public:
  /// Checks `fixed` (check_fixed_folder) and locks it; with `wait`, a second build of the
  /// package prints `waiting for tailor build pid N using FIXED` to `note` and waits.
  static Expected<FixedFolder> acquire(const std::string& real, const std::string& fixed, bool wait,
                                       std::FILE* note);

  /// The work folder's contents into the fixed folder (whatever an earlier run left there
  /// removed first).
  Expected<void> move_in();
  /// And back, replacing what the work folder has of the same names.
  Expected<void> move_out();

  const std::string& fixed() const { return m_fixed; }

  /// The marker in the fixed folder: the work folder its contents came from.
  static constexpr const char* k_moved_from_marker = ".tailor-moved-from";

 private:
  Expected<void> return_left_contents();
  FixedFolder(FolderLock lock, std::string real, std::string fixed)
      : m_lock(std::move(lock)), m_real(std::move(real)), m_fixed(std::move(fixed)) {}
  FolderLock m_lock;
  std::string m_real, m_fixed;
  std::vector<std::string> m_linked;  ///< names left in the work folder, linked from the fixed one
};

/// Whether a top-level name of a work folder stays with it when its contents move (its
/// lock file and its logs).
bool stays_in_work_folder(const std::string& name);

}  // namespace tailor::workpath
