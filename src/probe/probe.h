// The host probe behind `tailor detect`, and the pieces the plan and build layers call
// directly (usable memory for job counts, Pythons with their torch, CUDA toolkits).
// Every external command has a timeout; anything missing is a note, never fatal.
#pragma once
#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "cuda/target_request.h"
#include "probe/gpu_query.h"
#include "probe/host_files.h"
#include "probe/host_report.h"
#include "util/expected.h"
#include "util/process.h"

namespace tailor::probe {

struct ProbeOptions {
  std::string build_dir = ".";
  std::vector<std::string> pythons;  ///< extra interpreters to probe (--python)
  bool probe_pythons = true;
  /// Importing torch takes seconds, more on a loaded machine.
  std::chrono::seconds python_timeout{30};
};

/// The real machine: files, commands and NVML.
HostReport probe_host(const ProbeOptions& options);
/// Same, over the given side effects (tests pass fakes).
HostReport probe_host(const ProbeOptions& options, HostFiles& files, CommandRunner& runner,
                      GpuQuery& gpus);

// ---- pieces ------------------------------------------------------------------------
/// /proc/meminfo plus the cgroup v2 (memory.max/memory.current) or v1
/// (memory.limit_in_bytes/memory.usage_in_bytes) limit of this process.
HostMemory probe_memory(HostFiles& files);
/// Model and cores from /proc/cpuinfo; the ISA level from `files.cpu_features()` (CPUID)
/// or, when that is empty, from the cpuinfo flags/Features.
/// Then usable_cores: the affinity mask (/proc/self/status) and the cgroup CPU quota.
HostCpu probe_cpu(HostFiles& files);
/// Sets cpu.usable_cores and cores_limited_by from the affinity mask and the cgroup CPU
/// quota (v2 cpu.max, else v1 cpu.cfs_quota_us), the tightest along the hierarchy.
void limit_cpu(HostFiles& files, HostCpu& cpu);
/// GPUs through `gpus` (NVML), falling back to nvidia-smi; notes say what was missing.
GpuQueryResult probe_gpus(GpuQuery& gpus, CommandRunner& runner, std::vector<std::string>& notes);
/// The GPUs as cuda::resolve_target_request takes them (its default and `native`).
std::vector<cuda::DetectedGpu> detected_gpus(const std::vector<HostGpu>& gpus);
/// This machine's GPUs, probed when first asked (NVML, else nvidia-smi): a
/// TargetRequest's `detect` for commands that probe nothing else.
std::function<std::vector<cuda::DetectedGpu>()> gpu_detector();
/// One interpreter: version and its torch; nullopt when it cannot be run at all.
std::optional<PythonInstall> probe_python(const std::string& python, CommandRunner& runner,
                                          std::chrono::seconds timeout = std::chrono::seconds(30));
/// probe_python with a cache in `cache_dir`: a short script that does not import torch
/// stamps the interpreter and torch's files (inode, size, mtime); the same stamp as the
/// cached entry's returns the cached answer (`from_cache`), else the full probe runs and
/// an interpreter with a torch is cached (unless `may_write` is false). Importing torch
/// costs seconds per build.
std::optional<PythonInstall> probe_python_cached(const std::string& python, CommandRunner& runner,
                                                 std::chrono::seconds timeout,
                                                 const std::string& cache_dir,
                                                 bool* from_cache = nullptr, bool may_write = true);
/// Interpreters on PATH (python3, python, python3.X), pyenv versions, plus `extra`,
/// deduplicated by realpath, probed in parallel.
std::vector<PythonInstall> probe_pythons(HostFiles& files, CommandRunner& runner,
                                         const std::vector<std::string>& extra,
                                         std::vector<std::string>& notes,
                                         std::chrono::seconds timeout = std::chrono::seconds(30));
/// Every nvcc under CUDA_HOME/CUDA_PATH, PATH, /usr/local/cuda*, deduplicated by realpath.
std::vector<CudaToolkit> find_cuda_toolkits(HostFiles& files, CommandRunner& runner);
/// Same, with the host compilers already found (fills accepted_host_compilers).
std::vector<CudaToolkit> find_cuda_toolkits(HostFiles& files, CommandRunner& runner,
                                            const std::vector<Compiler>& compilers);
/// gcc/g++/gcc-N/clang... on PATH, deduplicated by realpath.
std::vector<Compiler> find_host_compilers(HostFiles& files, CommandRunner& runner);
std::vector<Tool> find_tools(HostFiles& files, CommandRunner& runner);

// ---- pure parsers (unit-tested over real-shaped text) -----------------------------
struct MeminfoFields {
  uint64_t total = 0, available = 0, swap_total = 0, swap_free = 0;
};
MeminfoFields parse_meminfo(const std::string& text);
/// How many CPUs a kernel CPU list names ("0-3,8,10-11" is 7), as in /proc/self/status's
/// Cpus_allowed_list and cpuset.cpus; nullopt for anything malformed.
std::optional<int> parse_cpu_list(std::string_view text);
/// The CPUs a cgroup CPU quota allows, rounded up: v2 cpu.max "150000 100000" is 2;
/// nullopt for "max ..." (no quota) and malformed text.
std::optional<int> parse_cpu_max(std::string_view text);
/// x86-64 micro-architecture level (x86-64-v1..v4) from CPUID feature names
/// ("avx2", "bmi1", "osxsave" ...); the rules are data/probe/isa_levels.toml.
std::string x86_isa_level(const std::set<std::string>& features);
/// armv8.x-a / armv9-a from the /proc/cpuinfo "Features" (HWCAP) names.
std::string aarch64_isa_level(const std::set<std::string>& features);
/// CPUID of the running CPU as feature names (empty on non-x86).
std::set<std::string> cpuid_features();
/// HWCAP/HWCAP2 bits as the names /proc/cpuinfo "Features" prints ("asimddp", "sve2");
/// bits without a name in data/probe/isa_levels.toml are left out.
std::set<std::string> hwcap_names(uint64_t hwcap, uint64_t hwcap2);
/// getauxval(AT_HWCAP/AT_HWCAP2) of this process through hwcap_names (empty on non-Arm).
std::set<std::string> hwcap_features();
/// The Neoverse class ("V2", "V1", "N1") whose features `features` all has; empty if none.
std::string aarch64_neoverse_class(const std::set<std::string>& features);
/// "Cuda compilation tools, release 13.0, V13.0.88" -> "13.0.88".
std::optional<std::string> parse_nvcc_version(const std::string& text);
/// CUDNN_MAJOR/MINOR/PATCHLEVEL from cudnn_version.h (or old cudnn.h).
std::optional<std::string> parse_cudnn_version(const std::string& header);
/// NCCL_MAJOR/MINOR/PATCH from nccl.h.
std::optional<std::string> parse_nccl_version(const std::string& header);
/// The newest GCC major a toolkit accepts, from include/crt/host_config.h
/// (`#if __GNUC__ > 14` -> 14).
std::optional<int> parse_host_config_max_gcc(const std::string& header);
/// The newest clang major it accepts (`__clang_major__ >= 21` -> 20), ignoring the
/// Grace-clang check.
std::optional<int> parse_host_config_max_clang(const std::string& header);
/// Paths of `compilers` whose major version the toolkit's host_config.h allows.
std::vector<std::string> accepted_host_compilers(const CudaToolkit& toolkit,
                                                 const std::vector<Compiler>& compilers);
/// The first dotted version number in a --version banner ("cmake version 3.25.1").
std::optional<std::string> parse_tool_version(const std::string& text);
/// The JSON line printed by the probe script in one interpreter.
Expected<PythonInstall> parse_python_probe(const std::string& json_text);
/// "gcc (Debian 12.2.0-14) 12.2.0" / "Debian clang version 14.0.6" -> Compiler fields.
std::optional<Compiler> parse_compiler_version(const std::string& text);

nlohmann::json to_json(const HostReport& report);

}  // namespace tailor::probe
