// One thing nvcc can put into a binary: SASS for one CC (`sm_90`, a cubin) or PTX for a
// virtual architecture (`compute_90`), optionally arch-specific (`a`) or family (`f`).
#pragma once
#include <compare>
#include <string>
#include <string_view>

#include "cuda/compute_capability.h"
#include "util/expected.h"

namespace tailor::cuda {

enum class TargetKind { sass, ptx };
/// `a`: only the exact CC (sm_90a); `f`: the CC's family at or above it (sm_100f).
enum class ArchVariant { none, a, f };

struct CudaTarget {
  TargetKind kind = TargetKind::sass;
  ComputeCapability cc;
  ArchVariant variant = ArchVariant::none;

  /// "sm_90a", "compute_90", "sm_100f"
  std::string name() const;
  /// "90a", "100f", "75": the part after sm_/compute_
  std::string digits() const;

  bool operator==(const CudaTarget&) const = default;
  /// Ordered by CC, then variant, then SASS before PTX: the order people read lists in.
  std::strong_ordering operator<=>(const CudaTarget& other) const;
};

CudaTarget sass(ComputeCapability cc, ArchVariant variant = ArchVariant::none);
CudaTarget ptx(ComputeCapability cc, ArchVariant variant = ArchVariant::none);

/// Exactly the canonical names (`sm_75`, `sm_90a`, `compute_90`, `sm_100f`), as cuobjdump
/// and nvcc print them. Syntax only: any CC is accepted, so future targets still parse.
Expected<CudaTarget> parse_target_name(std::string_view name);

}  // namespace tailor::cuda
