#include "plan/torch_validation.h"

#include <fmt/format.h>

#include <algorithm>

#include "cuda/nvcc_capabilities.h"
#include "plan/cross_target.h"
#include "probe/cuda_toolkit_probe.h"
#include "util/strings.h"

namespace tailor::plan {

namespace {
PlanProblem error(ProblemKind kind, std::string field, std::string message, std::string fix) {
  return {ProblemSeverity::error, kind, std::move(field), std::move(message), std::move(fix)};
}
bool contains(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}
}  // namespace

Problems check_python_for_release(const TorchRelease& release, const std::string& python) {
  if (contains(release.pythons, python)) return {};
  return {error(
      ProblemKind::input, "python",
      fmt::format("torch {} does not support Python {} (it supports {})", release.version, python,
                  join(release.pythons, ", ")),
      fmt::format("choose --python {} (or another supported version)", release.pythons.front()))};
}

Problems check_cuda_for_release(const TorchRelease& release, const cuda::CudaVersion& cuda) {
  if (std::find(release.cudas.begin(), release.cudas.end(), cuda) != release.cudas.end()) return {};
  return {error(ProblemKind::input, "cuda",
                fmt::format("torch {} does not build with CUDA {} (supported: {})", release.version,
                            cuda.to_string(), join(cuda::to_strings(release.cudas), ", ")),
                fmt::format("choose --cuda {} or a torch release that supports CUDA {}",
                            release.cudas.back().to_string(), cuda.to_string()))};
}

Problems check_targets_for_nvcc(const cuda::TargetSet& targets, const cuda::CudaVersion& cuda) {
  Problems out;
  auto caps = cuda::nvcc_capabilities_from_table(cuda);
  if (!caps) {
    out.push_back(
        error(ProblemKind::input, "cuda", caps.error().message, "choose a known CUDA version"));
    return out;
  }
  for (const auto& message : cuda::unsupported_by(targets, *caps))
    out.push_back(error(ProblemKind::input, "arch", message,
                        "drop the target or choose a CUDA version that can produce it (`tailor "
                        "arch SPEC` lists them)"));
  return out;
}

Problems check_cpu_target_platform(const CpuTarget& target, const std::string& platform,
                                   const TorchCatalog& catalog) {
  if (target.platform == platform) return {};
  std::vector<std::string> fitting;
  for (const auto& t : catalog.cpu_targets)
    if (t.platform == platform) fitting.push_back(t.name);
  return {
      error(ProblemKind::input, "cpu_target",
            fmt::format("CPU target {} is for {}, not {}", target.name, target.platform, platform),
            fmt::format("on {} use one of: {}", platform, join(fitting, ", ")))};
}

Problems check_platform(const std::string& platform, const std::string& host_platform,
                        PlanPurpose purpose) {
  if (platform == host_platform || host_platform.empty()) return {};
  std::string example =
      platform == "aarch64"
          ? "an aarch64 machine such as AWS m8g/c7g (Graviton), g5g, or a Grace (GH200) node"
          : "an x86_64 machine";
  PlanProblem p = error(
      ProblemKind::host, "platform",
      fmt::format("PyTorch's build cannot cross-compile: a wheel for {} must be built on {} (this "
                  "host is {})",
                  platform, example, host_platform),
      fmt::format("run the build there: `tailor plan {} --format sh > build-torch.sh` writes a "
                  "script for that host{}",
                  k_plan_flags_placeholder,
                  cross_platform(platform)
                      ? fmt::format("; extension packages for it cross-build here: `tailor build "
                                    "SOURCE --platform {} --gpu ...` (needs `{}`)",
                                    platform, cross_platform(platform)->install)
                      : std::string()));
  if (purpose == PlanPurpose::describe) p.severity = ProblemSeverity::warning;
  return {p};
}

Problems check_glibc_for_manylinux(const std::string& host_glibc, const std::string& manylinux,
                                   const TorchCatalog& catalog) {
  if (host_glibc.empty() || manylinux.empty()) return {};
  std::string wanted = manylinux;
  std::replace(wanted.begin(), wanted.end(), '_', '.');
  if (compare_versions(host_glibc, wanted) <= 0) return {};
  const DistroImage* distro = catalog.distro_for_glibc(wanted);
  return {error(
      ProblemKind::host, "manylinux",
      fmt::format(
          "this host's glibc {} is newer than manylinux_{} allows: the libraries would need "
          "GLIBC_{} symbols and fail on older systems",
          host_glibc, manylinux, host_glibc),
      distro
          ? fmt::format("build inside a glibc {} image ({}): `tailor plan {} --format dockerfile "
                        "> Dockerfile`",
                        distro->glibc, distro->name, k_plan_flags_placeholder)
          : "build on a distribution with that glibc")};
}

CompilerChoice choose_host_compiler(const probe::HostReport& host, int min_gcc,
                                    const probe::CudaToolkit& nvcc, ProblemSeverity severity,
                                    Problems& problems) {
  CompilerChoice best;
  std::vector<std::string> seen;
  for (const auto& c : host.compilers) {
    if (c.kind != probe::CompilerKind::gcc) continue;
    seen.push_back(fmt::format("{} ({})", c.path, c.major));
    if (c.major < min_gcc || probe::toolkit_accepts_compiler(nvcc, c) == false) continue;
    if (c.major > best.major) {
      best.major = c.major;
      best.cxx = c.path;
    }
  }
  if (!best.cxx.empty()) {
    // The probe may list the C driver; nvcc and CMake want the C++ one.
    auto pos = best.cxx.rfind("gcc");
    if (pos != std::string::npos && best.cxx.find("g++") == std::string::npos)
      best.cxx.replace(pos, 3, "g++");
    return best;
  }
  const int max_gcc = nvcc.max_gcc_major.value_or(0);
  const cuda::CudaVersion& cuda = nvcc.release;
  std::string range = max_gcc > 0 ? fmt::format("GCC {} to {}", min_gcc, max_gcc)
                                  : fmt::format("GCC {} or newer", min_gcc);
  PlanProblem p{severity, ProblemKind::host, "host.compiler",
                fmt::format("no host compiler fits: this build needs {} ({}{}), found {}", range,
                            max_gcc > 0 ? fmt::format("nvcc {} accepts GCC up to {}; ",
                                                      cuda.to_string(), max_gcc)
                                        : "",
                            fmt::format("torch needs at least GCC {}", min_gcc),
                            seen.empty() ? "none" : join(seen, ", ")),
                fmt::format("install a fitting g++ (e.g. apt-get install g++-{})",
                            max_gcc > 0 ? max_gcc : min_gcc)};
  problems.push_back(p);
  return best;
}

}  // namespace tailor::plan
