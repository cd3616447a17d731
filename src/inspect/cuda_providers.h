// Who provides the libraries a wheel may need at run time without bundling them:
// CUDA libraries (data/manylinux/cuda_libraries.toml: the nvidia-* wheel and the apt
// package per soname major), so that `inspect` can say "libcudart.so.13: CUDA runtime,
// from nvidia-cuda-runtime or cuda-cudart-13-*" instead of "not found"; and the
// libraries that come with torch (data/manylinux/torch_libraries.toml); and the runtimes of
// other GPU platforms (data/manylinux/other_gpu_runtimes.toml: ROCm, oneAPI), which mark a
// library as that platform's backend.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace tailor::inspect {

struct CudaProvider {
  std::string soname;  // "libcudart.so.13": the stem and the major of this row
  std::string major;   // "13": the soname's first version number
  std::string cuda;    // "13": the CUDA major of this provider family
  std::string wheel;   // "nvidia-cuda-runtime" ("" when no PyPI wheel provides it)
  std::string system;  // "cuda-cudart-13-*"
  std::string what;    // "CUDA runtime"
};

/// A CUDA library family: every soname `<stem>[.<version>]` belongs to it.
struct CudaLibraryFamily {
  std::string stem;  // "libcudart.so"
  std::string what;  // "CUDA runtime"
  std::vector<CudaProvider> providers;
};

class CudaProviders {
 public:
  static const CudaProviders& get();
  struct Match {
    const CudaLibraryFamily* family = nullptr;
    std::string major;                           // "11" for libcudart.so.11.0; "" unversioned
    std::vector<const CudaProvider*> providers;  // rows of that major (empty: none known)
  };
  /// The family of a soname, whatever its version: libcudart.so.11.0, libcublasLt.so.12,
  /// libcutensor.so.2 ...; nullopt when it is no CUDA library.
  std::optional<Match> match(const std::string& soname) const;
  /// Every provider of this soname (several when CUDA families share it).
  std::vector<const CudaProvider*> lookup(const std::string& soname) const;
  /// libcuda.so.1 and friends: installed with the driver, never from a wheel.
  bool is_driver_library(const std::string& soname) const;

 private:
  CudaProviders() = default;
  std::vector<CudaLibraryFamily> m_families;  // sorted by stem
  std::vector<std::string> m_driver;
};

/// Splits "libcudart.so.11.0" into "libcudart.so" and "11.0"; nullopt when the name does
/// not end in ".so" or ".so.<digits and dots>".
std::optional<std::pair<std::string, std::string>> split_soname(const std::string& soname);

/// Libraries torch brings (torch/lib): an extension needs them from the installed torch.
class TorchLibraries {
 public:
  static const TorchLibraries& get();
  bool contains(const std::string& soname) const;
  const std::vector<std::string>& names() const { return m_names; }
  /// torch's C++ runtime ("libstdc++.so.6"): a library linking torch must need it too.
  const std::string& cxx_runtime() const { return m_cxx_runtime; }

 private:
  TorchLibraries() = default;
  std::vector<std::string> m_names;  // sorted
  std::string m_cxx_runtime;
};

/// Runtimes of GPU platforms other than CUDA (ROCm, oneAPI): a library that needs one is
/// that platform's backend, loaded only on its GPUs.
class OtherGpuRuntimes {
 public:
  static const OtherGpuRuntimes& get();
  /// The platform whose runtime this soname is ("ROCm" for libhipblas.so.2, whatever its
  /// version); nullopt for any other library.
  std::optional<std::string> platform_of(const std::string& soname) const;

 private:
  OtherGpuRuntimes() = default;
  std::vector<std::pair<std::string, std::string>> m_stems;  // (stem, platform), sorted by stem
};

}  // namespace tailor::inspect
