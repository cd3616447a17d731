// What `tailor arch` reports about a target set, as data: every consumer's spelling
// (with what each cannot express), how every known CC runs it, and which CUDA versions
// can build it. The CLI only renders this.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "cuda/compatibility.h"
#include "cuda/gpu_catalog.h"
#include "cuda/nvcc_capabilities.h"
#include "cuda/renderers.h"
#include "cuda/target_set.h"

namespace tailor::cuda {

struct ConsumerSpelling {
  Consumer consumer;
  std::string variable;             ///< "TORCH_CUDA_ARCH_LIST"
  std::string text;                 ///< "8.0;8.6+PTX"
  std::vector<std::string> losses;  ///< render_losses()
};

struct DeviceCoverage {
  CapabilityFacts capability;
  Coverage coverage;
  std::vector<std::string> gpu_examples;
};

struct NvccCheck {
  NvccCapabilities nvcc;
  std::string path;                   ///< empty when read from the table (--nvcc)
  std::vector<std::string> problems;  ///< unsupported_by()
};

struct ArchReport {
  TargetSet targets;
  std::vector<ConsumerSpelling> spellings;
  std::vector<DeviceCoverage> devices;                ///< every known CC, ascending
  std::vector<CudaVersion> cuda_versions_that_build;  ///< from the table, ascending
  std::optional<NvccCheck> nvcc_check;
};

/// `nvcc` is the compiler to check against (from --nvcc or the installed nvcc), if any.
ArchReport make_arch_report(const TargetSet& targets, std::optional<NvccCheck> nvcc);

}  // namespace tailor::cuda
