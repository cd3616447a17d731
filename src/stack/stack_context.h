// Internal to src/stack: the state of one run_stack and the steps its files share (pip's
// runs and the file cache, the decisions over inspected wheels, the fall-back to an sdist).
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "inspect/inspect_report.h"
#include "stack/stack.h"
#include "util/expected.h"
#include "util/process.h"

namespace tailor::stack {

using Clock = std::chrono::steady_clock;
inline double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

constexpr auto k_pip_timeout = std::chrono::minutes(20);

/// One run_stack: the request, the target and the result as it is filled in.
struct Context {
  const StackRequest& request;
  CommandRunner& runner;
  Target target;
  std::string python;        // runs pip
  std::string torch_python;  // --torch PYTHON: its installed torch is part of the stack
  IndexOptions index;
  std::string cache;
  std::optional<cuda::CudaVersion> asked_cuda;  // --cuda, read once
  StackResult result;
  std::string torch_replaced_by;  // --torch PYTHON: the other torch pip resolved, "" none
};

// ---- pip and the file cache (pip_runs.cpp) ---------------------------------------------
struct PipRun {
  bool ok = false;
  std::vector<ResolvedDist> dists;
  std::string err;
  std::string command;
  bool reused = false;  ///< a stored resolution that still holds (stack_cache.h)
};

/// The requirement's distribution name (normalised): "torch>=2.9; python_version>'3'" -> "torch".
std::string requirement_name(std::string_view req);
/// Whether a Requires-Dist line holds only for an extra ("x; extra == 'cuda'").
bool has_extra_marker(std::string_view req);
/// The runner's result, or one line for a command that did not start, timed out or was
/// interrupted.
Expected<CommandResult> run_checked(CommandRunner& runner, CommandSpec spec,
                                    const std::string& what);
/// pip's --platform/--python-version/--implementation for a cross target (none otherwise).
std::vector<std::string> target_tag_args(const Context& c);
/// One `pip install --dry-run --report` through the target wrapper, or the stored
/// resolution of the same command while the index pages it read are unchanged;
/// `stored_only`: the stored one or nothing.
Expected<PipRun> pip_dry_run(Context& c, const std::vector<std::string>& requirements,
                             const std::vector<std::string>& extra_args, bool ignore_installed,
                             bool stored_only = false);
/// Brings these files into the cache (pip download, sha256 checked); returns the paths by key.
Expected<std::map<std::string, std::filesystem::path>> fetch_into_cache(
    Context& c, const std::vector<const ResolvedDist*>& dists);
Expected<std::string> file_sha256(const std::filesystem::path& path);

// ---- decisions (wheel_judgement.cpp) ---------------------------------------------------
/// An NVIDIA CUDA runtime wheel's row, with a note when its CUDA major is not torch's.
void decide_runtime(Context& c, Row& row, const ResolvedDist& d);
/// The reason a wheel cannot be used on the target (empty when it can), from its inspection.
std::string judge_wheel(Context& c, Row& row, const inspect::WheelReport& wheel);

// ---- the sdist (source_fallback.cpp) ---------------------------------------------------
/// The targets `tailor build --gpu` compiles for the target's GPUs: sm_XY each.
std::vector<std::string> gpu_build_targets(const Target& target);
/// --wheelhouse: each row to build whose wheel the wheelhouse publishes for the same inputs
/// becomes prebuilt from there (its URL and sha256 the wheelhouse's); a row that stays a
/// build names what the wheelhouse's closest wheel differed in.
Expected<void> take_wheelhouse(Context& c, std::vector<Row>& rows);
/// Turns an unusable or missing wheel into a build from the sdist, or unsupported.
Expected<void> fall_back_to_source(Context& c, Row& row, const std::string& requirement,
                                   const std::string& why);

}  // namespace tailor::stack
