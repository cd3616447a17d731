// Cross builds in the plan: the platform's facts from data/cross/platforms.toml, and the
// variables that steer a package's own build to the target (the cross compilers wrapped
// by the compiler cache like the host's, the target's sysconfig data, torch and CUDA
// runtime, CMake's toolchain file, nvcc's header folder).
#include "plan/cross_target.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "plan/extension_plan.h"
#include "support/host_reports.h"

namespace tailor::plan {
namespace {

CrossTarget aarch64_target() {
  CrossTarget t;
  t.platform = cross_platform("aarch64");
  t.root = "/cache/cross/aarch64-py3.11-torch2.11.0";
  t.python_version = "3.11";
  t.torch_version = "2.11.0";
  t.torch_cuda = "13.0";
  t.sysconfig_dir = t.root + "/sysconfig";
  t.include_dir = t.root + "/include/python3.11";
  t.torch_dir = t.root + "/build-site/torch";
  t.cuda_lib_dir = t.root + "/cuda-lib";
  return t;
}

TEST(CrossPlatforms, Aarch64FromTheData) {
  const CrossPlatform* p = cross_platform("aarch64");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->debian_arch, "arm64");
  EXPECT_EQ(p->cxx, "aarch64-linux-gnu-g++");
  EXPECT_EQ(p->elf_machine, 183);
  EXPECT_EQ(p->python_platform, "linux-aarch64");
  EXPECT_EQ(p->sysconfigdata, "_sysconfigdata__linux_aarch64-linux-gnu");
  // The index's CUDA wheels for aarch64 carry manylinux_2_18 .. 2_28 tags: all are taken.
  ASSERT_FALSE(p->wheel_platforms.empty());
  EXPECT_EQ(p->wheel_platforms.front(), "manylinux_2_17_aarch64");
  for (const char* tag : {"manylinux_2_18_aarch64", "manylinux_2_28_aarch64",
                          "manylinux_2_39_aarch64", "manylinux2014_aarch64", "linux_aarch64"})
    EXPECT_NE(std::find(p->wheel_platforms.begin(), p->wheel_platforms.end(), tag),
              p->wheel_platforms.end())
        << tag;
  for (const auto& pkg : p->python_packages) EXPECT_NE(pkg.find("{py}"), std::string::npos);
  EXPECT_NE(p->install.find("g++-aarch64-linux-gnu"), std::string::npos);
  EXPECT_EQ(cross_platform("riscv64"), nullptr);
  EXPECT_EQ(cross_platform_names(), std::vector<std::string>{"aarch64"});
}

TEST(CrossPlatforms, TheEnvironmentSteersTheBuildToTheTarget) {
  auto env = cross_environment(aarch64_target());
  EXPECT_EQ(env["CC"], "aarch64-linux-gnu-gcc");
  EXPECT_EQ(env["CXX"], "aarch64-linux-gnu-g++");
  EXPECT_EQ(env["LDSHARED"], "aarch64-linux-gnu-g++ -shared");
  EXPECT_EQ(env["_PYTHON_HOST_PLATFORM"], "linux-aarch64");
  EXPECT_EQ(env["_PYTHON_SYSCONFIGDATA_NAME"], "_sysconfigdata__linux_aarch64-linux-gnu");
  EXPECT_EQ(env["PYTHONPATH"], "/cache/cross/aarch64-py3.11-torch2.11.0/sysconfig");
  EXPECT_EQ(env["TAILOR_CROSS_TORCH"], "/cache/cross/aarch64-py3.11-torch2.11.0/build-site/torch");
  EXPECT_EQ(env["TAILOR_CROSS_CUDA_LIB"], "/cache/cross/aarch64-py3.11-torch2.11.0/cuda-lib");
  EXPECT_EQ(env["NVCC_APPEND_FLAGS"], "-target-dir x86_64-linux");
}

TEST(CrossPlatforms, CMakeToolchainFileNamesTheTarget) {
  std::string text = cmake_toolchain_file(aarch64_target(), "/usr/local/cuda/bin/nvcc");
  for (const char* line :
       {"set(CMAKE_SYSTEM_PROCESSOR aarch64)", "set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)",
        "set(CMAKE_CUDA_HOST_COMPILER aarch64-linux-gnu-g++)",
        "set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)",
        "set(Torch_DIR /cache/cross/aarch64-py3.11-torch2.11.0/build-site/torch/share/cmake/Torch)",
        "set(Python3_INCLUDE_DIR /cache/cross/aarch64-py3.11-torch2.11.0/include/python3.11)"})
    EXPECT_NE(text.find(line), std::string::npos) << line;
}

TEST(CrossPlatforms, TheExtensionPlanCrossCompiles) {
  probe::HostReport host;
  host.cpu.logical_cores = 2;
  host.memory.usable = host.memory.available = 16ull << 30;
  host.cuda_toolkits.push_back(test::cuda_toolkit(13, 0, 88));
  host.pythons.push_back(test::python_with_torch("13.0", "/venv/bin/python", "3.11.2"));
  host.tools.push_back({"ccache", "/usr/bin/ccache", "4.7.5", false});
  ExtensionBuildRequest r;
  r.package_name = "fused-ops";
  r.source_dir = "/work/pkg/src";
  r.targets.add(cuda::sass(cuda::ComputeCapability{9, 0}));
  r.python = "/venv/bin/python";
  r.out_dir = "/out";
  // The caller's CC/CXX are the host's: a cross build does not take them.
  r.environment = {{"CC", "gcc-12"}, {"CXX", "g++-12"}};
  r.cross = aarch64_target();
  auto plan = resolve_extension_build(r, host);
  ASSERT_TRUE(plan) << plan.error().message;
  // ccache wraps the cross compilers (the wrappers are named after them).
  ASSERT_EQ(plan->cached_compilers.size(), 2u);
  EXPECT_EQ(plan->cached_compilers[0].compiler, "aarch64-linux-gnu-gcc");
  EXPECT_EQ(plan->cached_compilers[1].compiler, "aarch64-linux-gnu-g++");
  EXPECT_EQ(plan->env.count("CC"), 0u);
  EXPECT_EQ(plan->env.count("CXX"), 0u);
  EXPECT_EQ(plan->env.at("_PYTHON_HOST_PLATFORM"), "linux-aarch64");
  EXPECT_EQ(plan->env.at("LDSHARED"), "aarch64-linux-gnu-g++ -shared");
  EXPECT_EQ(plan->env.at("CMAKE_TOOLCHAIN_FILE"), "/work/pkg/tailor-cross-toolchain.cmake");
  bool toolchain_written = false;
  for (const auto& f : plan->helper_files)
    toolchain_written = toolchain_written || f.path == "/work/pkg/tailor-cross-toolchain.cmake";
  EXPECT_TRUE(toolchain_written);
  // Without a cache the cross compilers are CC and CXX themselves.
  r.cache = cache::CacheTool::none;
  auto plain = resolve_extension_build(r, host);
  ASSERT_TRUE(plain);
  EXPECT_TRUE(plain->cached_compilers.empty());
  EXPECT_EQ(plain->env.at("CC"), "aarch64-linux-gnu-gcc");
  EXPECT_EQ(plain->env.at("CXX"), "aarch64-linux-gnu-g++");
}

}  // namespace
}  // namespace tailor::plan
