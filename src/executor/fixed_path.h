// Builds that give the same bytes from any folder. nvcc names a translation unit's internal
// symbols (`_GLOBAL__N__<id>_...`, `_INTERNAL_<id>_...`) after a hash of the source's
// absolute path, and caches key their entries by it, so a wheel built in ~/a and one built
// in ~/b differ and never share cache entries. The build's steps therefore run in a private
// mount namespace (bubblewrap, unprivileged) where the work folder appears at one fixed
// path, the same for every work folder, user, home and machine; the rest of the file
// system is the real one, so toolchains, Pythons and caches are where they always are.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "executor/build_runner.h"
#include "util/expected.h"
#include "util/process.h"

namespace tailor::executor {

/// Where builds see their work folder: one folder per package name, under a tmpfs that
/// the namespace mounts over `k_fixed_root`, so nothing real is ever written there.
inline constexpr std::string_view k_fixed_root = "/tmp/.tailor-build";

/// `k_fixed_root/<name>`, the name reduced to [A-Za-z0-9._-] (empty: "package").
std::string fixed_work_path(std::string_view package);

struct FixedPath {
  std::string real;    ///< the work folder
  std::string fixed;   ///< where the build sees it
  std::string bwrap;   ///< bubblewrap's executable
};

/// Whether bubblewrap gives this process a private mount namespace with `real` at `fixed`
/// (tried once: `bwrap ... true`); the error says why not ("no bwrap on PATH",
/// "bwrap: setting up uid map: Permission denied", ...).
Expected<FixedPath> open_fixed_path(const std::string& real, const std::string& fixed, const std::string& bwrap,
                                    CommandRunner& runner);

/// `text` with every path under `fp.real` (the folder itself or `real/...`) written under
/// `fp.fixed`; other text untouched ("/w/ab" is not under "/w/a").
std::string to_fixed(std::string_view text, const FixedPath& fp);

/// The argv that runs `argv` in the namespace, in `cwd` (a real path; it is mapped).
std::vector<std::string> fixed_path_argv(const FixedPath& fp, const std::string& cwd, const std::vector<std::string>& argv);

/// A step that runs in the namespace: argv, cwd and every environment value mapped, argv
/// behind bubblewrap, which is started in the real cwd.
plan::Step in_fixed_path(plan::Step step, const FixedPath& fp);

}  // namespace tailor::executor
