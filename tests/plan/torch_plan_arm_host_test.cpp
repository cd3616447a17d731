// `tailor plan torch` on an Arm host, with the host as the probe sees it: the CPU from a
// recorded /proc/cpuinfo (tests/probe/data/cpuinfo) and the GPU as the driver names it.
// No --arch and no --platform: the machine itself decides.
#include <gtest/gtest.h>

#include <algorithm>

#include "plan/torch_plan.h"
#include "probe/probe.h"
#include "support/fake_host.h"
#include "support/fixtures.h"
#include "support/host_reports.h"

namespace tailor::plan {
namespace {

probe::HostCpu recorded_cpu(const std::string& name) {
  tailor::test::FakeHostFiles f;
  f.arch = "aarch64";
  f.files["/proc/cpuinfo"] = tailor::test::slurp_text(std::string(TAILOR_SOURCE_DIR) +
                                                      "/tests/probe/data/cpuinfo/" + name);
  EXPECT_FALSE(f.files["/proc/cpuinfo"].empty()) << name;
  return probe::probe_cpu(f);
}

/// An AWS g5g: Graviton2 and one T4G (CC 7.5), CUDA 12.6, Python 3.10 (the build
/// machine's toolchain of testing::graviton_t4g_host()).
probe::HostReport g5g_host() {
  probe::HostReport h = testing::graviton_t4g_host();
  h.cpu = recorded_cpu("graviton2_t4g_small");
  probe::HostGpu g;
  g.name = "NVIDIA T4G";
  g.compute_capability = cuda::ComputeCapability{7, 5};
  g.memory_bytes = 16 * testing::k_gib;
  h.gpus.push_back(g);
  return h;
}

TorchVariant plain_variant() {
  TorchVariant v;
  v.torch = "2.9.1";
  v.cuda = cuda::CudaVersion{12, 6};
  v.python = "3.10";
  return v;
}

bool has_problem(const TorchPlan& p, const std::string& field) {
  return std::any_of(p.problems.begin(), p.problems.end(),
                     [&](const auto& pr) { return pr.field == field; });
}

TEST(TorchPlanArmHost, T4gGraviton2WithoutFlagsBuildsForThisMachine) {
  TorchPlan p = resolve_torch_plan(plain_variant(), g5g_host());
  for (const auto& pr : p.problems) ADD_FAILURE() << pr.field << ": " << pr.message;
  EXPECT_EQ(p.host_platform, "aarch64");
  EXPECT_EQ(p.platform, "aarch64");
  const auto& e = p.env;
  EXPECT_EQ(e.at("TORCH_CUDA_ARCH_LIST"), "7.5");
  EXPECT_EQ(e.at("CMAKE_CUDA_ARCHITECTURES"), "75-real");
  EXPECT_EQ(p.cpu_target, "neoverse-n1");
  EXPECT_EQ(e.at("CFLAGS"), "-g0 -mcpu=neoverse-n1");
  EXPECT_EQ(e.at("CXXFLAGS"), "-g0 -mcpu=neoverse-n1");
  EXPECT_EQ(e.at("USE_FBGEMM"), "0");
  EXPECT_EQ(e.at("USE_MKLDNN"), "0");
  EXPECT_EQ(e.at("USE_PRIORITIZED_TEXT_FOR_LD"), "1");
  EXPECT_EQ(e.at("CUDA_HOME"), "/usr/local/cuda-12.6");
  EXPECT_EQ(p.wheel_name, "torch-2.9.1+cu126-cp310-cp310-manylinux_2_35_aarch64.whl");
  bool said = std::any_of(p.notes.begin(), p.notes.end(), [](const std::string& n) {
    return n.find("CPU target neoverse-n1 implied by") != std::string::npos &&
           n.find("T4G") != std::string::npos;
  });
  EXPECT_TRUE(said) << "no note says where the CPU target came from";
}

TEST(TorchPlanArmHost, ATooNewCpuTargetWarnsOnGraviton2) {
  TorchVariant v = plain_variant();
  v.arch = {"7.5"};  // a bare CC implies no CPU
  v.cpu_target = "neoverse-v1";
  TorchPlan p = resolve_torch_plan(v, g5g_host());
  ASSERT_FALSE(p.has_errors());
  auto it = std::find_if(p.problems.begin(), p.problems.end(), [](const auto& pr) {
    return pr.field == "cpu_target" && pr.kind == ProblemKind::host;
  });
  ASSERT_NE(it, p.problems.end());
  EXPECT_NE(it->message.find("Neoverse-N1"), std::string::npos) << it->message;
  EXPECT_NE(it->message.find("sve"), std::string::npos) << it->message;
  EXPECT_NE(it->message.find("bf16"), std::string::npos) << it->message;
}

TEST(TorchPlanArmHost, TheHostsOwnClassRunsWithoutAWarning) {
  TorchVariant v = plain_variant();
  v.arch = {"9.0"};
  v.cpu_target = "neoverse-v2";
  probe::HostReport h = g5g_host();
  h.cpu = recorded_cpu("graviton4");
  EXPECT_FALSE(has_problem(resolve_torch_plan(v, h), "cpu_target"));
  h.cpu = recorded_cpu("grace_gh200");
  EXPECT_FALSE(has_problem(resolve_torch_plan(v, h), "cpu_target"));
  h.cpu = recorded_cpu("gb10_dgx_spark");
  EXPECT_FALSE(has_problem(resolve_torch_plan(v, h), "cpu_target"));
  h.cpu = recorded_cpu("graviton3");
  EXPECT_TRUE(has_problem(resolve_torch_plan(v, h), "cpu_target"));  // V1 lacks sve2
  v.cpu_target = "neoverse-v1";
  EXPECT_FALSE(has_problem(resolve_torch_plan(v, h), "cpu_target"));
}

TEST(TorchPlanArmHost, WithoutAnImpliedTargetTheNoteNamesTheHostsClass) {
  TorchVariant v = plain_variant();
  v.arch = {"9.0"};
  probe::HostReport h = g5g_host();
  h.gpus.clear();
  h.cpu = recorded_cpu("graviton3");
  TorchPlan p = resolve_torch_plan(v, h);
  EXPECT_EQ(p.cpu_target, "");  // the compiler's default: nothing is chosen behind the user's back
  bool said = std::any_of(p.notes.begin(), p.notes.end(), [](const std::string& n) {
    return n.find("--cpu-target neoverse-v1") != std::string::npos;
  });
  EXPECT_TRUE(said);
}

TEST(TorchPlanArmHost, AnExplicitPlatformKeepsTheHostGpusFromImplyingOne) {
  TorchVariant v = plain_variant();
  v.platform = "x86_64";
  TorchPlan p = resolve_torch_plan(v, g5g_host());
  EXPECT_EQ(p.platform, "x86_64");
  for (const auto& pr : p.problems)
    EXPECT_EQ(pr.message.find("conflicts"), std::string::npos) << pr.message;
  EXPECT_EQ(p.cpu_target, "");
}

}  // namespace
}  // namespace tailor::plan
