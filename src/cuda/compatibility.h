// Which devices run a set of targets, and how: the rules of NVIDIA's compatibility
// guide. SASS runs on its exact CC and on later minors of the same major (not across
// Tegra parts); `a` targets only on their exact CC; `f` targets across their family at
// or above their CC; PTX JITs forward to any later CC (`a` PTX does not).
#pragma once
#include <optional>
#include <string_view>

#include "cuda/target_set.h"

namespace tailor::cuda {

enum class RunMode { native, compatible_sass, ptx_jit, none };

struct Coverage {
  RunMode mode = RunMode::none;
  std::optional<CudaTarget> via;  ///< the entry the device would load
};

/// How a device of CC `device` runs a binary with `set` (best entry: native SASS, then
/// compatible SASS, then PTX JIT).
Coverage coverage_on(const TargetSet& set, ComputeCapability device);
/// Whether one entry can run on `device`, and how.
RunMode run_mode(const CudaTarget& target, ComputeCapability device);
/// Tegra (Jetson) CCs: 5.3, 6.2, 7.2, 8.7, ... (data/cuda/gpus.toml).
bool is_tegra(ComputeCapability cc);
/// "native SASS", "compatible SASS", "PTX JIT", "no kernel image"
std::string_view run_mode_label(RunMode mode);
/// "native", "compatible_sass", "ptx_jit", "none" (JSON)
std::string_view run_mode_key(RunMode mode);

}  // namespace tailor::cuda
