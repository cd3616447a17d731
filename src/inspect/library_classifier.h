// Turns elf's per-library analysis into inspect's view of it: each needed library
// classified (bundled, manylinux whitelist, CUDA runtime with its providers, driver,
// system) and the strictest manylinux policy the version needs fit. Also the
// aggregation shared by wheels and directories (target totals, the policy of a set).
#pragma once
#include <set>
#include <string>
#include <vector>

#include "inspect/inspect_report.h"

namespace tailor::inspect {

/// `bundled` holds the file names (and sonames) available beside the library: the
/// wheel's members or the other inputs.
InspectedLibrary classify_library(LibraryReport report, const std::set<std::string>& bundled);

/// Per-target totals across libraries; share relative to `installed_bytes` (0: no share).
std::vector<TargetTotal> target_totals(const std::vector<InspectedLibrary>& libraries, uint64_t installed_bytes);

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

}  // namespace tailor::inspect
