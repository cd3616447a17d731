// The TORCH_CUDA_ARCH_LIST of official PyTorch wheels per CUDA version and platform
// (data/cuda/torch_wheels.toml), for tests and for "is this GPU on the official list"; the
// index those wheels are on.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "cuda/cuda_version.h"

namespace tailor::cuda {

struct OfficialArchList {
  CudaVersion cuda;      ///< 13.0
  std::string platform;  ///< "x86_64", "aarch64"
  std::string torch_cuda_arch_list;
  std::string note;
};

const std::vector<OfficialArchList>& official_torch_arch_lists();

/// The PyTorch wheel index of a CUDA version ("https://download.pytorch.org/whl/cu130"), or
/// its CPU index for none.
std::string pytorch_index_url(const std::optional<CudaVersion>& cuda);

}  // namespace tailor::cuda
