#include <gtest/gtest.h>

#include "probe/probe.h"
#include "support/fake_host.h"

namespace tailor::probe {
namespace {

constexpr uint64_t k_gib = 1ull << 30;

const char* k_meminfo =
    "MemTotal:       65536000 kB\n"
    "MemFree:         1000000 kB\n"
    "MemAvailable:   32768000 kB\n"
    "Buffers:          123456 kB\n"
    "SwapTotal:       2097148 kB\n"
    "SwapFree:        1048574 kB\n"
    "HugePages_Total:       0\n";

TEST(Meminfo, ParsesKilobyteFields) {
  auto m = parse_meminfo(k_meminfo);
  EXPECT_EQ(m.total, 65536000ull * 1024);
  EXPECT_EQ(m.available, 32768000ull * 1024);
  EXPECT_EQ(m.swap_total, 2097148ull * 1024);
  EXPECT_EQ(m.swap_free, 1048574ull * 1024);
}

TEST(Meminfo, GarbageGivesZeros) {
  auto m = parse_meminfo("MemTotal: lots\nnonsense\n:::\n");
  EXPECT_EQ(m.total, 0u);
  EXPECT_EQ(m.available, 0u);
}

TEST(ProbeMemory, CgroupV2LimitLowerThanMemAvailableWins) {
  test::FakeHostFiles f;
  f.files["/proc/meminfo"] = k_meminfo;
  f.files["/proc/self/cgroup"] = "0::/docker/abc\n";
  f.files["/sys/fs/cgroup/docker/abc/memory.max"] = std::to_string(8 * k_gib) + "\n";
  f.files["/sys/fs/cgroup/docker/abc/memory.current"] = std::to_string(3 * k_gib) + "\n";
  f.files["/sys/fs/cgroup/docker/abc/memory.stat"] =
      "anon 100\ninactive_file " + std::to_string(k_gib) + "\n";
  auto m = probe_memory(f);
  EXPECT_EQ(m.cgroup_limit, 8 * k_gib);
  EXPECT_EQ(m.cgroup_usage, 2 * k_gib);  // page cache left out
  EXPECT_EQ(m.usable, 6 * k_gib);
  EXPECT_EQ(m.limited_by, "cgroup v2");
  EXPECT_EQ(m.available, 32768000ull * 1024);
}

TEST(ProbeMemory, CgroupV2ParentLimitBindsChild) {
  test::FakeHostFiles f;
  f.files["/proc/meminfo"] = k_meminfo;
  f.files["/proc/self/cgroup"] = "0::/user.slice/job/step\n";
  f.files["/sys/fs/cgroup/user.slice/job/step/memory.max"] = "max\n";
  f.files["/sys/fs/cgroup/user.slice/job/memory.max"] = std::to_string(4 * k_gib);
  f.files["/sys/fs/cgroup/user.slice/job/memory.current"] = std::to_string(k_gib);
  auto m = probe_memory(f);
  EXPECT_EQ(m.cgroup_limit, 4 * k_gib);
  EXPECT_EQ(m.usable, 3 * k_gib);
  EXPECT_EQ(m.limited_by, "cgroup v2");
}

TEST(ProbeMemory, CgroupV2MaxMeansNoLimit) {
  test::FakeHostFiles f;
  f.files["/proc/meminfo"] = k_meminfo;
  f.files["/proc/self/cgroup"] = "0::/\n";
  f.files["/sys/fs/cgroup/memory.max"] = "max\n";
  auto m = probe_memory(f);
  EXPECT_EQ(m.cgroup_limit, 0u);
  EXPECT_EQ(m.usable, m.available);
  EXPECT_EQ(m.limited_by, "MemAvailable");
}

TEST(ProbeMemory, CgroupLimitAboveMemAvailableKeepsMemAvailable) {
  test::FakeHostFiles f;
  f.files["/proc/meminfo"] = k_meminfo;
  f.files["/proc/self/cgroup"] = "0::/big\n";
  f.files["/sys/fs/cgroup/big/memory.max"] = std::to_string(60 * k_gib);
  f.files["/sys/fs/cgroup/big/memory.current"] = "0";
  auto m = probe_memory(f);
  EXPECT_EQ(m.cgroup_limit, 60 * k_gib);
  EXPECT_EQ(m.usable, m.available);
  EXPECT_EQ(m.limited_by, "MemAvailable");
}

TEST(ProbeMemory, CgroupV1Limit) {
  test::FakeHostFiles f;
  f.files["/proc/meminfo"] = k_meminfo;
  f.files["/proc/self/cgroup"] =
      "12:cpuset:/kubepods/pod1\n11:memory:/kubepods/pod1/ctr\n10:cpu,cpuacct:/kubepods/pod1\n";
  // Inside the container the host path is not mounted; the container's own root is.
  f.files["/sys/fs/cgroup/memory/memory.limit_in_bytes"] = std::to_string(16 * k_gib) + "\n";
  f.files["/sys/fs/cgroup/memory/memory.usage_in_bytes"] = std::to_string(6 * k_gib) + "\n";
  f.files["/sys/fs/cgroup/memory/memory.stat"] =
      "cache 5\ntotal_inactive_file " + std::to_string(2 * k_gib) + "\n";
  auto m = probe_memory(f);
  EXPECT_EQ(m.cgroup_limit, 16 * k_gib);
  EXPECT_EQ(m.usable, 12 * k_gib);
  EXPECT_EQ(m.limited_by, "cgroup v1");
}

TEST(ProbeMemory, CgroupV1UnlimitedIsNoLimit) {
  test::FakeHostFiles f;
  f.files["/proc/meminfo"] = k_meminfo;
  f.files["/proc/self/cgroup"] = "4:memory:/\n";
  f.files["/sys/fs/cgroup/memory/memory.limit_in_bytes"] = "9223372036854771712\n";
  auto m = probe_memory(f);
  EXPECT_EQ(m.cgroup_limit, 0u);
  EXPECT_EQ(m.limited_by, "MemAvailable");
}

TEST(ProbeMemory, NoCgroupFileAtAll) {
  test::FakeHostFiles f;
  f.files["/proc/meminfo"] = k_meminfo;
  auto m = probe_memory(f);
  EXPECT_EQ(m.cgroup_limit, 0u);
  EXPECT_EQ(m.usable, 32768000ull * 1024);
  EXPECT_EQ(m.limited_by, "MemAvailable");
}

TEST(ProbeMemory, UsageAboveLimitLeavesNothing) {
  test::FakeHostFiles f;
  f.files["/proc/meminfo"] = k_meminfo;
  f.files["/proc/self/cgroup"] = "0::/x\n";
  f.files["/sys/fs/cgroup/x/memory.max"] = std::to_string(k_gib);
  f.files["/sys/fs/cgroup/x/memory.current"] = std::to_string(2 * k_gib);
  auto m = probe_memory(f);
  EXPECT_EQ(m.usable, 0u);
}

}  // namespace
}  // namespace tailor::probe
