// What `tailor detect` finds about a host: plain data, filled by probe_host() and
// rendered by to_json() or the CLI. Missing things are empty fields plus a note, never
// an error: a probe that cannot see something says so and carries on.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cuda/compute_capability.h"
#include "cuda/cuda_version.h"

namespace tailor::probe {

struct HostOs {
  std::string name;    ///< PRETTY_NAME from /etc/os-release
  std::string kernel;  ///< uname release
  std::string arch;    ///< x86_64 | aarch64
  std::string glibc;   ///< gnu_get_libc_version()
};

struct HostCpu {
  std::string model;
  std::string arch;
  int logical_cores = 0;
  int physical_cores = 0;
  /// The CPUs this process may really use: the lowest of logical_cores, its affinity mask
  /// (taskset, a batch scheduler's cpuset) and its cgroup's CPU quota (a container's
  /// --cpus), rounded up. 0 = not probed, which build_cores() reads as logical_cores.
  int usable_cores = 0;
  std::string
      cores_limited_by;  ///< "" (no limit), "affinity", "cgroup v2 cpu.max", "cgroup v1 cfs quota"
  /// What jobs are counted against.
  int build_cores() const { return usable_cores > 0 ? usable_cores : logical_cores; }
  std::string isa_level;              ///< "x86-64-v3", "armv8.2-a", "armv9-a"
  std::vector<std::string> features;  ///< the features the level was decided from
  /// Where the features came from: "cpuid", "hwcap" (getauxval) or "/proc/cpuinfo".
  std::string features_source;
  // aarch64 only:
  std::string midr;                ///< "0x41:0xd0c" (implementer:part) of the first core
  std::vector<std::string> cores;  ///< core names, one per kind ("Cortex-X925", "Cortex-A725")
  std::string neoverse_class;  ///< "N1", "V1", "V2": the Neoverse core whose ISA this CPU covers
  std::string seen_in;         ///< machines that carry the first core ("AWS Graviton2 ...")
};

struct HostMemory {
  uint64_t total = 0;
  uint64_t available = 0;     ///< MemAvailable
  uint64_t cgroup_limit = 0;  ///< 0 = no limit
  uint64_t cgroup_usage = 0;
  uint64_t usable = 0;  ///< min(available, cgroup_limit - cgroup_usage)
  uint64_t swap_total = 0;
  uint64_t swap_free = 0;
  std::string limited_by;  ///< "MemAvailable" | "cgroup v2" | "cgroup v1"
};

struct HostDisk {
  std::string path;
  uint64_t free_bytes = 0;
  uint64_t total_bytes = 0;
};

struct HostGpu {
  int index = 0;
  std::string name;
  /// Parsed once, here in probe; unknown (old drivers print [N/A]) when absent.
  std::optional<cuda::ComputeCapability> compute_capability;
  uint64_t memory_bytes = 0;
  std::string uuid;
};

struct GpuDriver {
  std::string version;  ///< "580.95.05"
  /// The highest CUDA the driver supports, parsed once here; unknown when not reported.
  std::optional<cuda::CudaVersion> cuda_version;
  std::string source;  ///< "nvml" | "nvidia-smi"
};

struct CudaToolkit {
  std::string root;
  std::string nvcc;
  std::string version;                 ///< "13.0.88"
  cuda::CudaVersion release;           ///< 13.0, parsed from version; 0.0 when nvcc did not answer
  std::string cudnn_version;           ///< "9.13.0", empty when not found
  std::string nccl_version;            ///< "2.27.7", empty when not found
  std::optional<int> max_gcc_major;    ///< newest GCC it takes, from include/crt/host_config.h
  std::optional<int> max_clang_major;  ///< newest clang it takes
  std::vector<std::string> accepted_host_compilers;  ///< paths of compilers this nvcc takes
};

/// Read once, from the compiler's `--version`; layers above never compare the kind as text.
enum class CompilerKind { gcc, clang, other };

/// "gcc", "clang", "other": the kind as `detect` prints it and its JSON names it.
std::string_view compiler_kind_name(CompilerKind kind);

struct Compiler {
  std::string path;
  CompilerKind kind = CompilerKind::other;
  std::string version;
  int major = 0;
};

struct TorchInstall {
  std::string version;  ///< "2.11.0+cu130"
  /// torch.version.cuda, read once by the probe; nullopt for a CPU build.
  std::optional<cuda::CudaVersion> cuda_version;
  std::vector<std::string> arch_list;  ///< "sm_75", "sm_90", "compute_90" ...
  std::optional<bool> cxx11_abi;
  std::string path;  ///< torch/__init__.py directory
};

struct PythonInstall {
  std::string path;
  std::string version;  ///< "3.11.2"
  std::optional<TorchInstall> torch;
  std::string torch_error;  ///< why torch is absent or failed to import
};

struct Tool {
  std::string name;
  std::string path;
  std::string version;
  bool jobserver_client = false;  ///< ninja >= 1.13 takes part in a make jobserver
};

struct HostReport {
  HostOs os;
  HostCpu cpu;
  HostMemory memory;
  HostDisk disk;
  std::vector<HostGpu> gpus;
  std::optional<GpuDriver> driver;
  std::vector<CudaToolkit> cuda_toolkits;
  std::vector<Compiler> compilers;
  std::vector<PythonInstall> pythons;
  std::vector<Tool> tools;
  std::vector<std::string> notes;  ///< what could not be found, and why
};

}  // namespace tailor::probe
