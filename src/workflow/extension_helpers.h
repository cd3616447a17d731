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
inline constexpr const char* k_tool_version = "0.1.0";

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

}  // namespace tailor::workflow::detail
