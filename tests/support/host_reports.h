// Hand-built probe reports (probe::HostReport and its parts) for the tests that plan or
// build over a host without probing one: a CUDA toolkit, a Python with torch, and two whole
// build machines, an aarch64 one (AWS m8g.8xlarge, 32 cores, 128 GB, Ubuntu 22.04, CUDA
// 12.6 with cuDNN, GCC 11, Python 3.10) and an x86_64 one (Ubuntu 22.04, CUDA 12.8, GCC 11,
// Python 3.13). Header only (tests/support); the fakes the probe itself reads are in
// fake_host.h.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "probe/host_report.h"

namespace tailor::test {

inline constexpr uint64_t k_gib = uint64_t{1} << 30;

/// A CUDA toolkit as the probe reports it: /usr/local/cuda-MAJOR.MINOR, its bin/nvcc,
/// version "MAJOR.MINOR.PATCH", release MAJOR.MINOR; no cuDNN, NCCL or host-compiler limit
/// (a test sets those it needs).
inline probe::CudaToolkit cuda_toolkit(int major, int minor, int patch = 1) {
  probe::CudaToolkit tk;
  tk.root = "/usr/local/cuda-" + std::to_string(major) + "." + std::to_string(minor);
  tk.nvcc = tk.root + "/bin/nvcc";
  tk.version = std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
  tk.release = {major, minor};
  return tk;
}

/// A Python at `path` (version `version`) in which torch 2.11.0+cu130 imports, reporting
/// `torch_cuda` as its CUDA ("" for a CPU build) and the C++11 ABI.
inline probe::PythonInstall python_with_torch(std::string torch_cuda = "13.0",
                                              std::string path = "/venv/bin/python",
                                              std::string version = "3.11.7") {
  probe::PythonInstall py;
  py.path = std::move(path);
  py.version = std::move(version);
  std::optional<cuda::CudaVersion> cuda;
  if (!torch_cuda.empty()) cuda = *cuda::parse_cuda_version(torch_cuda);
  py.torch = probe::TorchInstall{"2.11.0+cu130", cuda, {}, true, ""};
  return py;
}

/// The aarch64 build machine: AWS m8g.8xlarge, CUDA 12.6 with cuDNN 9.10.2 and
/// GCC 13 as nvcc's newest host compiler, GCC 11, Python 3.10 without torch.
inline probe::HostReport graviton_t4g_host() {
  probe::HostReport h;
  h.os = {"Ubuntu 22.04.5 LTS", "6.8.0-1019-aws", "aarch64", "2.35"};
  h.cpu.arch = "aarch64";
  h.cpu.logical_cores = 32;
  h.cpu.physical_cores = 32;
  h.cpu.isa_level = "armv9-a";
  h.memory.total = 128 * k_gib;
  h.memory.available = 125 * k_gib;
  h.memory.usable = 125 * k_gib;
  h.memory.swap_total = 32 * k_gib;
  h.memory.limited_by = "MemAvailable";
  h.disk = {"/home/ubuntu", 140 * k_gib, 150 * k_gib};
  probe::CudaToolkit tk = cuda_toolkit(12, 6, 85);
  tk.cudnn_version = "9.10.2";
  tk.max_gcc_major = 13;
  h.cuda_toolkits.push_back(tk);
  h.compilers.push_back({"/usr/bin/g++", probe::CompilerKind::gcc, "11.4.0", 11});
  h.pythons.push_back({"/usr/bin/python3.10", "3.10.12", std::nullopt, "No module named 'torch'"});
  return h;
}

/// The x86_64 build machine: 64 cores, 250 GiB usable, CUDA 12.8 with cuDNN 9.8.0, GCC 11,
/// Python 3.13 without torch.
inline probe::HostReport x86_cuda128_host() {
  probe::HostReport h;
  h.os = {"Ubuntu 22.04.5 LTS", "6.8.0", "x86_64", "2.35"};
  h.cpu.arch = "x86_64";
  h.cpu.logical_cores = 64;
  h.cpu.isa_level = "x86-64-v4";
  h.memory.usable = 250 * k_gib;
  h.memory.swap_total = 8 * k_gib;
  h.disk = {"/build", 500 * k_gib, 1000 * k_gib};
  probe::CudaToolkit tk = cuda_toolkit(12, 8, 93);
  tk.cudnn_version = "9.8.0";
  h.cuda_toolkits.push_back(tk);
  h.compilers.push_back({"/usr/bin/g++", probe::CompilerKind::gcc, "11.4.0", 11});
  h.pythons.push_back({"/usr/bin/python3.13", "3.13.1", std::nullopt, ""});
  return h;
}

}  // namespace tailor::test

/// The plan tests' spelling (tailor::plan::testing::graviton_t4g_host()).
namespace tailor::plan::testing {
using tailor::test::graviton_t4g_host;
using tailor::test::k_gib;
using tailor::test::x86_cuda128_host;
}  // namespace tailor::plan::testing
