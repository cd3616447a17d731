#include <gtest/gtest.h>

#include "probe/probe.h"
#include "support/fake_host.h"

namespace tailor::probe {
namespace {

const char* k_smi_two_gpus =
    "0, NVIDIA H100 80GB HBM3, 9.0, 81559, GPU-8a1e7c52-0000-1111-2222-333344445555, 580.95.05\n"
    "1, NVIDIA H100 80GB HBM3, 9.0, 81559, GPU-9b2f8d63-0000-1111-2222-333344445555, 580.95.05\n";

TEST(NvidiaSmiCsv, ParsesRows) {
  auto r = parse_nvidia_smi_csv(k_smi_two_gpus);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->gpus.size(), 2u);
  EXPECT_EQ(r->gpus[0].index, 0);
  EXPECT_EQ(r->gpus[1].index, 1);
  EXPECT_EQ(r->gpus[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(r->gpus[0].compute_capability, (cuda::ComputeCapability{9, 0}));
  EXPECT_EQ(r->gpus[0].memory_bytes, 81559ull * 1024 * 1024);
  EXPECT_EQ(r->gpus[1].uuid, "GPU-9b2f8d63-0000-1111-2222-333344445555");
  ASSERT_TRUE(r->driver);
  EXPECT_EQ(r->driver->version, "580.95.05");
  EXPECT_EQ(r->driver->source, "nvidia-smi");
}

TEST(NvidiaSmiCsv, OldDriverWithoutComputeCap) {
  auto r = parse_nvidia_smi_csv("0, Tesla T4, [N/A], 15360, GPU-1, 470.82.01\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->gpus[0].compute_capability, std::nullopt);
}

TEST(NvidiaSmiCsv, WrongFieldCountIsAnErrorNamingTheLine) {
  auto r = parse_nvidia_smi_csv("0, NVIDIA H100, 9.0\n");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("line 1"), std::string::npos);
  EXPECT_FALSE(parse_nvidia_smi_csv("x, a, 9.0, 1, u, d\n"));
}

TEST(NvidiaSmiCsv, EmptyOutputIsNoGpu) {
  auto r = parse_nvidia_smi_csv("");
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->gpus.empty());
  EXPECT_FALSE(r->driver);
}

TEST(SmiBanner, CudaVersion) {
  EXPECT_EQ(parse_smi_cuda_version(
                "| NVIDIA-SMI 580.95.05    Driver Version: 580.95.05    CUDA Version: 13.0     |"),
            (cuda::CudaVersion{13, 0}));
  EXPECT_EQ(parse_smi_cuda_version("no banner"), std::nullopt);
  EXPECT_EQ(parse_smi_cuda_version("| CUDA Version: N/A |"), std::nullopt);
}

TEST(ProbeGpus, NvmlAnswerIsUsedAndNvidiaSmiNotRun) {
  test::FakeGpuQuery q;
  GpuQueryResult nvml;
  nvml.gpus.push_back({0, "NVIDIA H200", cuda::ComputeCapability{9, 0}, 150ull << 30, "GPU-x"});
  nvml.driver = GpuDriver{"580.95.05", cuda::CudaVersion{13, 0}, "nvml"};
  q.result = nvml;
  test::FakeCommandRunner runner;
  std::vector<std::string> notes;
  auto r = probe_gpus(q, runner, notes);
  ASSERT_EQ(r.gpus.size(), 1u);
  EXPECT_EQ(r.gpus[0].compute_capability, (cuda::ComputeCapability{9, 0}));
  EXPECT_TRUE(runner.calls.empty());
  EXPECT_TRUE(notes.empty());
}

TEST(ProbeGpus, FallsBackToNvidiaSmi) {
  test::FakeGpuQuery q;
  test::FakeCommandRunner runner;
  runner.by_command
      ["nvidia-smi --query-gpu=index,name,compute_cap,memory.total,uuid,driver_version "
       "--format=csv,noheader,nounits"] = {true, false, false, 0, k_smi_two_gpus, ""};
  runner.answer("nvidia-smi",
                "| NVIDIA-SMI 580.95.05  Driver Version: 580.95.05  CUDA Version: 13.0 |\n");
  std::vector<std::string> notes;
  auto r = probe_gpus(q, runner, notes);
  ASSERT_EQ(r.gpus.size(), 2u);
  ASSERT_TRUE(r.driver);
  EXPECT_EQ(r.driver->cuda_version, (cuda::CudaVersion{13, 0}));
  EXPECT_EQ(r.driver->source, "nvidia-smi");
}

TEST(ProbeGpus, NoDriverNoSmiIsNoGpuWithANote) {
  test::FakeGpuQuery q;
  test::FakeCommandRunner runner;
  std::vector<std::string> notes;
  auto r = probe_gpus(q, runner, notes);
  EXPECT_TRUE(r.gpus.empty());
  EXPECT_FALSE(r.driver);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].rfind("no GPU", 0), 0u) << notes[0];
}

TEST(ProbeGpus, NvidiaSmiFailingIsANote) {
  test::FakeGpuQuery q;
  test::FakeCommandRunner runner;
  runner.answer(
      "nvidia-smi",
      "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\nMore text\n",
      9);
  std::vector<std::string> notes;
  auto r = probe_gpus(q, runner, notes);
  EXPECT_TRUE(r.gpus.empty());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("couldn't communicate"), std::string::npos);
  EXPECT_EQ(notes[0].find("More text"), std::string::npos);
}

TEST(ProbeGpus, NvidiaSmiTimingOutIsANote) {
  test::FakeGpuQuery q;
  test::FakeCommandRunner runner;
  runner.time_out("nvidia-smi");
  std::vector<std::string> notes;
  auto r = probe_gpus(q, runner, notes);
  EXPECT_TRUE(r.gpus.empty());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("timed out"), std::string::npos);
}

// On a host without the NVIDIA driver the real NVML query must fail cleanly; with one,
// it must list devices that have names.
TEST(NvmlGpuQuery, RealQueryNeverCrashes) {
  NvmlGpuQuery q;
  auto r = q.query();
  if (r) {
    for (const auto& g : r->gpus) EXPECT_FALSE(g.name.empty());
  } else {
    EXPECT_FALSE(r.error().message.empty());
  }
}

}  // namespace
}  // namespace tailor::probe
