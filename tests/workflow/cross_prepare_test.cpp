// The pure parts of a cross target's preparation: torch's CUDA release from its version.py,
// the target's sysconfig data pointed at tailor's copy of its headers, and what torch's
// METADATA (the index's torch 2.11.0 for aarch64, as published) asks for its CUDA runtime
// and its import.
#include "workflow/cross_prepare.h"

#include <gtest/gtest.h>

namespace tailor::workflow {
namespace {

// torch-2.11.0-cp311-cp311-manylinux_2_28_aarch64.whl's METADATA, its Requires-Dist lines.
constexpr const char* k_torch_metadata =
    "Metadata-Version: 2.4\n"
    "Name: torch\n"
    "Version: 2.11.0\n"
    "Requires-Dist: filelock\n"
    "Requires-Dist: typing-extensions>=4.10.0\n"
    "Requires-Dist: setuptools<82\n"
    "Requires-Dist: sympy>=1.13.3\n"
    "Requires-Dist: cuda-toolkit[cublas,cudart,cufft,cufile,cupti,curand,cusolver,cusparse,"
    "nvjitlink,nvrtc,nvtx]==13.0.2; platform_system == \"Linux\"\n"
    "Requires-Dist: nvidia-cudnn-cu13==9.19.0.56; platform_system == \"Linux\"\n"
    "Requires-Dist: triton==3.6.0; platform_system == \"Linux\"\n"
    "Requires-Dist: optree>=0.13.0; extra == \"optree\"\n"
    "Requires-Dist: pywin32; platform_system == \"Windows\"\n"
    "\n"
    "Requires-Dist: not-a-header-line-after-the-body\n";

TEST(CrossPrepare, TorchCudaFromVersionPy) {
  auto v = torch_cuda_from_version_py(
      "__version__ = '2.11.0+cu130'\ndebug = False\ncuda: Optional[str] = '13.0'\n"
      "git_version = 'abc'\n");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->to_string(), "13.0");
  EXPECT_EQ(torch_cuda_from_version_py("cuda = \"12.8\"\n")->to_string(), "12.8");
  // A CPU build: cuda is None.
  EXPECT_FALSE(torch_cuda_from_version_py("__version__ = '2.11.0+cpu'\ncuda = None\n"));
  EXPECT_FALSE(torch_cuda_from_version_py(""));
}

TEST(CrossPrepare, TheTargetTorchsCudaMajorMustBeNvccs) {
  const cuda::CudaVersion nvcc13{13, 0};
  auto ok = target_torch_cuda("cuda = '13.0'\n", "2.11.0", "aarch64", nvcc13);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->to_string(), "13.0");
  auto other = target_torch_cuda("cuda = '12.8'\n", "2.9.1", "aarch64", nvcc13);
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().message,
            "torch 2.9.1 for aarch64 is built with CUDA 12.8, nvcc here is 13.0: their CUDA "
            "majors must match (use the nvcc of CUDA 12, or a torch built with CUDA 13)");
  auto cpu = target_torch_cuda("cuda = None\n", "2.11.0", "aarch64", nvcc13);
  ASSERT_FALSE(cpu);
  EXPECT_NE(cpu.error().message.find("is a CPU build"), std::string::npos);
}

TEST(CrossPrepare, SysconfigDataPointsAtTheTargetHeaders) {
  std::string text =
      "build_time_vars = {'INCLUDEPY': '/usr/include/python3.11',\n"
      " 'CONFINCLUDEPY': '/usr/include/python3.11',\n"
      " 'INCLUDEDIR': '/usr/include',\n"
      " 'EXT_SUFFIX': '.cpython-311-aarch64-linux-gnu.so',\n"
      " 'OTHER': '/usr/include/python3.11/internal'}\n";
  std::string out = rewrite_sysconfigdata(text, "3.11", "/cache/x/include/python3.11");
  EXPECT_NE(out.find("'INCLUDEPY': '/cache/x/include/python3.11'"), std::string::npos);
  EXPECT_NE(out.find("'CONFINCLUDEPY': '/cache/x/include/python3.11'"), std::string::npos);
  // Only the exact folder moves; the rest of the data stays as the target built it.
  EXPECT_NE(out.find("'INCLUDEDIR': '/usr/include'"), std::string::npos);
  EXPECT_NE(out.find("'/usr/include/python3.11/internal'"), std::string::npos);
  EXPECT_NE(out.find("'EXT_SUFFIX': '.cpython-311-aarch64-linux-gnu.so'"), std::string::npos);
}

TEST(CrossPrepare, CudaRuntimeRequirementOfTorch) {
  EXPECT_EQ(cuda_runtime_requirement(k_torch_metadata), "cuda-toolkit[cudart]==13.0.2");
  // torch of the CUDA 12 series names the runtime wheel itself.
  EXPECT_EQ(cuda_runtime_requirement(
                "Requires-Dist: nvidia-cuda-runtime-cu12==12.8.90; platform_system == \"Linux\"\n"),
            "nvidia-cuda-runtime-cu12==12.8.90");
  EXPECT_EQ(cuda_runtime_requirement("Requires-Dist: filelock\n"), "");
}

TEST(CrossPrepare, RuntimeRequirementsForTheImportTest) {
  auto reqs = runtime_requirements(k_torch_metadata);
  EXPECT_EQ(reqs, (std::vector<std::string>{
                      "filelock", "typing-extensions>=4.10.0", "setuptools<82", "sympy>=1.13.3",
                      "cuda-toolkit[cublas,cudart,cufft,cufile,cupti,curand,cusolver,cusparse,"
                      "nvjitlink,nvrtc,nvtx]==13.0.2",
                      "nvidia-cudnn-cu13==9.19.0.56", "triton==3.6.0"}));
}

}  // namespace
}  // namespace tailor::workflow
