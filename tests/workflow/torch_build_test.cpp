// The pure parts of `tailor build torch`: the runtime packages behind a wheel's DT_NEEDED
// (the aarch64 list) and the runtime Dockerfile.
#include "workflow/torch_build.h"

#include <gtest/gtest.h>

#include "plan/torch_plan.h"

namespace tailor::workflow {
namespace {

TEST(TorchRuntimePackages, Aarch64List) {
  // What an aarch64 torch 2.9.1+cu126 libtorch_cuda.so / libtorch_cpu.so list as DT_NEEDED
  // (CUDA linked from the system), plus libraries that need no package.
  std::vector<std::string> needed = {"libcudart.so.12",   "libcublas.so.12",    "libcublasLt.so.12",
                                     "libcufft.so.11",    "libcurand.so.10",    "libcusparse.so.12",
                                     "libcusolver.so.11", "libnvJitLink.so.12", "libcudnn.so.9",
                                     "libnccl.so.2",      "libopenblas.so.0",   "libcufile.so.0",
                                     "libcupti.so.12",    "libc.so.6",          "libstdc++.so.6"};
  auto pkgs = runtime_packages_for(needed, cuda::CudaVersion{12, 6});
  EXPECT_EQ(pkgs,
            (std::vector<std::string>{"cuda-cudart-12-6", "libcublas-12-6", "libcufft-12-6",
                                      "libcurand-12-6", "libcusparse-12-6", "libcusolver-12-6",
                                      "libnvjitlink-12-6", "libcudnn9-cuda-12", "libnccl2",
                                      "libopenblas0", "libcufile-12-6", "cuda-cupti-12-6"}));
  EXPECT_TRUE(runtime_packages_for({"libc.so.6"}, cuda::CudaVersion{12, 6}).empty());
  EXPECT_EQ(runtime_packages_for({"libcudart.so.13"}, cuda::CudaVersion{13, 0}),
            (std::vector<std::string>{"cuda-cudart-13-0"}));
  // A CPU build needs no CUDA package; a library without {M} still maps.
  EXPECT_EQ(runtime_packages_for({"libcudart.so.13", "libopenblas.so.0"}, std::nullopt),
            (std::vector<std::string>{"libopenblas0"}));
}

TEST(TorchRuntimeDockerfile, Aarch64UsesTheSbsaRepositoryAndTheBuildGlibc) {
  plan::TorchPlan p;
  p.cuda = true;
  p.cuda_version = cuda::CudaVersion{12, 6};
  p.platform = "aarch64";
  p.python_version = "3.10";
  p.manylinux = "2_35";
  std::string wheel = "torch-2.9.1+cu126-cp310-cp310-manylinux_2_35_aarch64.whl";
  std::string d = render_runtime_dockerfile(p, wheel, {"cuda-cudart-12-6", "libcublas-12-6"});
  EXPECT_NE(d.find("FROM ubuntu:22.04"), std::string::npos) << d;
  EXPECT_NE(d.find("cuda/repos/ubuntu2204/sbsa/cuda-keyring_1.1-1_all.deb"), std::string::npos)
      << d;
  EXPECT_NE(d.find("apt-get install -y --no-install-recommends cuda-cudart-12-6 libcublas-12-6"),
            std::string::npos);
  EXPECT_NE(d.find("COPY " + wheel), std::string::npos);
  EXPECT_EQ(d.find("software-properties-common"), std::string::npos);  // 3.10 is 22.04's own
}

}  // namespace
}  // namespace tailor::workflow
