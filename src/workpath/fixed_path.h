// Builds that give the same bytes from any folder. nvcc names a translation unit's internal
// symbols (`_GLOBAL__N__<id>_...`, `_INTERNAL_<id>_...`) after a hash of the source's
// absolute path, and caches key their entries by it, so a wheel built in ~/a and one built
// in ~/b differ and never share cache entries. The build's steps therefore see the work
// folder at one fixed path, the same for every work folder, user, home and machine, by the
// best route this machine allows, in this order:
//  1. own namespace: tailor itself (`tailor __fixed-path ...`, fixed_path_wrapper.h) enters
//     a private mount namespace (as root a mount namespace alone, else a user namespace
//     where the user's ids map to themselves), mounts a tmpfs over `k_fixed_root` and the
//     work folder at the fixed path, and execs the step: no program to install, and the
//     step is the process the runner started (its group, PR_SET_PDEATHSIG, the jobserver
//     fds and the governor's view are as without it);
//  2. bwrap: the same through bubblewrap, where it is installed (a setuid bwrap works
//     where the kernel refuses unprivileged user namespaces);
//  3. folder: no namespace at all (a container without the privilege, user namespaces
//     disabled): the work folder's contents move, for the run, into a real folder at the
//     fixed path, held under a folder lock (fixed_folder.h), so builds of one package wait
//     for each other;
//  4. none: the work folder's own path, with a warning that the bytes depend on it.
// The rest of the file system is the real one, so toolchains, Pythons and caches are
// where they always are. `TAILOR_FIXED_PATH_ROUTE` (namespace|bwrap|folder|none) forces
// one route: a switch for tests and diagnosis.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "plan/step.h"
#include "util/expected.h"
#include "util/process.h"

namespace tailor::workpath {

/// Where builds see their work folder: one folder per package name, under a tmpfs that
/// the namespace mounts over `k_fixed_root`, so nothing real is ever written there (the
/// folder route alone writes there, for real).
inline constexpr std::string_view k_fixed_root = "/tmp/.tailor-build";

/// The variable that forces a route (tests, diagnosis).
inline constexpr std::string_view k_fixed_path_route_variable = "TAILOR_FIXED_PATH_ROUTE";

/// `k_fixed_root/<name>`, the name reduced to [A-Za-z0-9._-] (empty: "package").
std::string fixed_work_path(std::string_view package);

enum class FixedPathRoute { own_namespace, bwrap, folder, none };

/// "namespace", "bwrap", "folder", "none".
std::string_view fixed_path_route_name(FixedPathRoute route);
/// The route a `TAILOR_FIXED_PATH_ROUTE` value names; unset for an empty or absent value;
/// an error naming the variable and the values it takes.
Expected<std::optional<FixedPathRoute>> parse_fixed_path_route(const char* value);

struct FixedPath {
  std::string real;   ///< the work folder
  std::string fixed;  ///< where the build sees it
  FixedPathRoute route = FixedPathRoute::own_namespace;
  /// What each step runs behind: tailor's own executable (own_namespace) or bubblewrap's;
  /// empty for the folder route, whose steps run as they are.
  std::string launcher;
  /// `tailor build --sandbox` (own_namespace only): no network, and nothing writable but
  /// the work folder, `writable` (the compiler cache's folder) and /dev/shm.
  bool sandbox = false;
  std::vector<std::string> writable;
};

/// What the routes need from this machine, asked once.
struct FixedPathTools {
  std::string tailor_exe;  ///< this program (self_executable())
  std::string bwrap;       ///< bubblewrap on PATH, or empty
};

/// The route a build takes and why not the better ones.
struct FixedPathChoice {
  std::optional<FixedPath> path;  ///< unset: none, the work folder's own path
  /// Each better route tried (or not, when one was forced) and why it was not taken.
  std::vector<std::pair<FixedPathRoute, std::string>> refused;
  std::string forced;  ///< "TAILOR_FIXED_PATH_ROUTE=folder" when the variable chose
  FixedPathRoute route() const { return path ? path->route : FixedPathRoute::none; }
  /// "namespace: ...; bwrap: no bwrap (bubblewrap) on PATH" (empty when none was refused).
  std::string refusals() const;
};

/// The routes in order (own namespace, bwrap, folder), or only the one `forced` names;
/// the first that `open` accepts is taken. `open` is the side effect (the system's tries
/// each route once, `open_fixed_path`), so the order is tested over fakes.
FixedPathChoice choose_fixed_path(const std::string& real, const std::string& fixed,
                                  const FixedPathTools& tools, std::optional<FixedPathRoute> forced,
                                  const std::function<Expected<void>(const FixedPath&)>& open);

/// The system's choice: the namespace routes tried once (the wrapper or bubblewrap runs
/// `true` in them), the folder route's folder checked (fixed_folder.h) but not locked.
FixedPathChoice open_fixed_path(const std::string& real, const std::string& fixed,
                                const FixedPathTools& tools, std::optional<FixedPathRoute> forced,
                                CommandRunner& runner);

/// Which route a build on this machine takes, and why not the better ones, for `detect`
/// and `doctor`: the namespace routes tried once on a scratch folder, the folder route's
/// root checked (nothing locked, no package folder made). `forced` as for a build.
FixedPathChoice probe_fixed_path_route(const FixedPathTools& tools,
                                       std::optional<FixedPathRoute> forced, CommandRunner& runner);

/// One line on what a route means for builds: "tailor's own private mount namespace: ...".
std::string describe_fixed_path_route(FixedPathRoute route);

/// The warning a build without a fixed path prints and reports: why, and what would fix it.
std::string no_fixed_path_warning(const FixedPathChoice& choice);

/// This program's executable, resolved once (/proc/self/exe); "/proc/self/exe" itself when
/// the file was deleted or replaced since it started.
std::string self_executable();

/// `text` with every path under `fp.real` (the folder itself or `real/...`) written under
/// `fp.fixed`; other text untouched ("/w/ab" is not under "/w/a").
std::string to_fixed(std::string_view text, const FixedPath& fp);

/// The argv that runs `argv` at the fixed path, in `cwd` (a real path; it is mapped):
/// behind the launcher for the namespace routes, `argv` mapped for the folder route.
std::vector<std::string> fixed_path_argv(const FixedPath& fp, const std::string& cwd,
                                         const std::vector<std::string>& argv);

/// A step that runs at the fixed path: argv, cwd and every environment value mapped. The
/// namespace routes start their launcher in the real cwd; the folder route's step starts
/// in the fixed folder itself.
plan::Step in_fixed_path(plan::Step step, const FixedPath& fp);

}  // namespace tailor::workpath
