// tailor's own clone of a PyTorch release tag: the hidden command a torch build runs for
// its plan's clone step (the plan shows the plain `git clone`; workflow/torch_steps.cpp
// runs this in its place):
//
//   tailor __clone-source --url URL --tag TAG --dest DIR
//
// - DIR is a clone at TAG's commit: reused, its submodules brought up to date (which also
//   finishes an interrupted submodule init).
// - DIR is a clone of another commit, or a folder holding something else: refused, naming
//   what is there (nothing of the user's is removed).
// - Otherwise `git clone --recurse-submodules --shallow-submodules --depth 1 --branch TAG`
//   into DIR.partial (an older one removed first), renamed to DIR once whole, so a failed or
//   interrupted clone never leaves a tree at DIR that the next run would take for one.
// A file:// URL is a mirror the user named, whose submodules may be file:// URLs too; git
// refuses those by default since 2.38.1 (protocol.file.allow=user), so this command allows
// them for a file:// URL only.
// A failure is one line, `tailor: clone: cannot clone TAG from URL: <git's last error>`
// (data/diagnose/failures.toml's clone-* patterns read it; the network or the remote is
// to blame, never the package), and exit 1; bad arguments exit 2.
#pragma once
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "util/expected.h"
#include "util/process.h"

namespace tailor::source {

/// The hidden command's name (not in help, completions or the man page).
inline constexpr std::string_view k_clone_command = "__clone-source";

struct CloneRequest {
  std::string url, tag, dest;
};

/// The words after `__clone-source`; an error naming what is wrong.
Expected<CloneRequest> parse_clone_args(const std::vector<std::string>& args);

/// `tailor __clone-source ...` as a step's argv, `tailor` being this program's path.
std::vector<std::string> clone_command_argv(const std::string& tailor, const CloneRequest& r);

/// What clone_source did: "reused" or "cloned", and the commit at DIR.
struct CloneResult {
  bool reused = false;
  std::string commit;
};

/// Reuses or makes the clone (see above). git's output goes to `out` line by line. The
/// error's message is what follows "cannot clone TAG from URL: ".
Expected<CloneResult> clone_source(const CloneRequest& r, CommandRunner& runner, std::FILE* out);

/// The hidden command: parse, clone_source, the one failure line. Returns the exit code.
int run_clone_command(const std::vector<std::string>& args);

}  // namespace tailor::source
