// Verification of a produced wheel against what was asked: every library with device
// code must carry exactly the requested targets, plus what the package's own build adds
// by design (its recipe's [verify] section: bitsandbytes appends PTX of the highest
// target), named as such; anything else extra, or anything missing, fails. Built on
// inspect's report and the cuda module's types (targets compare by CC, sm_80 < sm_100).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cuda/compatibility.h"
#include "cuda/target_set.h"
#include "inspect/inspect_report.h"
#include "plan/extension_plan.h"
#include "util/expected.h"

namespace tailor::outputs {

/// What verification needs of one library (filled from inspect's library report).
struct LibraryTargets {
  std::string path;  ///< inside the wheel
  bool has_device_code = false;
  cuda::TargetSet targets;
  std::map<std::string, uint64_t> bytes_per_target;  ///< by target name
};

struct LibraryVerdict {
  std::string path;
  cuda::TargetSet missing;        ///< asked, not present
  cuda::TargetSet unexpected;     ///< present, neither asked nor declared by the recipe
  cuda::TargetSet package_added;  ///< present, not asked, declared by the recipe
  /// For each missing SASS target: how a GPU of that CC would still run the library
  /// (cuda::coverage_on), "9.0: PTX JIT via compute_80" or "9.0: no kernel image".
  std::vector<std::string> fallback;
  bool ok() const { return missing.empty() && unexpected.empty(); }
};

struct TargetVerification {
  cuda::TargetSet expected_targets;
  std::vector<std::string> expected;                 ///< expected_targets' names, in numeric order
  std::vector<plan::PackageAddition> declared;       ///< what the recipe says the package adds
  std::vector<LibraryVerdict> libraries;             ///< one per library with device code
  std::map<std::string, uint64_t> bytes_per_target;  ///< summed over libraries
  bool any_device_code = false;
  std::string fallback_hint;  ///< said after "no library ... carries CUDA device code"
  /// "fused_ops/_C.so: links torch (libc10.so) but does not need libstdc++.so.6: ..." for
  /// each library of the wheel with a C++ runtime problem (inspect's runtime_warnings);
  /// not part of ok(), which is about targets.
  std::vector<std::string> runtime_problems;
  /// What `tailor inspect` of the same wheel reports beyond targets, each one line naming the
  /// library or the wheel: its failures (a RECORD that does not match, a manylinux tag the
  /// libraries do not fit) and its warnings (the search-path WARNING lines of each library:
  /// a build machine's folder, $LIB, an entry relative to the working directory ...).
  std::vector<std::string> inspect_failures, inspect_warnings;
  /// Each ELF library of the wheel and its machine ("x86_64", "aarch64"): a cross build's
  /// wheel holds the target's code only.
  std::vector<std::pair<std::string, std::string>> library_machines;
  /// Every library with device code matches, and there is at least one.
  bool ok() const;
  /// One line per failing library: "fused_ops/_C.so: missing sm_90, unexpected sm_80".
  std::string describe_problems() const;
  /// One line per declared addition found in the wheel:
  /// "compute_90 added by bitsandbytes' build (PTX of the highest target)".
  std::vector<std::string> describe_additions() const;
  /// The passing check's line: "exactly sm_75, sm_80 in every library with device code"
  /// and the additions after it.
  std::string summary() const;
};

/// A library of inspect's report as verification sees it: its SASS and PTX targets and
/// their stored bytes. LTO IR entries (lto_<arch>) are neither targets nor an error: the
/// library links them itself, the driver never loads them; a library that carries only
/// LTO IR has no device code here. An entry of a kind the CUDA model does not know is an
/// error naming the library.
Expected<LibraryTargets> library_targets(const inspect::InspectedLibrary& lib);

TargetVerification compare_targets(const std::vector<LibraryTargets>& libraries,
                                   const cuda::TargetSet& expected,
                                   const std::vector<plan::PackageAddition>& declared = {});

/// Inspects `wheel` (through inspect::inspect_paths) and compares.
Expected<TargetVerification> verify_wheel_targets(
    const std::string& wheel, const cuda::TargetSet& expected,
    const std::vector<plan::PackageAddition>& declared = {});

}  // namespace tailor::outputs
