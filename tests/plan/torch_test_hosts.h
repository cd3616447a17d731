// Hand-built hosts for the plan tests: an aarch64 build machine (AWS m8g.8xlarge,
// aarch64, 32 cores, 128 GB, Ubuntu 22.04, CUDA 12.6 with cuDNN, GCC 11, Python 3.10)
// and an x86_64 host (Ubuntu 22.04, CUDA 12.8, GCC 11, Python 3.13).
#pragma once
#include "probe/host_report.h"

namespace tailor::plan::testing {

inline constexpr uint64_t k_gib = uint64_t{1} << 30;

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
  probe::CudaToolkit tk;
  tk.root = "/usr/local/cuda-12.6";
  tk.nvcc = "/usr/local/cuda-12.6/bin/nvcc";
  tk.version = "12.6.85";
  tk.release = {12, 6};
  tk.cudnn_version = "9.10.2";
  tk.max_gcc_major = 13;
  h.cuda_toolkits.push_back(tk);
  h.compilers.push_back({"/usr/bin/g++", probe::CompilerKind::gcc, "11.4.0", 11});
  h.pythons.push_back({"/usr/bin/python3.10", "3.10.12", std::nullopt, "No module named 'torch'"});
  return h;
}

inline probe::HostReport x86_cuda128_host() {
  probe::HostReport h;
  h.os = {"Ubuntu 22.04.5 LTS", "6.8.0", "x86_64", "2.35"};
  h.cpu.arch = "x86_64";
  h.cpu.logical_cores = 64;
  h.cpu.isa_level = "x86-64-v4";
  h.memory.usable = 250 * k_gib;
  h.memory.swap_total = 8 * k_gib;
  h.disk = {"/build", 500 * k_gib, 1000 * k_gib};
  probe::CudaToolkit tk;
  tk.root = "/usr/local/cuda-12.8";
  tk.nvcc = "/usr/local/cuda-12.8/bin/nvcc";
  tk.version = "12.8.93";
  tk.release = {12, 8};
  tk.cudnn_version = "9.8.0";
  h.cuda_toolkits.push_back(tk);
  h.compilers.push_back({"/usr/bin/g++", probe::CompilerKind::gcc, "11.4.0", 11});
  h.pythons.push_back({"/usr/bin/python3.13", "3.13.1", std::nullopt, ""});
  return h;
}

}  // namespace tailor::plan::testing
