// Parsing every spelling people use for CUDA targets (facts in data/cuda/): TORCH_CUDA_ARCH_LIST
// entries and named arches, CMake's CMAKE_CUDA_ARCHITECTURES, nvcc flags, canonical names, GPU
// names and cloud instance types. Case-insensitive; entries separated by `;`, spaces or commas.
//
// Meaning of the ambiguous forms, chosen to follow the build system that owns them:
//   "8.6"  (torch)  = sm_86          "8.6+PTX" = sm_86 + compute_86   "9.0a" = sm_90a
//   "86"   (CMake)  = sm_86 + compute_86   "80-real" = sm_80   "90-virtual" = compute_90
//   "sm_86", "sm86" = sm_86          "compute_86" = compute_86
//   a GPU name or instance type = SASS for that GPU's CC (T4G, g5g.xlarge -> sm_75)
#pragma once
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cuda/compute_capability.h"
#include "cuda/nvcc_capabilities.h"
#include "cuda/target_set.h"
#include "util/expected.h"

namespace tailor::cuda {

/// What the keywords `all`, `all-major` and `native` need from the caller.
struct ArchSpecContext {
  /// For `all` / `all-major` (CMake and nvcc meaning: every real target the compiler
  /// supports, plus PTX for the highest major).
  std::optional<NvccCapabilities> nvcc;
  /// For `native`: the CCs of the GPUs on this machine (from detection).
  std::vector<ComputeCapability> native_devices;
};

Expected<TargetSet> parse_arch_spec(std::string_view spec, const ArchSpecContext& context = {});
/// The union of several arguments (`tailor arch 8.0 sm_90a T4G`).
Expected<TargetSet> parse_arch_specs(const std::vector<std::string>& specs,
                                     const ArchSpecContext& context = {});
/// Why the specs gave the targets they did, where people are surprised: a torch named
/// list embeds PTX of its newest CC ("Turing" = 7.5+PTX), a GPU or instance name gives
/// that GPU's SASS only ("T4G" = sm_75), a family's list leaves out its Tegra parts
/// ("Blackwell" has no sm_110, which is "Blackwell+Tegra"). Empty for a spec that does
/// not parse (parse_arch_specs says why).
std::vector<std::string> arch_spec_notes(const std::vector<std::string>& specs,
                                         const ArchSpecContext& context = {});
/// The GPU and instance names a spec uses, per CC, as verdicts label a device:
/// "H100;8.6" -> {9.0: [H100]}, "g5g.xlarge" -> {7.5: [g5g.xlarge]}. Empty when it does not parse.
std::map<ComputeCapability, std::vector<std::string>> gpu_names_in_spec(std::string_view spec);
/// The device CCs a spec names: "T4G" -> 7.5, "9.0" -> 9.0, "sm_90a" -> 9.0,
/// "g5g.xlarge" -> 7.5, "A100;H100" -> 8.0, 9.0; "native" -> the context's devices. Ascending,
/// unique.
Expected<std::vector<ComputeCapability>> parse_gpu_spec(std::string_view spec,
                                                        const ArchSpecContext& context = {});

}  // namespace tailor::cuda
