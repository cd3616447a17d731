// What the extension build's step files share (workflow/extension_build.cpp,
// extension_inputs.cpp, extension_run.cpp): the status line, the stop, the host's C++
// compiler, the disk the build needs. Internal to workflow.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "probe/host_report.h"
#include "workflow/extension_steps.h"

namespace tailor::workflow::detail {

// An extension build needs its source copy, build/ objects and the wheel: a couple of GB
// covers every package in the recipes except flash-attn's full instantiation set.
inline constexpr uint64_t k_disk_needed_bytes = uint64_t{4} << 30;

/// One headline on the options' status stream (none when quiet).
void status(const ExtensionBuildOptions& o, const std::string& line);
inline StepResult stop(BuildStatus status, std::string message) {
  return StepStop{status, std::move(message)};
}
/// `p` with its links resolved; `p` itself when it cannot be.
std::string realpath_or(const std::string& p);
/// The C++ compiler torch's cpp_extension will use: the caller's CXX (`environment`), else
/// c++ / g++ on PATH.
const probe::Compiler* host_cxx(const probe::HostReport& host,
                                const std::map<std::string, std::string>& environment);
/// Free bytes where `path` (or its nearest existing parent) is.
std::optional<uint64_t> disk_free(const std::string& path);

// Cross builds (extension_cross.cpp).
/// The host's machine name as the probe read it ("x86_64").
std::string host_machine(const probe::HostReport& host);
/// --platform: a cross build when it names another machine than the host's; `implied` is
/// the platform the named GPUs exist on ("" any).
StepResult choose_cross_platform(const ExtensionBuildOptions& o, ExtensionBuildState& s,
                                 const std::optional<std::string>& implied);
/// The cross compilers, nvcc and the build's torch: one line naming what to install.
StepResult check_cross_prerequisites(const ExtensionBuildState& s);
/// --print-env: the target's folders, nothing fetched.
void plan_cross_paths(const ExtensionBuildOptions& o, ExtensionBuildState& s);
/// The target's torch, Python and CUDA runtime, ready in tailor's cache, into the request.
StepResult prepare_cross(const ExtensionBuildOptions& o, ExtensionBuildContext& ctx,
                         ExtensionBuildState& s);
/// Every library of the wheel is code for the build's machine.
StepResult check_wheel_machine(const ExtensionBuildState& s,
                               const std::vector<std::pair<std::string, std::string>>& machines);
/// The import test of a cross build: the wheel under qemu-user with the target's Python and
/// torch; skipped, with the reason, without qemu-user.
StepResult cross_import_check(const ExtensionBuildOptions& o, ExtensionBuildContext& ctx,
                              ExtensionBuildState& s, const std::string& import_names);

/// A package without a recipe: the known API removals its source uses bridged in the copy
/// (compat/bridge.h), listed in the report (extension_compat.cpp).
StepResult bridge_removed_apis(const ExtensionBuildOptions& o, ExtensionBuildState& s);
/// A failed build whose first error block shows a known removal: a diagnosis first that
/// names it, and what tailor changed in that file or why it was not bridged. `tail`: the
/// failed step's last lines as the runner kept them (the failed unit's whole output).
void name_known_removals(const ExtensionBuildOptions& o, ExtensionBuildState& s,
                         const builder::LogTail& tail);

}  // namespace tailor::workflow::detail
