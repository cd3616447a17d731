// A GPU's compute capability (CC), e.g. 9.0 for H100: the one number every CUDA target,
// GPU name and build-system spelling comes back to.
#pragma once
#include <compare>
#include <string>
#include <string_view>

#include "util/expected.h"

namespace tailor::cuda {

struct ComputeCapability {
  int major = 0;
  int minor = 0;
  /// "9.0", "12.1"
  std::string str() const;
  /// 90, 121: the digits of sm_XY
  int number() const;
  auto operator<=>(const ComputeCapability&) const = default;
};

/// "9.0", "12.1" (dotted form only; bare numbers are target spellings, see arch_spec.h).
Expected<ComputeCapability> parse_compute_capability(std::string_view text);

/// The digits of an sm_/compute_ name: "90" -> 9.0, "121" -> 12.1 (the last digit is the
/// minor, as nvcc spells it).
Expected<ComputeCapability> compute_capability_from_digits(std::string_view digits);

}  // namespace tailor::cuda
