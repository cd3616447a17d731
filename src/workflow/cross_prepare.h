// `tailor build --platform NAME`: the target a cross build reads instead of the host's,
// prepared once per platform, Python and torch in tailor's cache (user_cache_dir("cross")):
//  - sysroot/    Debian's packages of the platform (the target Python's headers, sysconfig
//                data and interpreter, and the libraries it loads), fetched with a private
//                apt state and unpacked, never installed;
//  - include/, sysconfig/   the headers with the platform's pyconfig.h, and the sysconfig
//                data with its include folder pointing there;
//  - build-site/ the index's torch wheel for the platform and its CUDA runtime (pip
//                install --target with the platform's tags), cuda-lib/ their linker names;
//  - run-site/   torch's other requirements, for the import test under qemu-user.
// Each part is made in a temporary folder and renamed when whole, under a lock on the
// target's folder, so an interrupted or concurrent build never sees half of one.
#pragma once
#include <functional>
#include <string>

#include "cuda/cuda_version.h"
#include "plan/cross_target.h"
#include "util/expected.h"
#include "util/process.h"

namespace tailor::workflow {

struct CrossRequest {
  const plan::CrossPlatform* platform = nullptr;
  std::string python;          ///< the host interpreter that runs pip (the build's)
  std::string python_version;  ///< its major.minor: the target interpreter's
  std::string torch_version;   ///< the host torch's public version: the target's ("2.11.0")
  cuda::CudaVersion nvcc;      ///< the toolkit's release: the target torch's CUDA major must match
  std::string cache_root;      ///< empty: user_cache_dir("cross")
  bool for_import_test = false;                 ///< also run-site/ and the interpreter's libraries
  std::function<void(const std::string&)> say;  ///< progress lines
};

/// Where the target of `request` is kept (nothing fetched: --print-env shows these).
plan::CrossTarget cross_target_paths(const CrossRequest& request);

/// The prepared target, or one error line (what failed and what to install or check).
Expected<plan::CrossTarget> prepare_cross_target(const CrossRequest& request,
                                                 CommandRunner& runner);

/// qemu-user for the platform on PATH ("" when absent).
std::string find_qemu(const plan::CrossPlatform& platform);

/// The CUDA release a torch's version.py names (`cuda = '13.0'`), from its text.
std::optional<cuda::CudaVersion> torch_cuda_from_version_py(std::string_view text);

/// The target torch's CUDA release from its version.py, or one line: a CPU build, or a CUDA
/// major other than nvcc's (the extension's device code and torch's runtime must agree).
Expected<cuda::CudaVersion> target_torch_cuda(std::string_view version_py,
                                              const std::string& torch_version,
                                              const std::string& platform, cuda::CudaVersion nvcc);

/// The target's sysconfig data with its include folders pointed at `include_dir`.
std::string rewrite_sysconfigdata(std::string_view text, const std::string& python_version,
                                  const std::string& include_dir);

/// The requirement of torch's METADATA that brings the CUDA runtime ("cuda-toolkit[cudart,
/// ...]==13.0.2", or nvidia-cuda-runtime-cu12==...), without its marker; "" when none.
std::string cuda_runtime_requirement(std::string_view metadata);

/// torch's requirements for Linux without extras, markers dropped: what the import test
/// installs beside it.
std::vector<std::string> runtime_requirements(std::string_view metadata);

}  // namespace tailor::workflow
