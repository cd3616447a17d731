#include "workflow/extension_build.h"

#include <gtest/gtest.h>

#include "support/fake_host.h"
#include "support/host_reports.h"

using namespace tailor;
using namespace tailor::workflow;

namespace {

/// Nothing can run: nvcc capabilities then come from the table for the toolkit's version.
using NothingRuns = test::FakeCommandRunner;

probe::HostReport host_with_gpus(std::vector<std::string> ccs) {
  probe::HostReport h;
  int i = 0;
  for (auto& cc : ccs)
    h.gpus.push_back({i++, "GPU " + cc, *cuda::parse_compute_capability(cc), 0, ""});
  return h;
}

}  // namespace

// build's targets: cuda::resolve_target_request over the probed host (its rules and
// messages: tests/cuda/target_request_test.cpp).
TEST(ResolveTargets, ArchWins) {
  auto t = resolve_targets({"8.0;9.0"}, {}, host_with_gpus({"7.5"}));
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->targets.names(), (std::vector<std::string>{"sm_80", "sm_90"}));
  EXPECT_EQ(t->described, "--arch 8.0;9.0");
}

TEST(ResolveTargets, RepeatedFlagsAreOneUnion) {
  auto t = resolve_targets({"8.0", "9.0+PTX"}, {}, host_with_gpus({}));
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->targets.names(), (std::vector<std::string>{"sm_80", "sm_90", "compute_90"}));
  EXPECT_EQ(t->described, "--arch 8.0 --arch 9.0+PTX");
  auto g = resolve_targets({}, {"T4G", "H100"}, host_with_gpus({}));
  ASSERT_TRUE(g) << g.error().message;
  EXPECT_EQ(g->targets.names(), (std::vector<std::string>{"sm_75", "sm_90"}));
}

TEST(ResolveTargets, GpuNamesBecomeSass) {
  auto t = resolve_targets({}, {"T4G"}, host_with_gpus({}));
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->targets.names(), std::vector<std::string>{"sm_75"});
}

TEST(ResolveTargets, DetectedGpusWithoutFlags) {
  auto t = resolve_targets({}, {}, host_with_gpus({"9.0", "8.6", "9.0"}));
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->targets.names(), (std::vector<std::string>{"sm_86", "sm_90"}));
  EXPECT_NE(t->described.find("GPU 0: GPU 9.0 (9.0)"), std::string::npos);
}

TEST(ResolveTargets, NativeIsTheProbedHostsGpus) {
  auto t = resolve_targets({"native;8.0"}, {}, host_with_gpus({"8.6"}));
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->targets.names(), (std::vector<std::string>{"sm_80", "sm_86"}));
}

TEST(ResolveTargets, NoGpuNoTargetIsAnErrorNeverAllArchitectures) {
  auto t = resolve_targets({}, {}, host_with_gpus({}));
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().message,
            "no GPU found and no target given; name one with --arch (e.g. --arch 8.6) or --gpu "
            "(e.g. --gpu A10G)");
}

TEST(ResolveTargets, BadSpellingIsAnErrorNamingTheFlag) {
  auto a = resolve_targets({"sm_9x9"}, {}, host_with_gpus({}));
  ASSERT_FALSE(a);
  EXPECT_EQ(a.error().message.rfind("--arch: unknown CUDA target 'sm_9x9'", 0), 0u)
      << a.error().message;
  auto g = resolve_targets({}, {"NoSuchGPU 9000"}, host_with_gpus({}));
  ASSERT_FALSE(g);
  EXPECT_EQ(g.error().message.rfind("--gpu: ", 0), 0u) << g.error().message;
  auto both = resolve_targets({"8.0"}, {"T4G"}, host_with_gpus({}));
  ASSERT_FALSE(both);
  EXPECT_EQ(both.error().message, "use --arch or --gpu, not both");
}

TEST(PreflightFactsFromProbe, ToolkitTorchAndCompiler) {
  probe::HostReport h;
  probe::CudaToolkit tk = test::cuda_toolkit(12, 6, 85);
  tk.max_gcc_major = 11;
  h.cuda_toolkits.push_back(tk);
  h.compilers.push_back({"/fake/bin/g++-12", probe::CompilerKind::gcc, "12.2.0", 12});
  probe::PythonInstall py = test::python_with_torch("13.0", "/usr/bin/python3", "3.11.7");
  cuda::TargetSet set;
  set.add(cuda::sass(cuda::ComputeCapability{6, 0}));
  set.add(cuda::sass(cuda::ComputeCapability{9, 0}));
  NothingRuns runner;
  builder::PreflightFacts f = preflight_facts(h, &py, &h.cuda_toolkits[0], set, "/tmp", runner, {});
  EXPECT_EQ(f.nvcc_major, 12);
  EXPECT_EQ(f.torch_cuda, (cuda::CudaVersion{13, 0}));
  EXPECT_EQ(f.host_compiler_accepted, false);
  EXPECT_EQ(f.host_compiler_limit, "gcc <= 11");
  ASSERT_TRUE(f.disk_free_bytes);
  // Both problems at once: CUDA 12 vs torch's CUDA 13, and gcc 12 for an nvcc taking <= 11.
  auto report = builder::run_preflight(f);
  std::vector<std::string> bad;
  for (auto* p : report.problems()) bad.push_back(p->name);
  EXPECT_NE(std::find(bad.begin(), bad.end(), "cuda-match"), bad.end());
  EXPECT_NE(std::find(bad.begin(), bad.end(), "host-compiler"), bad.end());
}

TEST(PreflightFactsFromProbe, Cuda13CannotTargetSm60) {
  probe::HostReport h;
  h.cuda_toolkits.push_back(test::cuda_toolkit(13, 0, 88));
  cuda::TargetSet set;
  set.add(cuda::sass(cuda::ComputeCapability{6, 0}));
  NothingRuns runner;
  builder::PreflightFacts f =
      preflight_facts(h, nullptr, &h.cuda_toolkits[0], set, "/tmp", runner, {});
  ASSERT_EQ(f.unsupported_targets.size(), 1u);
  EXPECT_NE(f.unsupported_targets[0].find("sm_60"), std::string::npos);
}

TEST(ResolveTargets, DetectedGpuWithoutAComputeCapabilityIsAnError) {
  probe::HostReport h;
  h.gpus.push_back({0, "Tesla T4", std::nullopt, 0, ""});
  auto t = resolve_targets({}, {}, h);
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().message,
            "GPU 0 (Tesla T4) reports no compute capability; name the target with --arch or --gpu");
}
