#include <gtest/gtest.h>

#include "probe/probe.h"
#include "support/fake_host.h"

namespace tailor::probe {
namespace {

/// A whole fake host: an x86 box in a container with a cgroup limit, CUDA 13.0, one
/// Python with torch, and no GPU.
struct FakeHost {
  test::FakeHostFiles files;
  test::FakeCommandRunner runner;
  test::FakeGpuQuery gpus;
  FakeHost() {
    files.env["PATH"] = "/usr/local/cuda/bin:/usr/bin";
    files.env["HOME"] = "/root";
    files.files["/etc/os-release"] =
        "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n";
    files.files["/proc/sys/kernel/osrelease"] = "6.1.0-18-amd64\n";
    files.files["/proc/cpuinfo"] =
        "processor\t: 0\nmodel name\t: Intel Xeon\nflags\t\t: pni ssse3 cx16 sse4_1 sse4_2 popcnt "
        "lahf_lm\n";
    files.files["/proc/meminfo"] =
        "MemTotal: 1048576 kB\nMemAvailable: 524288 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n";
    files.files["/proc/self/cgroup"] = "0::/\n";
    files.files["/sys/fs/cgroup/memory.max"] = "268435456\n";
    files.files["/sys/fs/cgroup/memory.current"] = "0\n";
    files.executables = {"/usr/local/cuda-13.0/bin/nvcc", "/usr/bin/gcc-12", "/usr/bin/python3.11",
                         "/usr/bin/ninja"};
    files.links["/usr/local/cuda/bin/nvcc"] = "/usr/local/cuda-13.0/bin/nvcc";
    files.links["/usr/bin/python3"] = "/usr/bin/python3.11";
    files.files["/usr/local/cuda-13.0/include/crt/host_config.h"] =
        "#if __GNUC__ > 15\n#error\n#endif\n";
    runner.answer("/usr/local/cuda-13.0/bin/nvcc",
                  "Cuda compilation tools, release 13.0, V13.0.88\n");
    runner.answer("/usr/bin/gcc-12", "gcc-12 (Debian 12.2.0-14) 12.2.0\n");
    runner.answer("/usr/bin/ninja", "1.13.1\n");
    runner.answer("/usr/bin/python3",
                  "TAILOR_PROBE {\"version\": \"3.11.2\", \"torch\": {\"version\": "
                  "\"2.11.0+cu130\", \"cuda\": \"13.0\", "
                  "\"arch_list\": [\"sm_90\"], \"cxx11_abi\": true}}\n");
  }
};

TEST(ProbeHost, WholeReportOverFakes) {
  FakeHost h;
  ProbeOptions o;
  o.build_dir = "/build";
  auto r = probe_host(o, h.files, h.runner, h.gpus);
  EXPECT_EQ(r.os.name, "Debian GNU/Linux 12 (bookworm)");
  EXPECT_EQ(r.os.kernel, "6.1.0-18-amd64");
  EXPECT_EQ(r.os.glibc, "2.36");
  EXPECT_EQ(r.cpu.isa_level, "x86-64-v2");
  EXPECT_EQ(r.memory.usable, 256u << 20);
  EXPECT_EQ(r.memory.limited_by, "cgroup v2");
  EXPECT_EQ(r.disk.free_bytes, 100ull << 30);
  EXPECT_TRUE(r.gpus.empty());
  ASSERT_EQ(r.cuda_toolkits.size(), 1u);
  EXPECT_EQ(r.cuda_toolkits[0].version, "13.0.88");
  EXPECT_EQ(r.cuda_toolkits[0].release, (cuda::CudaVersion{13, 0}));
  EXPECT_EQ(r.cuda_toolkits[0].accepted_host_compilers,
            std::vector<std::string>{"/usr/bin/gcc-12"});
  ASSERT_EQ(r.pythons.size(), 1u);
  ASSERT_TRUE(r.pythons[0].torch);
  EXPECT_EQ(r.pythons[0].torch->cuda_version, (cuda::CudaVersion{13, 0}));
  bool no_gpu_note = false, cmake_note = false;
  for (const auto& n : r.notes) {
    no_gpu_note = no_gpu_note || n.rfind("no GPU", 0) == 0;
    cmake_note = cmake_note || n == "cmake not found on PATH";
  }
  EXPECT_TRUE(no_gpu_note);
  EXPECT_TRUE(cmake_note);

  auto j = to_json(r);
  for (const char* key : {"os", "cpu", "memory", "disk", "gpus", "driver", "cuda_toolkits",
                          "compilers", "pythons", "tools", "notes"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_TRUE(j["gpus"].is_array());
  EXPECT_EQ(j["cuda_toolkits"][0]["version"], "13.0.88");
  EXPECT_EQ(j["cuda_toolkits"][0]["major"], 13);
  EXPECT_EQ(j["cuda_toolkits"][0]["minor"], 0);
  EXPECT_EQ(j["compilers"][0]["kind"], "gcc");  // the enum is named in JSON as before
  EXPECT_EQ(j["pythons"][0]["torch"]["arch_list"][0], "sm_90");
  EXPECT_EQ(j["tools"][0]["jobserver_client"], true);
}

TEST(ProbeHost, GpuFromNvmlInJson) {
  FakeHost h;
  GpuQueryResult g;
  g.gpus.push_back(
      {0, "NVIDIA H100 80GB HBM3", cuda::ComputeCapability{9, 0}, 80ull << 30, "GPU-1"});
  g.driver = GpuDriver{"580.95.05", cuda::CudaVersion{13, 0}, "nvml"};
  h.gpus.result = g;
  ProbeOptions o;
  o.probe_pythons = false;
  auto j = to_json(probe_host(o, h.files, h.runner, h.gpus));
  ASSERT_EQ(j["gpus"].size(), 1u);
  EXPECT_EQ(j["gpus"][0]["name"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(j["gpus"][0]["compute_capability"], "9.0");
  EXPECT_EQ(j["driver"]["cuda_version"], "13.0");
  EXPECT_TRUE(j["pythons"].empty());
}

TEST(ProbeHost, BareHostIsNeverFatal) {
  test::FakeHostFiles files;
  files.disk.reset();
  test::FakeCommandRunner runner;
  test::FakeGpuQuery gpus;
  auto r = probe_host({}, files, runner, gpus);
  EXPECT_TRUE(r.cuda_toolkits.empty());
  EXPECT_TRUE(r.pythons.empty());
  EXPECT_GE(r.notes.size(), 5u);  // disk, GPU, compiler, toolkit, ninja, cmake, python
}

}  // namespace
}  // namespace tailor::probe
