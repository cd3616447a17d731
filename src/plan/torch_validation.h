// The checks of a PyTorch build variant against the release, the toolchain and the host.
// Each returns the problems it finds (possibly several); resolve_torch_plan calls them
// all and keeps every problem, so one run lists everything to fix (mold's checkpoint
// style), never just the first.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "cuda/target_set.h"
#include "plan/torch_catalog.h"
#include "plan/torch_plan.h"
#include "probe/host_report.h"

namespace tailor::plan {

using Problems = std::vector<PlanProblem>;

/// Python X.Y against the release's supported list.
Problems check_python_for_release(const TorchRelease& release, const std::string& python);
/// CUDA X.Y against the release's supported list.
Problems check_cuda_for_release(const TorchRelease& release, const cuda::CudaVersion& cuda);
/// Every target the chosen nvcc cannot produce (from the CUDA target table).
Problems check_targets_for_nvcc(const cuda::TargetSet& targets, const cuda::CudaVersion& cuda);
/// A CPU target on the wrong platform (avx512 on aarch64).
Problems check_cpu_target_platform(const CpuTarget& target, const std::string& platform,
                                   const TorchCatalog& catalog);
/// Torch cannot cross-compile: the target platform must be the host's.
Problems check_platform(const std::string& platform, const std::string& host_platform,
                        PlanPurpose purpose);
/// This host's glibc must not be newer than the manylinux tag wanted.
Problems check_glibc_for_manylinux(const std::string& host_glibc, const std::string& manylinux,
                                   const TorchCatalog& catalog);

struct CompilerChoice {
  std::string cxx;  ///< path of the g++ to give nvcc; empty when none fits
  int major = 0;
};
/// The newest host g++ of at least the release's `min_gcc` that `nvcc` takes
/// (probe::toolkit_accepts_compiler; a limit it does not state takes any); a problem when
/// none fits. `nvcc`: the build's toolkit, its limits as the probe or the data know them.
CompilerChoice choose_host_compiler(const probe::HostReport& host, int min_gcc,
                                    const probe::CudaToolkit& nvcc, ProblemSeverity severity,
                                    Problems& problems);

}  // namespace tailor::plan
