// Which fatbin entries a machine needs: for each kept device, the entries the CUDA driver
// would load (native SASS, else the best compatible SASS of the same major, else PTX to
// JIT), plus PTX when asked. A container that has nothing runnable on a kept device keeps
// no entry (it is emptied to its header, elf_slim.h); one with an entry this tool does not
// understand is kept whole and reported, never guessed at.
#pragma once
#include <string>
#include <vector>

#include "cuda/fatbin_code.h"
#include "cuda/target_set.h"
#include "formats/fatbin.h"

namespace tailor::slim {

enum class PtxPolicy {
  needed,  ///< keep PTX only where no SASS runs on a kept device (the default)
  keep,    ///< also keep the best PTX for each kept device (JIT on future GPUs)
  drop,    ///< never keep PTX, even when it is the only code for a kept device
};

/// LTO IR entries (kind 8, `lto_<arch>`) are never loaded by the driver: a library hands
/// them to nvJitLink itself. cuFFT 11.2 (nvidia-cufft-cu12 11.2.3.61) keeps 10,046 of them,
/// 88 MiB, all `lto_50` (one arch: LTO IR links forward to any later GPU, so no entry is
/// "for another GPU"), each alone in its own container in `.data`, beside the SASS and PTX
/// containers; its RUNPATH names `$ORIGIN/../../nvjitlink/lib` and the wheel depends on
/// nvidia-nvjitlink: it links that IR at run time, for its JIT LTO kernels and for user LTO
/// callbacks. Which transforms need it is cuFFT's own choice, not visible in the file, so
/// the IR is kept by default; dropping it is the user's explicit decision (--drop-lto).
enum class LtoPolicy {
  keep,  ///< keep every LTO IR entry (the default)
  drop,  ///< remove them (a container holding nothing else is emptied to its header)
};

struct KeepPolicy {
  std::vector<cuda::ComputeCapability> devices;  ///< the GPUs the result must run on
  std::vector<cuda::CudaTarget> ptx_asked;       ///< compute_XY named in --keep: kept where present
  PtxPolicy ptx = PtxPolicy::needed;
  LtoPolicy lto = LtoPolicy::keep;
  std::string describe() const;  ///< "sm_90 (9.0), PTX where needed"
};

/// Builds the policy from a `tailor arch` spelling set: every CC it names is a device,
/// and its PTX targets are kept where a container has them.
KeepPolicy keep_policy_for(const cuda::TargetSet& targets, PtxPolicy ptx);

/// Why a kept entry's target is there under `policy`: the kept GPUs it runs on and how,
/// "runs on 8.6", "runs on 8.9 as compatible SASS", "runs on 10.0 through PTX JIT" (joined
/// by "; "), else "named in --keep" (a PTX target asked for by name).
std::string why_kept(const cuda::CudaTarget& target, const KeepPolicy& policy);

struct ContainerChoice {
  std::vector<bool> keep;  ///< one per entry
  bool whole = false;      ///< kept as it was: an entry this tool does not read (see note)
  /// Nothing in the container ran on a kept device even before (its kernels serve other
  /// GPUs, e.g. a library's sm_100-only kernels, or it held only LTO IR that is dropped): no
  /// entry is kept and the container is emptied to its header (magic, version, header
  /// size, payload size 0). The CUDA runtime registers such a container and answers a
  /// launch of its kernels with "no kernel image for this device" (cudaErrorNoKernelImage-
  /// ForDevice; cuModuleLoadData: CUDA_ERROR_NO_BINARY_FOR_GPU), as it did for the
  /// original on these GPUs (checked on an H200, CUDA 13 driver, eager and lazy loading).
  bool no_code_for_kept = false;
  bool ptx_only = false;  ///< some kept device runs this container only through PTX JIT
  bool lto_kept = false;  ///< LTO IR entries were kept (LtoPolicy::keep)
  std::string note;       ///< why it was kept whole, which device needed PTX, or which had no code
};

/// The entries of one container to keep under `policy`: none when nothing in it runs on a
/// kept device (no_code_for_kept), and no LTO IR or PTX asked for by name is kept either.
/// LTO IR entries are kept or dropped by `policy.lto` alone; they take no part in choosing
/// the SASS and PTX (the driver never loads them), and are no reason to keep a container
/// whole. The same rules hold for .nv_fatbin and for containers embedded in other sections.
ContainerChoice choose_entries(const formats::FatbinContainer& container, const KeepPolicy& policy);

/// Whether a device code file of its own (a cubin, PTX text, a fatbin file: slim/
/// device_files.h) can ever be loaded on a kept GPU, whatever rule its package picks files
/// by (data/slim/device_file_packages.toml says how the known ones pick).
struct DeviceFileChoice {
  bool keep = true;
  std::string why;  ///< "runs on 7.5", "no kept GPU loads sm_90", "LTO IR: ..."
};

/// The driver's rule, as for a library's fatbin entries (cuda::run_mode): a file stays when
/// any of its codes runs on a kept GPU (SASS of the same major and a minor at or below the
/// GPU's, `a` only on its own CC, `f` across its family; PTX JIT on any GPU at or above its
/// target) or is PTX named in --keep. A fatbin file stays whole when any entry does. What
/// the driver cannot tell (LTO IR, which a package links itself; an entry kind or arch this
/// tool does not read; a file with no entry) keeps the file. The PTX policy does not apply:
/// the package, not the driver, chooses between a file's SASS and another file's PTX.
/// Checked on an H200 (9.0, driver 580.159.04, cuModuleLoad): sm_75, sm_86, sm_100 cubins and
/// an sm_100 fatbin file are refused (CUDA_ERROR_NO_BINARY_FOR_GPU), compute_100 PTX too
/// (CUDA_ERROR_INVALID_PTX); sm_90, sm_90a, compute_80 and compute_90 PTX and an sm_80 +
/// compute_80 fatbin file load and run: this rule keeps exactly those.
DeviceFileChoice choose_device_file(const std::vector<cuda::FatbinCode>& codes,
                                    const KeepPolicy& policy);

}  // namespace tailor::slim
