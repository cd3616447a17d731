// `tailor build torch`: runs a resolved PyTorch TorchPlan on this host, as the steps of
// workflow/torch_steps.h. Source at the tag with submodules (git) or a local tree; a venv
// with the build requirements; the build with progress, log and diagnosis; then
// verification (inspect shows exactly the asked targets in libtorch_cuda.so, the
// manylinux tag its libraries need, import and torch.cuda.get_arch_list() in a clean
// venv, a GPU smoke test where a GPU is present); the wheel renamed in the official style
// with WHEEL and RECORD rewritten, and a report, release notes and a runtime Dockerfile
// published beside it, atomically.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "cache/cache_settings.h"
#include "cuda/cuda_version.h"
#include "plan/torch_doctor.h"
#include "plan/torch_plan.h"
#include "probe/host_report.h"
#include "util/process.h"

namespace tailor::workflow {

struct TorchBuildOptions {
  std::string out_dir = "dist";
  bool configure_only = false;
  /// Build with the chosen interpreter as it is (no venv, no pip install): for offline
  /// hosts whose Python already has the requirements, and for the test fixture.
  bool no_venv = false;
  /// false (--no-wait): fail at once when another build holds the work or output folder.
  bool wait_for_lock = true;
  /// The compiler cache: --cache as read (plan::parse_cache_flag; nullopt: auto), and
  /// where it keeps its entries (the config's [cache], then TAILOR_CACHE /
  /// TAILOR_CACHE_URL, then --cache-url). The plan decides the tool from these.
  std::optional<cache::CacheTool> cache;
  std::string cache_url;
  cache::CacheSettings cache_settings;
};

struct TorchBuildResult {
  int exit_code = 0;                   ///< 0 ok, 1 build/verification failed, 2 bad input
  std::string message;                 ///< why it failed
  std::string wheel_path;              ///< published wheel
  std::vector<std::string> published;  ///< everything written to out_dir
};

TorchBuildResult build_torch(const plan::TorchVariant& variant, const probe::HostReport& host,
                             const plan::ResolveOptions& resolve, const TorchBuildOptions& options);

/// Facts for `tailor doctor` that need the file system or a Python: installed package
/// versions of the plan's requirements, and empty third_party submodules.
plan::DoctorFacts gather_doctor_facts(const plan::TorchPlan& plan, CommandRunner& runner);

/// The apt packages the runtime image needs for these DT_NEEDED sonames (data/pytorch/
/// runtime_packages.toml), for CUDA `cuda` (12.6; nullopt: a CPU build, no CUDA packages);
/// sonames inside the wheel are skipped.
std::vector<std::string> runtime_packages_for(const std::vector<std::string>& needed_sonames,
                                              const std::optional<cuda::CudaVersion>& cuda);

/// The runtime Dockerfile beside the wheel: a base with the build's glibc, NVIDIA's
/// repository for the platform, exactly those packages, and the wheel installed.
std::string render_runtime_dockerfile(const plan::TorchPlan& plan, const std::string& wheel_name,
                                      const std::vector<std::string>& packages);

}  // namespace tailor::workflow
