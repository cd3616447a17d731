// Verdicts for CI over an inspect result: `--gpu` (does this GPU run every library with
// device code, and how), `--require` (every such library carries the spec's targets) and
// `--exact` (its target set is exactly the spec). The flags are read once, by the
// resolution every command uses (cuda::resolve_target_request: each flag repeatable, one
// error line naming the flag); arch rules come from the cuda module.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cuda/compute_capability.h"
#include "cuda/gpu_platform.h"
#include "cuda/target_set.h"
#include "inspect/inspect_report.h"
#include "util/expected.h"

namespace tailor::inspect {

/// The verdict flags as typed, one element per flag given: `--gpu T4G --gpu H100` is
/// {"T4G", "H100"}; a spec may hold several itself ("8.0;9.0", "H100,A100").
struct VerdictSpecs {
  std::vector<std::string> gpu, require, exact;
  bool any() const { return !gpu.empty() || !require.empty() || !exact.empty(); }
};

/// What the specs ask, read: the devices --gpu names (with the names the user typed for
/// each CC, and the platform those names imply: T4G is aarch64), and the target sets of
/// --require and --exact.
struct VerdictTargets {
  std::vector<cuda::ComputeCapability> devices;  ///< ascending, unique
  std::map<cuda::ComputeCapability, std::vector<std::string>>
      gpu_names;  ///< "H100" for 9.0; none for a bare CC
  std::map<cuda::ComputeCapability, cuda::ImpliedPlatform> platforms;
  std::optional<cuda::TargetSet> require, exact;
  bool any() const { return !devices.empty() || require || exact; }
};

/// Reads the specs. A spec tailor cannot parse, or GPUs that exist on two platforms, is an
/// error (exit 2), one line that starts with the flag ("--gpu: unknown GPU 'H1000' ...").
Expected<VerdictTargets> resolve_verdict_specs(const VerdictSpecs& specs);

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
  cuda::ComputeCapability device;  // gpu: the device (7.5)
  /// gpu: the GPU and instance names the user typed for this CC ("H100"), empty for a bare CC.
  std::vector<std::string> gpu_names;
  /// gpu: "H100 (9.0)" where the user named the GPU, "9.0" where they typed the CC.
  std::string device_label() const;
  std::string mode;  // gpu: "native", "compatible_sass", "ptx_jit", "none"
  std::string via;   // gpu: the entry it would load, "sm_75" (the plain target when several cover)
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

/// The verdicts over every library with device code. A GPU verdict fails for a library of
/// another machine than the platform its GPU implies (cuda::platform_mismatch); a library
/// whose entries the CUDA model cannot read as targets is an error.
Expected<Verdicts> evaluate(const InspectReport& report, const VerdictTargets& targets);
/// resolve_verdict_specs, then the verdicts.
Expected<Verdicts> evaluate(const InspectReport& report, const VerdictSpecs& specs);

}  // namespace tailor::inspect
