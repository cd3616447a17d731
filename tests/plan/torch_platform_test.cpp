// A GPU or instance that exists on one platform implies it: g5g.xlarge and T4G mean an
// aarch64 wheel (Graviton2, Neoverse N1) whatever host plans it; an explicit platform
// that contradicts them is an input error (exit 2).
#include "plan/torch_platform.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "cuda/gpu_catalog.h"
#include "plan/torch_catalog.h"
#include "plan/torch_plan.h"
#include "support/host_reports.h"

namespace tailor::plan {
namespace {

TorchVariant on_gpu(const std::string& gpu) {
  TorchVariant v;
  v.torch = "2.9.1";
  v.cuda = cuda::CudaVersion{12, 8};
  v.python = "3.13";
  v.arch = {gpu};
  return v;
}

bool has_note(const TorchPlan& p, const std::string& text) {
  return std::find(p.notes.begin(), p.notes.end(), text) != p.notes.end();
}

TEST(TorchPlatform, InstanceAndGpuImplyAarch64OnAnX86Host) {
  for (const char* gpu : {"g5g.xlarge", "T4G", "t4g", "g5g.16xlarge"}) {
    TorchPlan p = resolve_torch_plan(on_gpu(gpu), testing::x86_cuda128_host());  // x86_64 host
    EXPECT_FALSE(p.has_errors()) << gpu;
    EXPECT_EQ(p.platform, "aarch64") << gpu;
    EXPECT_EQ(p.wheel_name, "torch-2.9.1+cu128-cp313-cp313-manylinux_2_35_aarch64.whl") << gpu;
    EXPECT_TRUE(has_note(p, std::string("platform aarch64 implied by ") + gpu)) << gpu;
    EXPECT_EQ(p.cpu_target, "neoverse-n1") << gpu;
    EXPECT_EQ(p.env.at("CFLAGS"), "-g0 -mcpu=neoverse-n1") << gpu;
    EXPECT_EQ(p.env.at("TORCH_CUDA_ARCH_LIST"), "7.5") << gpu;
  }
}

TEST(TorchPlatform, ConflictingExplicitPlatformIsAnInputError) {
  TorchVariant v = on_gpu("g5g.xlarge");
  v.platform = "x86_64";
  TorchPlan p = resolve_torch_plan(v, testing::x86_cuda128_host());
  EXPECT_EQ(p.exit_code(), 2);
  auto it = std::find_if(p.problems.begin(), p.problems.end(),
                         [](const PlanProblem& q) { return q.field == "platform"; });
  ASSERT_NE(it, p.problems.end());
  EXPECT_EQ(it->message, "platform x86_64 conflicts with g5g.xlarge, which exists only on aarch64");
  // The same platform, spelled otherwise, is no conflict.
  v.platform = "arm64";
  EXPECT_FALSE(resolve_torch_plan(v, testing::x86_cuda128_host()).has_errors());
}

TEST(TorchPlatform, GpusOfTwoPlatformsConflict) {
  TorchVariant v = on_gpu("T4G");
  v.arch.push_back("g4dn.xlarge");
  TorchPlan p = resolve_torch_plan(v, testing::x86_cuda128_host());
  EXPECT_EQ(p.exit_code(), 2);
  auto implied = implied_platform({"T4G;g4dn.xlarge"});
  ASSERT_FALSE(implied);
  EXPECT_NE(implied.error().message.find(
                "T4G (GPU T4G) exists only on aarch64, g4dn.xlarge (instance g4dn) only on x86_64"),
            std::string::npos)
      << implied.error().message;
}

TEST(TorchPlatform, PortableGpusAndNumbersImplyNothing) {
  for (const char* spec : {"8.0", "sm_90a", "8.0+PTX", "H100", "A10G;L4", "Hopper",
                           "-gencode arch=compute_90,code=sm_90"}) {
    auto implied = implied_platform({spec});
    ASSERT_TRUE(implied) << spec << ": " << implied.error().message;
    EXPECT_FALSE(*implied) << spec << " implied " << (*implied)->platform;
  }
  TorchPlan p = resolve_torch_plan(on_gpu("H100"), testing::graviton_t4g_host());  // aarch64 host
  EXPECT_EQ(p.platform, "aarch64");
  EXPECT_TRUE(p.cpu_target.empty());
}

TEST(TorchPlatform, ExplicitCpuTargetWinsWithAWarningWhenTooNew) {
  TorchVariant v = on_gpu("g5g.xlarge");
  v.cpu_target = "neoverse-v2";
  TorchPlan p = resolve_torch_plan(v, testing::x86_cuda128_host());
  EXPECT_FALSE(p.has_errors());
  EXPECT_EQ(p.cpu_target, "neoverse-v2");
  auto it = std::find_if(p.problems.begin(), p.problems.end(),
                         [](const PlanProblem& q) { return q.field == "cpu_target"; });
  ASSERT_NE(it, p.problems.end());
  EXPECT_EQ(it->severity, ProblemSeverity::warning);
  EXPECT_NE(it->message.find("neoverse-n1"), std::string::npos) << it->message;
}

TEST(TorchPlatform, GraceGpusImplyNeoverseV2AndX86InstancesX86) {
  auto gh = implied_platform({"GH200"});
  ASSERT_TRUE(gh && *gh);
  EXPECT_EQ((*gh)->platform, "aarch64");
  EXPECT_EQ((*gh)->cpu_target, "neoverse-v2");
  auto p5 = implied_platform({"p5.48xlarge"});
  ASSERT_TRUE(p5 && *p5);
  EXPECT_EQ((*p5)->platform, "x86_64");
  EXPECT_EQ((*p5)->cpu_target, "");
  // T4G and GH200: both aarch64, different CPUs: the platform stands, the CPU does not.
  auto both = implied_platform({"T4G", "GH200"});
  ASSERT_TRUE(both && *both);
  EXPECT_EQ((*both)->platform, "aarch64");
  EXPECT_EQ((*both)->cpu_target, "");
  EXPECT_EQ((*both)->source, "T4G, GH200");
}

TEST(TorchPlatform, VariantPlatform) {
  auto conflict = variant_platform(std::string("x86_64"), {"T4G"});
  ASSERT_FALSE(conflict);
  EXPECT_EQ(conflict.error().message,
            "platform x86_64 conflicts with T4G, which exists only on aarch64");
  auto implied = variant_platform(std::nullopt, {"g5g.xlarge"});
  ASSERT_TRUE(implied && *implied);
  EXPECT_EQ(**implied, "aarch64");
  auto none = variant_platform(std::nullopt, {"8.6"});
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
}

// The facts: every instance has a host; every CPU named by a GPU or instance is a CPU
// target of data/pytorch/cpu_targets.toml on that platform.
TEST(TorchPlatform, DataNamesKnownCpuTargets) {
  const TorchCatalog* cat = &torch_catalog();
  size_t named = 0;
  auto check = [&](const std::string& who, const std::string& host, const std::string& cpu) {
    if (cpu.empty()) return;
    ++named;
    const CpuTarget* t = cat->find_cpu_target(cpu);
    ASSERT_NE(t, nullptr) << who << ": cpu_target " << cpu;
    EXPECT_EQ(t->platform, host) << who;
  };
  for (const auto& i : cuda::cloud_instances()) {
    EXPECT_TRUE(i.host_arch == "x86_64" || i.host_arch == "aarch64") << i.family;
    check(i.family, i.host_arch, i.cpu_target);
  }
  for (const auto& g : cuda::gpu_catalog()) check(g.name, g.host_arch, g.cpu_target);
  EXPECT_GE(named, 5u);
}

}  // namespace
}  // namespace tailor::plan
