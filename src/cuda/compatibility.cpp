#include "cuda/compatibility.h"

#include "cuda/gpu_catalog.h"

namespace tailor::cuda {

bool is_tegra(ComputeCapability cc) {
  auto info = find_capability(cc);
  return info && info->tegra;
}

RunMode run_mode(const CudaTarget& t, ComputeCapability device) {
  if (t.kind == TargetKind::sass) {
    if (t.cc == device) return RunMode::native;
    if (t.cc.major != device.major || t.cc.minor > device.minor) return RunMode::none;
    // Arch-specific cubins use features of exactly one CC.
    if (t.variant == ArchVariant::a) return RunMode::none;
    // Family cubins run across the family at or above their CC.
    if (t.variant == ArchVariant::f) return RunMode::compatible_sass;
    // The same-major rule is for desktop parts; Tegra cubins and devices are exact only.
    if (is_tegra(t.cc) || is_tegra(device)) return RunMode::none;
    return RunMode::compatible_sass;
  }
  if (device < t.cc) return RunMode::none;
  if (t.variant == ArchVariant::a) return t.cc == device ? RunMode::ptx_jit : RunMode::none;
  if (t.variant == ArchVariant::f)
    return t.cc.major == device.major ? RunMode::ptx_jit : RunMode::none;
  return RunMode::ptx_jit;
}

Coverage coverage_on(const TargetSet& set, ComputeCapability device) {
  Coverage best;
  auto rank = [](RunMode m) {
    switch (m) {
      case RunMode::native:
        return 3;
      case RunMode::compatible_sass:
        return 2;
      case RunMode::ptx_jit:
        return 1;
      case RunMode::none:
        return 0;
    }
    return 0;
  };
  // Targets are sorted ascending, so on ties the later (closer to the device) entry wins,
  // which is what the CUDA runtime picks.
  for (const auto& t : set.targets) {
    RunMode m = run_mode(t, device);
    if (m != RunMode::none && rank(m) >= rank(best.mode)) best = {m, t};
  }
  return best;
}

std::string_view run_mode_label(RunMode mode) {
  switch (mode) {
    case RunMode::native:
      return "native SASS";
    case RunMode::compatible_sass:
      return "compatible SASS";
    case RunMode::ptx_jit:
      return "PTX JIT";
    case RunMode::none:
      return "no kernel image";
  }
  return "?";
}

std::string_view run_mode_key(RunMode mode) {
  switch (mode) {
    case RunMode::native:
      return "native";
    case RunMode::compatible_sass:
      return "compatible_sass";
    case RunMode::ptx_jit:
      return "ptx_jit";
    case RunMode::none:
      return "none";
  }
  return "none";
}

}  // namespace tailor::cuda
