// Turns elf's per-library analysis into inspect's view of it: each needed library
// classified (bundled, manylinux whitelist, CUDA runtime with its providers, driver,
// system) and the strictest manylinux policy the version needs fit. Also the
// aggregation shared by wheels and directories (target totals, the policy of a set).
#pragma once
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "inspect/inspect_report.h"

namespace tailor::inspect {

/// Where the loader's search found one needed library (library_resolver.h decides).
struct NeedResolution {
  enum class Where { nowhere, inside, on_disk, unreached };
  Where where = Where::nowhere;
  std::string
      path;         // inside: the member / input; on_disk: the file; unreached: a file of that name
  std::string via;  // "RUNPATH $ORIGIN/../lib"
  std::string
      note;  // unreached: "a file of that name is in the wheel at X, but no RUNPATH reaches it"
};

/// Classifies each need: found inside (bundled), else by who provides it (whitelist, CUDA
/// of any major, driver, torch), else found on disk, else not found (a file of that name
/// exists but the search does not reach it), else system. `resolutions` is parallel to
/// `report.needed` (missing entries count as nowhere).
InspectedLibrary classify_resolved(LibraryReport report,
                                   const std::vector<NeedResolution>& resolutions);
/// The same where `bundled` holds the names resolved inside (tests, simple callers).
InspectedLibrary classify_library(LibraryReport report, const std::set<std::string>& bundled);

/// Per-target totals across libraries and device files (`libraries` of a total counts
/// both); share relative to `installed_bytes` (0: no share).
std::vector<TargetTotal> target_totals(const std::vector<InspectedLibrary>& libraries,
                                       const std::vector<DeviceFile>& device_files,
                                       uint64_t installed_bytes);

/// The manylinux tag a set of libraries supports together: the least strict of their
/// fits, lowered to linux_<arch> by a library needed from the system.
struct SetFit {
  std::string tag;  // "" when there is no ELF library
  std::string policy;
  int glibc_major = 0, glibc_minor = 0;
  std::string arch;
  std::vector<std::string> limiting;
};
SetFit fit_of_set(const std::vector<InspectedLibrary>& libraries);

/// Whether a wheel's manylinux platform tags hold for its libraries: every manylinux tag
/// must be at least as new as `fit`, for the same architecture. The problem names first
/// the symbol versions the claimed policy refuses (highest first, nothing it allows),
/// then the needs that come from nowhere (system, not found).
struct ClaimCheck {
  bool ok = true;
  std::string problem;
};
ClaimCheck check_manylinux_claim(const std::vector<std::string>& platform_tags, const SetFit& fit,
                                 const std::vector<InspectedLibrary>& libraries);

/// The GPU platform other than CUDA whose backend a library is ("ROCm", "oneAPI (XPU)"):
/// it needs that platform's runtime (OtherGpuRuntimes). nullopt for CUDA and CPU libraries.
std::optional<std::string> other_gpu_platform(const InspectedLibrary& library);

/// Fills a wheel's claim fields from its libraries and the platform tags of its name:
/// claim_ok/claim_problem over every library, other_gpu_libraries, and the claim checked
/// again without those (claim_ok_without_other_gpu), which decides whether it fails a run.
void check_wheel_claim(WheelReport& wheel, const std::vector<std::string>& platform_tags);

}  // namespace tailor::inspect
