#include "workflow/extension_build.h"

#include <gtest/gtest.h>

#include "support/fake_host.h"

using namespace tailor;
using namespace tailor::executor;
using namespace tailor::workflow;

namespace {

/// Nothing can run: nvcc capabilities then come from the table for the toolkit's version.
using NothingRuns = test::FakeCommandRunner;

probe::HostReport host_with_gpus(std::vector<std::string> ccs) {
  probe::HostReport h;
  int i = 0;
  for (auto& cc : ccs) h.gpus.push_back({i++, "GPU " + cc, *cuda::parse_compute_capability(cc), 0, ""});
  return h;
}

}  // namespace

TEST(ResolveTargets, ArchWins) {
  std::string why;
  auto t = resolve_targets(std::string("8.0;9.0"), std::nullopt, host_with_gpus({"7.5"}), why);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->names(), (std::vector<std::string>{"sm_80", "sm_90"}));
  EXPECT_EQ(why, "--arch 8.0;9.0");
}

TEST(ResolveTargets, GpuNamesBecomeSass) {
  std::string why;
  auto t = resolve_targets(std::nullopt, std::string("T4G"), host_with_gpus({}), why);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->names(), std::vector<std::string>{"sm_75"});
}

TEST(ResolveTargets, DetectedGpusWithoutFlags) {
  std::string why;
  auto t = resolve_targets(std::nullopt, std::nullopt, host_with_gpus({"9.0", "8.6", "9.0"}), why);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->names(), (std::vector<std::string>{"sm_86", "sm_90"}));
  EXPECT_NE(why.find("GPU 0: GPU 9.0 (9.0)"), std::string::npos);
}

TEST(ResolveTargets, NoGpuNoTargetIsAnErrorNeverAllArchitectures) {
  std::string why;
  auto t = resolve_targets(std::nullopt, std::nullopt, host_with_gpus({}), why);
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().message,
            "no GPU found and no target given; name one with --arch (e.g. --arch 8.6) or --gpu (e.g. --gpu A10G)");
}

TEST(ResolveTargets, BadSpellingIsAnError) {
  std::string why;
  EXPECT_FALSE(resolve_targets(std::string("sm_9x9"), std::nullopt, host_with_gpus({}), why));
  EXPECT_FALSE(resolve_targets(std::nullopt, std::string("NoSuchGPU 9000"), host_with_gpus({}), why));
}

TEST(PreflightFactsFromProbe, ToolkitTorchAndCompiler) {
  probe::HostReport h;
  probe::CudaToolkit tk;
  tk.root = "/usr/local/cuda-12.6";
  tk.nvcc = "/usr/local/cuda-12.6/bin/nvcc";
  tk.version = "12.6.85";
  tk.release = {12, 6};
  tk.max_gcc_major = 11;
  h.cuda_toolkits.push_back(tk);
  h.compilers.push_back({"/fake/bin/g++-12", probe::CompilerKind::gcc, "12.2.0", 12});
  probe::PythonInstall py;
  py.path = "/usr/bin/python3";
  py.version = "3.11.7";
  py.torch = probe::TorchInstall{"2.11.0+cu130", "13.0", {}, true, ""};
  cuda::TargetSet set;
  set.add(cuda::sass(cuda::ComputeCapability{6, 0}));
  set.add(cuda::sass(cuda::ComputeCapability{9, 0}));
  NothingRuns runner;
  PreflightFacts f = preflight_facts(h, &py, &h.cuda_toolkits[0], set, "/tmp", runner);
  EXPECT_EQ(f.nvcc_major, 12);
  EXPECT_EQ(f.torch_cuda_version, "13.0");
  EXPECT_EQ(f.host_compiler_accepted, false);
  EXPECT_EQ(f.host_compiler_limit, "gcc <= 11");
  ASSERT_TRUE(f.disk_free_bytes);
  // Both problems at once: CUDA 12 vs torch's CUDA 13, and gcc 12 for an nvcc taking <= 11.
  auto report = run_preflight(f);
  std::vector<std::string> bad;
  for (auto* p : report.problems()) bad.push_back(p->name);
  EXPECT_NE(std::find(bad.begin(), bad.end(), "cuda-match"), bad.end());
  EXPECT_NE(std::find(bad.begin(), bad.end(), "host-compiler"), bad.end());
}

TEST(PreflightFactsFromProbe, Cuda13CannotTargetSm60) {
  probe::HostReport h;
  probe::CudaToolkit tk;
  tk.nvcc = "/usr/local/cuda-13.0/bin/nvcc";
  tk.version = "13.0.88";
  tk.release = {13, 0};
  h.cuda_toolkits.push_back(tk);
  cuda::TargetSet set;
  set.add(cuda::sass(cuda::ComputeCapability{6, 0}));
  NothingRuns runner;
  PreflightFacts f = preflight_facts(h, nullptr, &h.cuda_toolkits[0], set, "/tmp", runner);
  ASSERT_EQ(f.unsupported_targets.size(), 1u);
  EXPECT_NE(f.unsupported_targets[0].find("sm_60"), std::string::npos);
}

TEST(ResolveTargets, DetectedGpuWithoutAComputeCapabilityIsAnError) {
  probe::HostReport h;
  h.gpus.push_back({0, "Tesla T4", std::nullopt, 0, ""});
  std::string why;
  auto t = resolve_targets(std::nullopt, std::nullopt, h, why);
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().message, "GPU 0 (Tesla T4) reports no compute capability; name the target with --arch");
}
