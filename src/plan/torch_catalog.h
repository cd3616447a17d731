// What tailor knows about building PyTorch itself, loaded from data/pytorch/*.toml:
// releases with their Python/CUDA support and build-requirement pins, feature switches,
// CPU targets, host-compiler limits of each nvcc, base images by glibc, the distribution
// packages behind each CUDA library, and the coefficients of the estimates.
// Each data file has exactly one loader here; everything else asks torch_catalog().
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "cuda/cuda_version.h"
#include "util/expected.h"
#include "util/version.h"

namespace tailor::plan {

struct TorchRelease {
  std::string version;                   ///< "2.9.1"
  std::string tag;                       ///< "v2.9.1"
  std::vector<std::string> pythons;      ///< "3.10" ...
  std::vector<cuda::CudaVersion> cudas;  ///< 12.6 ..., as the data lists them
  int min_gcc = 0;
  std::vector<std::string> requirements;  ///< pip requirement strings with pins
  std::string build;                      ///< key of build_commands: setup_py | pip_wheel
  std::string checked_against;
};

struct FeatureSwitch {
  std::string name;               ///< "flash-attention"
  std::vector<std::string> vars;  ///< "USE_FLASH_ATTENTION"
  bool default_x86_64 = false;
  bool default_aarch64 = false;
  bool needs_cuda = false;
  std::vector<std::string> platforms;
  /// platform -> what to say when this default leaves the feature off there (off_note_<platform>)
  std::map<std::string, std::string> off_notes;
  bool default_on(std::string_view platform) const;
  bool builds_on(std::string_view platform) const;
};

struct CpuTarget {
  std::string name;  ///< canonical: "x86-64-v4"
  std::vector<std::string> aliases;
  std::string platform;  ///< x86_64 | aarch64
  std::string label;     ///< for variant names: "avx512"
  std::vector<std::string> flags;
  std::string isa_note;  ///< extra flag recording the ISA in the output; may be empty
  int level = 0;
  std::vector<std::string> requires_features;  ///< aarch64: HWCAP names a CPU needs to run it
  std::string neoverse;                        ///< aarch64: the Neoverse class it tunes for
};

struct NvccHostLimit {
  cuda::CudaVersion cuda;
  int max_gcc = 0;
};

/// TORCH_NVCC_FLAGS for each compression choice (data/pytorch/toolchain.toml [fatbin]).
struct FatbinFlags {
  cuda::CudaVersion compress_mode_since;  ///< first CUDA whose nvcc has -compress-mode
  std::string default_since_13;
  std::map<std::string, std::string> flags;  ///< "size", "legacy_size", ...
};

struct DistroImage {
  std::string name;  ///< "ubuntu22.04"
  std::string glibc;
  std::string cpu_image, cuda_image, runtime_image;
  std::string package_manager;  ///< apt | dnf
  std::string nvidia_repo;      ///< "ubuntu2204"
  std::string default_python;   ///< "3.10"
};

struct RuntimeLibrary {
  std::string soname;  ///< prefix: "libcublas.so"
  std::string apt;     ///< "libcublas-{M}-{m}"
};

struct EstimateCoefficients {
  double gib_per_job_cuda = 4, gib_per_job_flash_attention = 4.5, gib_per_job_cpu = 2.5,
         reserve_gib = 4;
  std::string jobs_source;
  double disk_base_gib = 30, disk_per_target_gib = 6, disk_cpu_only_gib = 20;
  std::string disk_source;
  double first_sass_mib = 185, per_extra_sass_mib = 175, per_ptx_mib = 65, cpu_only_mib = 180;
  double device_factor_size = 0.3, device_factor_none = 1.6;
  std::string size_source;
  double cuda_first_target_core_hours = 48, per_extra_target_core_hours = 10.7,
         cpu_only_core_hours = 24;
  std::string time_source;
};

struct TorchCatalog {
  std::vector<std::string> checked_against;
  std::vector<TorchRelease> releases;
  std::map<std::string, std::vector<std::string>> build_commands;
  std::string source_url;
  std::vector<FeatureSwitch> features;
  std::vector<CpuTarget> cpu_targets;
  std::vector<NvccHostLimit> nvcc_limits;
  FatbinFlags fatbin;
  std::vector<DistroImage> distros;                    ///< ascending glibc
  std::map<cuda::CudaVersion, std::string> cuda_full;  ///< 12.6 -> "12.6.3"
  std::map<std::string, std::string> repo_arch;        ///< "aarch64" -> "sbsa"
  std::vector<RuntimeLibrary> runtime_libraries;
  EstimateCoefficients estimates;

  const TorchRelease* find_release(std::string_view version) const;
  const FeatureSwitch* find_feature(std::string_view name) const;
  /// By canonical name or alias, case-insensitive.
  const CpuTarget* find_cpu_target(std::string_view name) const;
  /// The newest GCC major this CUDA's nvcc accepts; 0 when unknown.
  int max_gcc_for(const cuda::CudaVersion& cuda) const;
  /// The distro with exactly this glibc ("2.35"), or the newest one not above it.
  const DistroImage* distro_for_glibc(std::string_view glibc) const;
};

/// The catalog embedded in the binary. Loaded once; a broken data file is a bug in tailor
/// (caught by the tests) and throws data::DataError naming the file and key.
const TorchCatalog& torch_catalog();

// ---- one loader per data file (tests feed them text) --------------------------------
Expected<void> load_versions(std::string_view text, TorchCatalog& into);     // versions.toml
Expected<void> load_features(std::string_view text, TorchCatalog& into);     // features.toml
Expected<void> load_cpu_targets(std::string_view text, TorchCatalog& into);  // cpu_targets.toml
Expected<void> load_toolchain(std::string_view text, TorchCatalog& into);    // toolchain.toml
Expected<void> load_images(std::string_view text, TorchCatalog& into);       // images.toml
Expected<void> load_runtime_packages(std::string_view text,
                                     TorchCatalog& into);                  // runtime_packages.toml
Expected<void> load_estimates(std::string_view text, TorchCatalog& into);  // estimates.toml

/// "2.9" < "2.10": the one dotted comparison of util/version.h.
using tailor::compare_versions;

}  // namespace tailor::plan
