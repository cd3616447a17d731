// Which targets an nvcc can produce: asked of the real nvcc (--list-gpu-code,
// --list-gpu-arch) when one is installed, else read from data/cuda/nvcc_targets.toml.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "cuda/cuda_version.h"
#include "cuda/target_set.h"
#include "util/expected.h"
#include "util/process.h"

namespace tailor::cuda {

struct NvccCapabilities {
  CudaVersion cuda_version;      ///< 13.0
  std::vector<CudaTarget> sass;  ///< sorted
  std::vector<CudaTarget> ptx;   ///< sorted
  std::string source;            ///< "nvcc --list-gpu-code" or "table"

  bool can_produce(const CudaTarget& target) const;
};

/// An error for versions not in the table.
Expected<NvccCapabilities> nvcc_capabilities_from_table(const CudaVersion& cuda_version);
/// Any spelling parse_cuda_version reads ("13.0", "13.0.88", "cu126").
Expected<NvccCapabilities> nvcc_capabilities_from_table(std::string_view cuda_version);
/// Runs `nvcc --version`, `--list-gpu-code` and `--list-gpu-arch`. nvcc lists only the
/// plain targets; the a/f variants of listed CCs come from the table for that version.
Expected<NvccCapabilities> nvcc_capabilities_from_nvcc(const std::string& nvcc,
                                                       CommandRunner& runner);
/// The CUDA versions in the table, ascending (11.8, ..., 13.0).
std::vector<CudaVersion> known_cuda_versions();
/// One message per target the compiler cannot produce:
/// "CUDA 13.0 cannot target sm_60; its lowest is 7.5 (sm_75)".
std::vector<std::string> unsupported_by(const TargetSet& set, const NvccCapabilities& nvcc);

}  // namespace tailor::cuda
