// Verification of a produced wheel against what was asked: every library with device
// code must carry exactly the requested targets (no missing one, no extra one). Built on
// inspect's report; the comparison itself is a pure function over target names.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "util/expected.h"

namespace tailor::build {

/// What verification needs of one library (filled from inspect::LibraryReport).
struct LibraryTargets {
  std::string path;                       ///< inside the wheel
  bool has_device_code = false;
  std::vector<std::string> targets;       ///< "sm_90", "compute_90" (PTX)
  std::map<std::string, uint64_t> bytes_per_target;
};

struct LibraryVerdict {
  std::string path;
  std::vector<std::string> missing;       ///< asked, not present
  std::vector<std::string> unexpected;    ///< present, not asked
  bool ok() const { return missing.empty() && unexpected.empty(); }
};

struct TargetVerification {
  std::vector<std::string> expected;
  std::vector<LibraryVerdict> libraries;  ///< one per library with device code
  std::map<std::string, uint64_t> bytes_per_target;  ///< summed over libraries
  bool any_device_code = false;
  /// Every library with device code matches, and there is at least one.
  bool ok() const;
  /// One line per failing library: "fused_ops/_C.so: missing sm_90, unexpected sm_80".
  std::string describe_problems() const;
};

TargetVerification compare_targets(const std::vector<LibraryTargets>& libraries,
                                   const std::vector<std::string>& expected);

/// Inspects `wheel` (through inspect::inspect_paths) and compares.
Expected<TargetVerification> verify_wheel_targets(const std::string& wheel,
                                                  const std::vector<std::string>& expected);

}  // namespace tailor::build
