#include <gtest/gtest.h>

#include "probe/probe.h"
#include "support/fake_host.h"

namespace tailor::probe {
namespace {

std::string cpuinfo(int n) {
  std::string out;
  for (int i = 0; i < n; ++i)
    out += "processor\t: " + std::to_string(i) + "\nmodel name\t: Test CPU\n\n";
  return out;
}

TEST(ParseCpuList, RangesAndSingles) {
  EXPECT_EQ(parse_cpu_list("0-15"), 16);
  EXPECT_EQ(parse_cpu_list("0-3,8,10-11\n"), 7);
  EXPECT_EQ(parse_cpu_list("5"), 1);
  EXPECT_EQ(parse_cpu_list("0-15,32-47"), 32);
}

TEST(ParseCpuList, MalformedIsNone) {
  EXPECT_EQ(parse_cpu_list(""), std::nullopt);
  EXPECT_EQ(parse_cpu_list("3-1"), std::nullopt);
  EXPECT_EQ(parse_cpu_list("0-"), std::nullopt);
  EXPECT_EQ(parse_cpu_list("a-b"), std::nullopt);
  EXPECT_EQ(parse_cpu_list("-1"), std::nullopt);
  EXPECT_EQ(parse_cpu_list("0-99999999999"), std::nullopt);  // beyond any real CPU id
  EXPECT_EQ(parse_cpu_list(std::string(70000, '1')), std::nullopt);
}

TEST(ParseCpuMax, QuotaOverPeriodRoundedUp) {
  EXPECT_EQ(parse_cpu_max("200000 100000\n"), 2);
  EXPECT_EQ(parse_cpu_max("150000 100000"), 2);
  EXPECT_EQ(parse_cpu_max("50000 100000"), 1);
  EXPECT_EQ(parse_cpu_max("max 100000"), std::nullopt);
  EXPECT_EQ(parse_cpu_max("0 100000"), std::nullopt);
  EXPECT_EQ(parse_cpu_max("x y"), std::nullopt);
  // A quota beyond any CPU count (found by fuzz/host_limits_fuzz: it overflowed int).
  EXPECT_EQ(parse_cpu_max("1150000005000000"), 65536);
  EXPECT_EQ(parse_cpu_max("9223372036854775807 1"), 65536);
  EXPECT_EQ(parse_cpu_max(""), std::nullopt);
}

TEST(ProbeCpu, NoLimitsMeansEveryLogicalCore) {
  test::FakeHostFiles f;
  f.files["/proc/cpuinfo"] = cpuinfo(8);
  HostCpu cpu = probe_cpu(f);
  EXPECT_EQ(cpu.logical_cores, 8);
  EXPECT_EQ(cpu.build_cores(), 8);
  EXPECT_EQ(cpu.cores_limited_by, "");
}

TEST(ProbeCpu, AffinityMaskLimits) {  // taskset -c 0-3, or a batch scheduler's cpuset
  test::FakeHostFiles f;
  f.files["/proc/cpuinfo"] = cpuinfo(64);
  f.files["/proc/self/status"] =
      "Name:\ttailor\nCpus_allowed:\tf\nCpus_allowed_list:\t0-3\nMems_allowed_list:\t0\n";
  HostCpu cpu = probe_cpu(f);
  EXPECT_EQ(cpu.logical_cores, 64);
  EXPECT_EQ(cpu.build_cores(), 4);
  EXPECT_EQ(cpu.cores_limited_by, "affinity");
}

TEST(ProbeCpu, CgroupV2QuotaTightestAlongTheHierarchy) {  // docker --cpus=6 inside a 12-CPU slice
  test::FakeHostFiles f;
  f.files["/proc/cpuinfo"] = cpuinfo(32);
  f.files["/proc/self/status"] = "Cpus_allowed_list:\t0-31\n";
  f.files["/proc/self/cgroup"] = "0::/system.slice/docker-abc.scope\n";
  f.files["/sys/fs/cgroup/system.slice/cpu.max"] = "1200000 100000\n";
  f.files["/sys/fs/cgroup/system.slice/docker-abc.scope/cpu.max"] = "550000 100000\n";
  f.files["/sys/fs/cgroup/cpu.max"] = "max 100000\n";
  HostCpu cpu = probe_cpu(f);
  EXPECT_EQ(cpu.build_cores(), 6);
  EXPECT_EQ(cpu.cores_limited_by, "cgroup v2 cpu.max");
}

TEST(ProbeCpu, CgroupV1Quota) {
  test::FakeHostFiles f;
  f.files["/proc/cpuinfo"] = cpuinfo(16);
  f.files["/proc/self/cgroup"] = "12:cpu,cpuacct:/kubepods/pod1/c1\n11:memory:/kubepods/pod1/c1\n";
  f.files["/sys/fs/cgroup/cpu/kubepods/pod1/c1/cpu.cfs_quota_us"] = "300000\n";
  f.files["/sys/fs/cgroup/cpu/kubepods/pod1/c1/cpu.cfs_period_us"] = "100000\n";
  f.files["/sys/fs/cgroup/cpu/kubepods/cpu.cfs_quota_us"] = "-1\n";
  f.files["/sys/fs/cgroup/cpu/kubepods/cpu.cfs_period_us"] = "100000\n";
  HostCpu cpu = probe_cpu(f);
  EXPECT_EQ(cpu.build_cores(), 3);
  EXPECT_EQ(cpu.cores_limited_by, "cgroup v1 cfs quota");
}

TEST(ProbeCpu, AQuotaAboveTheMachineChangesNothing) {
  test::FakeHostFiles f;
  f.files["/proc/cpuinfo"] = cpuinfo(4);
  f.files["/proc/self/cgroup"] = "0::/\n";
  f.files["/sys/fs/cgroup/cpu.max"] = "800000 100000\n";
  HostCpu cpu = probe_cpu(f);
  EXPECT_EQ(cpu.build_cores(), 4);
  EXPECT_EQ(cpu.cores_limited_by, "");
}

TEST(ProbeCpu, HostileStatusIsIgnored) {
  test::FakeHostFiles f;
  f.files["/proc/cpuinfo"] = cpuinfo(4);
  f.files["/proc/self/status"] = "Cpus_allowed_list:\t9-2,zz\n";
  f.files["/proc/self/cgroup"] = "0::/\n";
  f.files["/sys/fs/cgroup/cpu.max"] = "-5 100000\n";
  HostCpu cpu = probe_cpu(f);
  EXPECT_EQ(cpu.build_cores(), 4);
  EXPECT_EQ(cpu.cores_limited_by, "");
}

}  // namespace
}  // namespace tailor::probe
