// The one resolution of what a command was asked to build for, keep or require: `--arch
// SPEC` (targets in any spelling arch_spec reads), `--gpu SPEC` (GPUs, CCs or instance
// types: each one's SASS), else the GPUs detected on this machine. Every command that
// takes targets (build, plan/doctor/build torch, stack, slim, inspect's --require/--exact,
// arch, matrix's gpu axis) calls resolve_target_request, so the rules and the messages are
// the same everywhere:
//   - each flag may repeat; its specs, and the entries inside each spec, are one union;
//   - --arch and --gpu together are an error (two ways of saying one thing);
//   - neither: the detected GPUs' SASS where the command has a default, else an error;
//     no GPU found, or one that reports no CC, is an error too, never "all architectures";
//   - --gpu adds no PTX: a GPU runs its own SASS. PTX comes only from --arch spellings
//     that say so (8.6+PTX, 86, compute_90, a torch family name);
//   - `native` is the detected GPUs, `all`/`all-major` need the context's nvcc;
//   - every error is one line that starts with the flag ("--gpu: unknown CUDA target ...").
// Which platform the names imply (T4G: aarch64) is cuda/gpu_platform's rule, applied by
// each command to `named`.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cuda/arch_spec.h"
#include "cuda/compute_capability.h"
#include "cuda/target_set.h"
#include "util/expected.h"

namespace tailor::cuda {

/// A GPU of this machine, as the probe found it (cuda knows no probe: callers convert).
struct DetectedGpu {
  int index = 0;
  std::string name;                     ///< "NVIDIA H100 80GB HBM3"
  std::optional<ComputeCapability> cc;  ///< unknown where the driver does not say
};

struct TargetRequest {
  std::vector<std::string> arch;  ///< --arch SPEC, once per flag, as typed
  std::vector<std::string> gpu;   ///< --gpu SPEC, once per flag, as typed
  /// The flags' names in messages: slim's --keep, inspect's --require. An empty gpu_flag:
  /// the command has no such flag.
  std::string arch_flag = "--arch";
  std::string gpu_flag = "--gpu";
  /// Whether a bad spec's message starts with its flag. Off where the caller names the
  /// input itself (plan's problems are filed under "arch"; `tailor arch` takes positionals).
  bool prefix_errors = true;
  /// This machine's GPUs: the targets when neither flag is given, and what `native`
  /// means. Called at most once, and only then. Unset: the command has no default and a
  /// target must be named.
  std::function<std::vector<DetectedGpu>()> detect;
};

enum class TargetSource { arch, gpu, detected };

struct ResolvedTargets {
  TargetSet targets;
  TargetSource source = TargetSource::arch;
  /// The devices asked for: --gpu's GPUs, the detected ones, or the CCs of --arch's
  /// targets. Ascending, unique.
  std::vector<ComputeCapability> devices;
  /// What names the targets, for the platform rule (cuda::implied_platform): the specs as
  /// typed, or the detected GPUs' names.
  std::vector<std::string> named;
  /// Where the targets came from, for reports: "--arch 8.0;9.0", "--gpu T4G --gpu H100",
  /// "detected GPU 0: NVIDIA H100 80GB HBM3 (9.0)".
  std::string described;
};

Expected<ResolvedTargets> resolve_target_request(const TargetRequest& request,
                                                 const ArchSpecContext& context = {});

}  // namespace tailor::cuda
