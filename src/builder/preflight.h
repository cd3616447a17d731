// Pre-flight checks before a build: every problem is collected with its fix, then the
// caller stops (never the first problem alone). The checks work on plain facts gathered
// from the probe (toolchain, Python, torch, disk), so they are tested with hand-made facts.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cuda/cuda_version.h"

namespace tailor::builder {

struct PreflightFacts {
  // CUDA toolkit
  std::string nvcc_path;     ///< empty: no nvcc found
  std::string nvcc_version;  ///< "13.0.88"
  std::optional<int> nvcc_major;
  /// Problems from cuda::unsupported_by(targets, nvcc capabilities): targets this nvcc
  /// cannot produce, one message each.
  std::vector<std::string> unsupported_targets;
  // Host compiler
  std::string host_compiler;                   ///< "gcc 12.2.0"; empty when unknown
  std::optional<bool> host_compiler_accepted;  ///< by this nvcc; nullopt when unknown
  std::string host_compiler_limit;             ///< "gcc <= 14" (for the fix text)
  // The C++ runtime of the compiler that links the extension (probe::check_cxx_runtime):
  // torch's libraries need libstdc++.so.6, an extension with a static copy crashes on
  // torch's first exception.
  std::string cxx_runtime_compiler;         ///< empty: not checked (no check asked)
  std::optional<bool> cxx_runtime_dynamic;  ///< nullopt: the test link could not be made
  std::string cxx_runtime_detail;           ///< one line: what was found, or why not
  /// When that compiler links the runtime statically: a C++ compiler of this machine that
  /// links libstdc++.so.6 (the system's g++) and its C compiler, which the build uses
  /// instead (CXX, CC), and what was found of it; empty: none.
  std::string cxx_runtime_instead, cc_runtime_instead, cxx_runtime_instead_detail;
  // Python and torch
  std::string python;  ///< path asked for or found
  bool python_runs = false;
  std::string torch_version;  ///< empty: torch not importable
  /// The same, read once (cuda::parse_cuda_version) where the facts are gathered.
  std::optional<cuda::CudaVersion> torch_cuda;
  std::string torch_error;     ///< why `import torch` failed (the probe's words)
  bool torch_required = true;  ///< false for `build torch` (it builds torch)
  // Disk
  std::string build_dir;
  std::optional<uint64_t> disk_free_bytes;
  uint64_t disk_needed_bytes = 0;
};

struct PreflightCheck {
  std::string name;  ///< "nvcc", "targets", "cuda-match", "host-compiler", "cxx-runtime", "python",
                     ///< "torch", "disk"
  bool ok = true;
  std::string detail;   ///< what was found: "nvcc 13.0.88 at /usr/local/cuda/bin/nvcc"
  std::string problem;  ///< when !ok: what is wrong
  std::string fix;      ///< when !ok: what to change
};

struct PreflightReport {
  std::vector<PreflightCheck> checks;
  bool ok() const;
  std::vector<const PreflightCheck*> problems() const;
};

PreflightReport run_preflight(const PreflightFacts& facts);

/// "✗ torch: ... \n    fix: ..." lines for every failed check (and "✓" lines with
/// `verbose`).
enum class PreflightVerbosity { problems, all };
std::string render_preflight(const PreflightReport& report, PreflightVerbosity verbosity);

}  // namespace tailor::builder
