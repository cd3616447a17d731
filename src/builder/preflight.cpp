#include "builder/preflight.h"

#include <fmt/format.h>

#include "cuda/cuda_version.h"
#include "util/strings.h"

namespace tailor::builder {
namespace {

PreflightCheck ok_check(std::string name, std::string detail) {
  return PreflightCheck{std::move(name), true, std::move(detail), {}, {}};
}
PreflightCheck bad_check(std::string name, std::string detail, std::string problem,
                         std::string fix) {
  return PreflightCheck{std::move(name), false, std::move(detail), std::move(problem),
                        std::move(fix)};
}

}  // namespace

bool PreflightReport::ok() const {
  for (const auto& c : checks)
    if (!c.ok) return false;
  return true;
}

std::vector<const PreflightCheck*> PreflightReport::problems() const {
  std::vector<const PreflightCheck*> out;
  for (const auto& c : checks)
    if (!c.ok) out.push_back(&c);
  return out;
}

namespace {

// nvcc present, and able to produce the targets.
void check_nvcc(const PreflightFacts& f, PreflightReport& r) {
  if (f.nvcc_path.empty()) {
    r.checks.push_back(bad_check("nvcc", "no nvcc on PATH, in CUDA_HOME or /usr/local/cuda*",
                                 "no CUDA compiler (nvcc) found",
                                 "install the CUDA toolkit matching torch's CUDA version and put "
                                 "its bin/ on PATH (or set CUDA_HOME)"));
  } else {
    r.checks.push_back(ok_check(
        "nvcc",
        fmt::format("nvcc {} at {}", f.nvcc_version.empty() ? "?" : f.nvcc_version, f.nvcc_path)));
    // nvcc able to produce the targets
    if (!f.unsupported_targets.empty())
      r.checks.push_back(
          bad_check("targets", "", join(f.unsupported_targets, "; "),
                    "use a CUDA toolkit that supports these targets, or drop them from --arch"));
    else
      r.checks.push_back(ok_check("targets", "nvcc can produce every requested target"));
  }
}

// A Python that runs, and in it a CUDA build of torch when the build needs one.
void check_python(const PreflightFacts& f, PreflightReport& r) {
  if (f.python.empty() || !f.python_runs) {
    r.checks.push_back(
        bad_check("python", f.python.empty() ? "no python found" : f.python + " does not run",
                  "no usable Python interpreter",
                  "pass --python PATH to the interpreter of the environment the wheel is for"));
  } else {
    r.checks.push_back(ok_check("python", f.python));
    if (f.torch_required) {
      if (f.torch_version.empty())
        r.checks.push_back(bad_check(
            "torch", "",
            fmt::format("torch is not importable in {}{}", f.python,
                        f.torch_error.empty() ? "" : " (" + f.torch_error + ")"),
            fmt::format(
                "{} -m pip install torch (the extension builds against the installed torch)",
                f.python)));
      else if (!f.torch_cuda)
        r.checks.push_back(bad_check(
            "torch", "torch " + f.torch_version, "the installed torch is a CPU-only build",
            "install a CUDA build of torch (e.g. from https://download.pytorch.org/whl/cu130)"));
      else
        r.checks.push_back(ok_check("torch", fmt::format("torch {} (CUDA {})", f.torch_version,
                                                         f.torch_cuda->to_string())));
    }
  }
}

// The CUDA majors of nvcc and torch.
void check_cuda_match(const PreflightFacts& f, PreflightReport& r) {
  // nvcc's CUDA major == torch's: torch.utils.cpp_extension raises a RuntimeError
  // ("The detected CUDA version ... mismatches ...") only after the build has started.
  if (f.torch_required && !f.nvcc_path.empty() && f.torch_cuda) {
    std::optional<int> nvcc_major = f.nvcc_major;
    std::optional<int> torch_major = f.torch_cuda->major;
    if (nvcc_major && torch_major && *nvcc_major != *torch_major)
      r.checks.push_back(
          bad_check("cuda-match", "",
                    fmt::format("nvcc is CUDA {} but torch {} was built with CUDA {}: "
                                "torch.utils.cpp_extension would stop "
                                "with 'The detected CUDA version ({}) mismatches the version that "
                                "was used to compile PyTorch ({})'",
                                f.nvcc_version, f.torch_version, f.torch_cuda->to_string(),
                                f.nvcc_version, f.torch_cuda->to_string()),
                    fmt::format("use a CUDA {}.x toolkit (set CUDA_HOME and PATH to it), or "
                                "install a torch built for CUDA {}",
                                *torch_major, *nvcc_major)));
    else if (nvcc_major && torch_major)
      r.checks.push_back(
          ok_check("cuda-match", fmt::format("nvcc and torch both CUDA {}", *nvcc_major)));
  }
}

// A host compiler that nvcc accepts.
void check_host_compiler(const PreflightFacts& f, PreflightReport& r) {
  if (!f.nvcc_path.empty()) {
    if (f.host_compiler.empty())
      r.checks.push_back(bad_check("host-compiler", "", "no host C++ compiler (g++) found",
                                   "install g++ (build-essential) or set CXX"));
    else if (f.host_compiler_accepted && !*f.host_compiler_accepted)
      r.checks.push_back(bad_check(
          "host-compiler", f.host_compiler,
          fmt::format(
              "nvcc {} does not accept {}{}", f.nvcc_version, f.host_compiler,
              f.host_compiler_limit.empty() ? "" : " (it wants " + f.host_compiler_limit + ")"),
          "install an accepted gcc and point CUDAHOSTCXX (and NVCC_CCBIN) at it, or as a last "
          "resort add "
          "-allow-unsupported-compiler to NVCC_APPEND_FLAGS"));
    else
      r.checks.push_back(ok_check("host-compiler", f.host_compiler));
  }
}

// The C++ runtime the extension would link.
void check_cxx_runtime(const PreflightFacts& f, PreflightReport& r) {
  // C++ runtime: a compiler that cannot link a C++ library at all fails the build anyway
  // (its own words then); one that links the runtime statically fails it after minutes.
  if (!f.cxx_runtime_compiler.empty()) {
    if (f.cxx_runtime_dynamic && !*f.cxx_runtime_dynamic && !f.cxx_runtime_instead.empty())
      r.checks.push_back(ok_check(
          "cxx-runtime",
          fmt::format("{}; building with {} and {} instead ({}), as torch's libraries need",
                      f.cxx_runtime_detail, f.cxx_runtime_instead, f.cc_runtime_instead,
                      f.cxx_runtime_instead_detail)));
    else if (f.cxx_runtime_dynamic && !*f.cxx_runtime_dynamic)
      r.checks.push_back(bad_check("cxx-runtime", f.cxx_runtime_detail,
                                   fmt::format("{}: an extension linked so carries its own C++ "
                                               "runtime and crashes on the first exception "
                                               "torch throws (torch uses libstdc++.so.6)",
                                               f.cxx_runtime_detail),
                                   "use a C++ compiler that links libstdc++.so.6 dynamically: set "
                                   "CXX to the system's g++ (/usr/bin/g++), "
                                   "or unset CXX"));
    else if (f.cxx_runtime_dynamic)
      r.checks.push_back(ok_check("cxx-runtime", f.cxx_runtime_detail));
    else
      r.checks.push_back(ok_check("cxx-runtime", "not checked: " + f.cxx_runtime_detail));
  }
}

// Room on the disk for the build.
void check_disk(const PreflightFacts& f, PreflightReport& r) {
  if (f.disk_free_bytes) {
    if (*f.disk_free_bytes < f.disk_needed_bytes)
      r.checks.push_back(bad_check(
          "disk", f.build_dir,
          fmt::format("{} free under {}, the build needs about {}", human_bytes(*f.disk_free_bytes),
                      f.build_dir, human_bytes(f.disk_needed_bytes)),
          "free space there or point TMPDIR at a larger disk"));
    else
      r.checks.push_back(ok_check(
          "disk", fmt::format("{} free under {}", human_bytes(*f.disk_free_bytes), f.build_dir)));
  }
}

}  // namespace

PreflightReport run_preflight(const PreflightFacts& f) {
  PreflightReport r;
  check_nvcc(f, r);
  check_python(f, r);
  check_cuda_match(f, r);
  check_host_compiler(f, r);
  check_cxx_runtime(f, r);
  check_disk(f, r);
  return r;
}

std::string render_preflight(const PreflightReport& report, PreflightVerbosity verbosity) {
  std::string out;
  for (const auto& c : report.checks) {
    if (c.ok) {
      if (verbosity == PreflightVerbosity::all)
        out += fmt::format("  ok  {:<14} {}\n", c.name, c.detail);
      continue;
    }
    out += fmt::format("  bad {:<14} {}\n", c.name, c.problem);
    if (!c.fix.empty()) out += fmt::format("      {:<14} fix: {}\n", "", c.fix);
  }
  return out;
}

}  // namespace tailor::builder
