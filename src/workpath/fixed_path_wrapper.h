// tailor's own fixed-path launcher: the hidden command `tailor __fixed-path` that every
// step of a build runs behind on the own-namespace route (fixed_path.h):
//
//   tailor __fixed-path --tmpfs ROOT --bind REAL FIXED [--chdir DIR] [--sandbox [--rw PATH]...] --
//   ARGV...
//
// It enters a private mount namespace (util/mount_namespace.h), mounts a tmpfs over ROOT
// (so nothing real is written there), the folder REAL at FIXED, changes to DIR and execs
// ARGV. It execs and never forks, so ARGV is the very process the runner started: the
// same pid, process group, PR_SET_PDEATHSIG (restored after the namespace is made; exec
// keeps it), inherited fds (a jobserver's), environment (the run's marker variable) and
// signals; Ctrl-C and the supervisor reach the build as without it.
//
// --sandbox (`tailor build --sandbox`) also gives ARGV no network (a new network namespace
// with only a loopback that is down) and a read-only file system except FIXED, each --rw
// PATH and /dev/shm: a setup.py that writes to $HOME or opens a socket gets the system's
// own error (EROFS, ENETUNREACH) from its own call.
//
// Every failure is one line on stderr, `tailor: fixed path: ...`, and exit 127, the
// shell's "could not run": never a crash, never ARGV run at the wrong path.
#pragma once
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/expected.h"

namespace tailor::workpath {

/// The hidden command's name (not in help, completions or the man page).
inline constexpr std::string_view k_fixed_path_command = "__fixed-path";

struct FixedPathWrapperArgs {
  std::string tmpfs;  ///< the fixed root
  std::string real, fixed;
  std::string chdir;  ///< empty: stay in the folder it started in
  bool sandbox = false;
  std::vector<std::string> writable;  ///< --rw, with --sandbox
  std::vector<std::string> argv;
};

/// The words after `__fixed-path`; an error naming the word that is wrong.
Expected<FixedPathWrapperArgs> parse_fixed_path_wrapper_args(const std::vector<std::string>& args);

/// `tailor __fixed-path ARGS...`: sets up the namespace and execs; returns only on failure
/// (127, after one line on stderr).
int run_fixed_path_wrapper(const std::vector<std::string>& args);

}  // namespace tailor::workpath
