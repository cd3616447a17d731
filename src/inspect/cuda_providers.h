// CUDA libraries a wheel may need at run time and who provides them
// (data/manylinux/cuda_libraries.toml): the nvidia-* wheel and the apt package, so that
// `inspect` can say "libcudart.so.13: CUDA runtime, from nvidia-cuda-runtime or
// cuda-cudart-13-*" instead of "not found".
#pragma once
#include <string>
#include <vector>

namespace tailor::inspect {

struct CudaProvider {
  std::string soname;  // "libcudart.so.13"
  std::string cuda;    // "13": the CUDA major of this provider family
  std::string wheel;   // "nvidia-cuda-runtime"
  std::string system;  // "cuda-cudart-13-*"
  std::string what;    // "CUDA runtime"
};

class CudaProviders {
public:
  static const CudaProviders& get();
  /// Every provider of this soname (several when CUDA 12 and 13 share it).
  std::vector<const CudaProvider*> lookup(const std::string& soname) const;
  /// libcuda.so.1 and friends: installed with the driver, never from a wheel.
  bool is_driver_library(const std::string& soname) const;

private:
  CudaProviders() = default;
  std::vector<CudaProvider> m_rows;
  std::vector<std::string> m_driver;
};

}  // namespace tailor::inspect
