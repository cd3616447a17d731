#include <gtest/gtest.h>

#include "probe/cuda_toolkit_probe.h"
#include "probe/probe.h"
#include "support/fake_host.h"
#include "support/host_reports.h"
#include "util/process.h"

namespace tailor::probe {
namespace {

const char* k_nvcc_13 =
    "nvcc: NVIDIA (R) Cuda compiler driver\n"
    "Copyright (c) 2005-2025 NVIDIA Corporation\n"
    "Built on Wed_Aug_20_01:58:59_PM_PDT_2025\n"
    "Cuda compilation tools, release 13.0, V13.0.88\n"
    "Build cuda_13.0.r13.0/compiler.36424714_0\n";

TEST(NvccVersion, Parses) {
  EXPECT_EQ(parse_nvcc_version(k_nvcc_13), "13.0.88");
  EXPECT_EQ(parse_nvcc_version("Cuda compilation tools, release 12.8, V12.8.93\n"), "12.8.93");
  EXPECT_FALSE(parse_nvcc_version("bash: nvcc: command not found"));
}

// The real nvcc of this machine, when there is one: its banner must parse.
TEST(NvccVersion, RealNvccParses) {
  auto r = run_command({"nvcc", "--version"});
  if (!r.ok()) GTEST_SKIP() << "no nvcc on PATH";
  auto v = parse_nvcc_version(r.out);
  ASSERT_TRUE(v) << r.out;
  EXPECT_NE(v->find('.'), std::string::npos);
}

const char* k_cudnn_header =
    "/* cudnn_version.h */\n#ifndef CUDNN_VERSION_H_\n#define CUDNN_VERSION_H_\n"
    "#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 13\n#define CUDNN_PATCHLEVEL 0\n"
    "#define CUDNN_VERSION (CUDNN_MAJOR * 10000 + CUDNN_MINOR * 100 + CUDNN_PATCHLEVEL)\n#endif\n";

TEST(CudnnHeader, Parses) {
  EXPECT_EQ(parse_cudnn_version(k_cudnn_header), "9.13.0");
  EXPECT_FALSE(parse_cudnn_version("#define CUDNN_VERSION 9\n"));
}

TEST(NcclHeader, Parses) {
  EXPECT_EQ(parse_nccl_version("#define NCCL_MAJOR 2\n#define NCCL_MINOR 27\n#define NCCL_PATCH "
                               "7\n#define NCCL_SUFFIX \"\"\n"),
            "2.27.7");
  EXPECT_FALSE(parse_nccl_version("#define NCCL_H_\n"));
}

const char* k_host_config =
    "#if defined(__GNUC__)\n"
    "#if __GNUC__ > 15\n"
    "#error -- unsupported GNU version! gcc versions later than 15 are not supported!\n"
    "#endif /* __GNUC__ > 15 */\n"
    "#if (__GRCO_CLANG_COMPILER__ == 1) && ((__clang_major__ < 16) || (__clang_major__ > 20))\n"
    "#error -- unsupported Grace clang version!\n"
    "#endif\n"
    "#if (__clang_major__ >= 21) || (__clang_major__ < 3) || ((__clang_major__ == 3) &&  "
    "(__clang_minor__ < 3))\n"
    "#error -- unsupported clang version!\n"
    "#endif\n"
    "#endif /* __GNUC__ */\n";

TEST(HostConfig, MaxGccAndClang) {
  EXPECT_EQ(parse_host_config_max_gcc(k_host_config), 15);
  EXPECT_EQ(parse_host_config_max_clang(k_host_config), 20);
  EXPECT_EQ(parse_host_config_max_gcc("#if __GNUC__ >= 13\n#error\n#endif\n"), 12);
  EXPECT_FALSE(parse_host_config_max_gcc("nothing"));
}

test::FakeHostFiles toolkit_host() {
  test::FakeHostFiles f;
  f.env["PATH"] = "/usr/local/cuda/bin:/usr/bin";
  f.env["HOME"] = "/root";
  f.executables = {"/usr/local/cuda-13.0/bin/nvcc", "/usr/local/cuda-12.8/bin/nvcc",
                   "/usr/bin/gcc-12", "/usr/bin/gcc-16"};
  f.links["/usr/local/cuda/bin/nvcc"] = "/usr/local/cuda-13.0/bin/nvcc";
  f.files["/usr/local/cuda-13.0/include/crt/host_config.h"] = k_host_config;
  f.files["/usr/local/cuda-13.0/include/cudnn_version.h"] = k_cudnn_header;
  f.files["/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/nvidia/nccl/include/nccl.h"] =
      "#define NCCL_MAJOR 2\n#define NCCL_MINOR 27\n#define NCCL_PATCH 3\n";
  return f;
}

// The one rule of whether nvcc takes a host compiler (the probe's list, an extension's
// preflight and a torch plan's choice of g++ all ask it): a compiler's major against the
// toolkit's limit for its kind; unknown without a limit for the kind or a major.
TEST(ToolkitAcceptsCompiler, ByTheLimitOfTheCompilersKind) {
  CudaToolkit tk = tailor::test::cuda_toolkit(13, 0);
  tk.max_gcc_major = 15;
  tk.max_clang_major = 20;
  const Compiler gcc15{"/usr/bin/g++-15", CompilerKind::gcc, "15.1.0", 15};
  const Compiler gcc16{"/usr/bin/g++-16", CompilerKind::gcc, "16.1.0", 16};
  const Compiler clang21{"/usr/bin/clang++-21", CompilerKind::clang, "21.1.0", 21};
  const Compiler clang20{"/usr/bin/clang++-20", CompilerKind::clang, "20.1.8", 20};
  EXPECT_EQ(toolkit_accepts_compiler(tk, gcc15), true);
  EXPECT_EQ(toolkit_accepts_compiler(tk, gcc16), false);
  EXPECT_EQ(toolkit_accepts_compiler(tk, clang20), true);
  EXPECT_EQ(toolkit_accepts_compiler(tk, clang21), false);  // the clang limit, not GCC's
  EXPECT_EQ(toolkit_accepts_compiler(tk, {"/usr/bin/icpx", CompilerKind::other, "2025.0", 2025}),
            std::nullopt);
  EXPECT_EQ(toolkit_accepts_compiler(tk, {"/usr/bin/g++", CompilerKind::gcc, "", 0}), std::nullopt);
  EXPECT_EQ(host_compiler_max_major(tk, CompilerKind::clang), 20);
  tk.max_clang_major.reset();
  EXPECT_EQ(toolkit_accepts_compiler(tk, clang21), std::nullopt);
  EXPECT_EQ(host_compiler_max_major(tk, CompilerKind::clang), std::nullopt);
  EXPECT_EQ(accepted_host_compilers(tk, {gcc15, gcc16, clang20}),
            std::vector<std::string>{"/usr/bin/g++-15"});
}

TEST(FindCudaToolkits, DeduplicatesByRealpathAndReadsVersions) {
  auto f = toolkit_host();
  test::FakeCommandRunner runner;
  runner.answer("/usr/local/cuda-13.0/bin/nvcc", k_nvcc_13);
  runner.answer("/usr/local/cuda-12.8/bin/nvcc",
                "Cuda compilation tools, release 12.8, V12.8.93\n");
  std::vector<Compiler> compilers = {{"/usr/bin/gcc-12", CompilerKind::gcc, "12.2.0", 12},
                                     {"/usr/bin/gcc-16", CompilerKind::gcc, "16.1.0", 16}};
  auto tks = find_cuda_toolkits(f, runner, compilers);
  ASSERT_EQ(tks.size(), 2u);
  const auto& t13 = tks[0];
  EXPECT_EQ(t13.root, "/usr/local/cuda-13.0");
  EXPECT_EQ(t13.version, "13.0.88");
  EXPECT_EQ(t13.release, (cuda::CudaVersion{13, 0}));
  EXPECT_EQ(t13.cudnn_version, "9.13.0");
  EXPECT_EQ(t13.nccl_version, "2.27.3");  // from the nvidia-nccl pip wheel
  EXPECT_EQ(t13.max_gcc_major, 15);
  EXPECT_EQ(t13.accepted_host_compilers, std::vector<std::string>{"/usr/bin/gcc-12"});
  EXPECT_EQ(tks[1].version, "12.8.93");
  EXPECT_FALSE(tks[1].max_gcc_major);
  EXPECT_TRUE(tks[1].accepted_host_compilers.empty());
}

TEST(FindCudaToolkits, CudaHomeFirst) {
  auto f = toolkit_host();
  f.env["CUDA_HOME"] = "/usr/local/cuda-12.8";
  test::FakeCommandRunner runner;
  auto tks = find_cuda_toolkits(f, runner, {});
  ASSERT_EQ(tks.size(), 2u);
  EXPECT_EQ(tks[0].root, "/usr/local/cuda-12.8");
}

TEST(FindCudaToolkits, NvccThatCannotRunIsStillListedWithoutVersion) {
  auto f = toolkit_host();
  test::FakeCommandRunner runner;  // nothing answers
  auto tks = find_cuda_toolkits(f, runner, {});
  ASSERT_EQ(tks.size(), 2u);
  EXPECT_EQ(tks[0].version, "");
}

TEST(FindCudaToolkits, NoneIsEmpty) {
  test::FakeHostFiles f;
  f.env["PATH"] = "/usr/bin";
  test::FakeCommandRunner runner;
  EXPECT_TRUE(find_cuda_toolkits(f, runner, {}).empty());
}

}  // namespace
}  // namespace tailor::probe
