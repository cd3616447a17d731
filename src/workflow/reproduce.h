// `tailor build --verify-reproducible WHEEL [SOURCE]`: rebuilds a wheel from the provenance
// tailor wrote into its dist-info (package, recipe, profile, targets, source and its
// digest, toolchain) and compares the bytes, as Debian's reproducible-builds and Nix check
// a package: the same wheel, or the members that differ and the toolchain differences
// that may explain them.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "inspect/wheel_provenance.h"
#include "util/expected.h"
#include "workflow/extension_build.h"

namespace tailor::workflow {

using inspect::WheelProvenance;

/// What to rebuild from: SOURCE as given, else what the provenance names (NAME==VERSION
/// from the index, a git URL@ref, the bundled example); an error naming what to pass for
/// an sdist or a folder, whose path is not in the provenance.
Expected<std::string> rebuild_source(const WheelProvenance& p, const std::string& given);

/// "nvcc 13.0.88 in the wheel, 12.8.93 here", one per tool whose version differs.
std::vector<std::string> toolchain_differences(const std::map<std::string, std::string>& original,
                                               const std::map<std::string, std::string>& rebuilt);

/// Why a member differs: one wheel lacks it; its bytes differ; only its zip time fields
/// differ (the bytes are the same); or it is tailor's provenance and some of its keys differ.
enum class DifferenceCause { presence, content, time_fields, provenance_keys };
std::string_view difference_cause_name(DifferenceCause cause);  // "content", "time fields", ...

struct MemberDifference {
  std::string name;
  std::string what;  ///< "only in the wheel", "only in the rebuild", "content: 43056 vs 43072
                     ///< bytes", "time fields: 1980-01-01 00:00 vs 2026-11-29 07:02 (the same
                     ///< bytes)", "provenance keys: source_date_epoch (315532800 vs 1764399000)"
  DifferenceCause cause = DifferenceCause::content;
};
/// The members of two wheels that differ (by size and CRC-32, then by their zip time fields;
/// the provenance by its keys), in the first wheel's order then the second's; at most `limit`
/// listed, `total` counts all.
Expected<std::vector<MemberDifference>> compare_wheel_members(const std::string& a,
                                                              const std::string& b, size_t limit,
                                                              size_t& total);

enum class ReproduceVerdict { identical, differs, not_rebuilt };

struct ReproduceResult {
  ReproduceVerdict verdict = ReproduceVerdict::not_rebuilt;
  bool bad_input = false;  ///< exit 2: the wheel or the arguments
  std::string message;     ///< one line when not_rebuilt
  std::string source;      ///< what was rebuilt
  std::string original_sha256, rebuilt_sha256, rebuilt_wheel;
  std::vector<std::string> toolchain_differences;
  std::vector<MemberDifference> members;
  size_t members_differing = 0;
  /// Every differing member's cause with its count ("time fields: 12"), in the enum's order.
  std::vector<std::string> causes;
  ExtensionBuildResult build;
};

/// Rebuilds `wheel` with `build` (its source, python, work folder, cache, display; targets,
/// package and profile come from the provenance) into a fresh folder and compares.
ReproduceResult verify_reproducible(const std::string& wheel, ExtensionBuildOptions build);

}  // namespace tailor::workflow
