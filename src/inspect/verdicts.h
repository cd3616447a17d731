// Verdicts for CI over an inspect result: `--gpu` (does this GPU run every library with
// device code, and how), `--require` (every such library carries the spec's targets) and
// `--exact` (its target set is exactly the spec). Arch rules come from the cuda module.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "inspect/inspect_report.h"
#include "util/expected.h"

namespace tailor::inspect {

struct VerdictSpecs {
  std::optional<std::string> gpu, require, exact;
  bool any() const { return gpu || require || exact; }
};

enum class VerdictCheck { gpu, require, exact };
/// "gpu", "require", "exact"
std::string_view verdict_check_key(VerdictCheck check);

/// A target that runs a library on the device, with its entry count: "sm_90" (444).
struct CoveringTarget {
  std::string target;
  uint64_t entries = 0;
};

struct LibraryVerdict {
  VerdictCheck check = VerdictCheck::gpu;
  std::string library;  // path (for a wheel member: "<wheel>!<member>")
  bool pass = false;
  std::string device;  // gpu: the CC, "7.5"
  /// gpu: the GPU and instance names the user typed for this CC ("H100"), empty for a bare CC.
  std::vector<std::string> gpu_names;
  /// gpu: "H100 (9.0)" where the user named the GPU, "9.0" where they typed the CC.
  std::string device_label() const;
  std::string mode;    // gpu: "native", "compatible_sass", "ptx_jit", "none"
  std::string via;     // gpu: the entry it would load, "sm_75" (the plain target when several cover)
  /// gpu: every target that runs on the device in `mode`, plain before a/f variants, then
  /// newest first: sm_90 (444 entries) and sm_90a (4 entries) on a 9.0 device.
  std::vector<CoveringTarget> covering;
  std::vector<std::string> missing, extra;  // require / exact
  /// gpu: why it fails whatever its device code, in one line: the GPU exists only on
  /// another platform than the library's machine ("T4G (g5g) exists only on aarch64; this
  /// library is x86_64", cuda::platform_mismatch). Empty otherwise.
  std::string reason;
};

struct Verdicts {
  std::vector<LibraryVerdict> items;
  std::vector<std::string> problems;  // verdict-level failures, e.g. no device code at all
  bool pass() const;
};

/// Evaluates the specs. A spec tailor cannot parse, or one whose GPUs exist on two
/// platforms, is an error (exit 2), never a failure. A GPU verdict fails for a library of
/// another machine than the platform its GPU implies (cuda::platform_mismatch).
Expected<Verdicts> evaluate(const InspectReport& report, const VerdictSpecs& specs);

}  // namespace tailor::inspect
