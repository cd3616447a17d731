// A CUDA release (major.minor): what a toolkit, a driver, a torch build or a user names.
// Every spelling is read here, once, at the edge ("13.0", nvcc's "13.0.88", torch's
// "cu130", the driver's 13000); past the edge versions are compared and rendered as this
// type, never as text.
#pragma once
#include <compare>
#include <string>
#include <string_view>
#include <vector>

#include "util/expected.h"

namespace tailor::cuda {

struct CudaVersion {
  int major = 0;
  int minor = 0;
  /// "13.0"
  std::string to_string() const;
  /// torch's wheel label: "cu130", "cu128", "cu118"
  std::string label() const;
  auto operator<=>(const CudaVersion&) const = default;
};

/// "13.0", "12.8", "13.0.88" (nvcc's patch level is dropped), "cu130", "cu128" (torch's
/// label: two digits of major, one of minor); surrounding blanks are ignored. Anything
/// else, "13" and NVIDIA's major-only "cu12" included, is one line:
/// "not a CUDA version: 'x' (expected e.g. 12.8 or cu128)".
Expected<CudaVersion> parse_cuda_version(std::string_view text);

/// The driver's integer (nvmlSystemGetCudaDriverVersion, cudaDriverGetVersion):
/// 13000 -> 13.0, 12080 -> 12.8; zero or less is an error.
Expected<CudaVersion> cuda_version_from_driver(int value);

/// "12.6", "12.8", ... in the given order (for messages and JSON lists).
std::vector<std::string> to_strings(const std::vector<CudaVersion>& versions);

}  // namespace tailor::cuda
