// The aarch64 side of probe_cpu over recorded /proc/cpuinfo of real machines
// (tests/probe/data/cpuinfo, sources in its README) and over what an emulator shows: core
// names from MIDR implementer/part, the Neoverse class, features from HWCAP or "Features".
#include <gtest/gtest.h>

#include <algorithm>

#include "probe/isa_levels.h"
#include "probe/probe.h"
#include "support/fake_host.h"
#include "support/fixtures.h"

namespace tailor::probe {
namespace {

std::string recorded(const std::string& name) {
  std::string text = tailor::test::slurp_text(std::string(TAILOR_SOURCE_DIR) +
                                              "/tests/probe/data/cpuinfo/" + name);
  EXPECT_FALSE(text.empty()) << "missing fixture " << name;
  return text;
}

HostCpu probe_recorded(const std::string& name) {
  tailor::test::FakeHostFiles f;
  f.arch = "aarch64";
  f.files["/proc/cpuinfo"] = recorded(name);
  return probe_cpu(f);
}

bool has(const HostCpu& cpu, const std::string& feature) {
  return std::find(cpu.features.begin(), cpu.features.end(), feature) != cpu.features.end();
}

TEST(ArmCpuProbe, Graviton2IsNeoverseN1) {
  HostCpu cpu = probe_recorded("graviton2_t4g_small");
  EXPECT_EQ(cpu.arch, "aarch64");
  EXPECT_EQ(cpu.model, "Neoverse-N1");
  EXPECT_EQ(cpu.cores, std::vector<std::string>{"Neoverse-N1"});
  EXPECT_EQ(cpu.midr, "0x41:0xd0c");
  EXPECT_EQ(cpu.neoverse_class, "N1");
  EXPECT_NE(cpu.seen_in.find("g5g"), std::string::npos) << cpu.seen_in;
  EXPECT_EQ(cpu.logical_cores, 2);
  EXPECT_EQ(cpu.isa_level, "armv8.2-a");
  EXPECT_EQ(cpu.features_source, "/proc/cpuinfo");
  EXPECT_TRUE(has(cpu, "asimddp"));
  EXPECT_TRUE(has(cpu, "lrcpc"));
  EXPECT_FALSE(has(cpu, "sve"));
  EXPECT_FALSE(has(cpu, "bf16"));
  EXPECT_FALSE(has(cpu, "i8mm"));
}

TEST(ArmCpuProbe, Graviton3IsNeoverseV1WithSveBf16I8mm) {
  HostCpu cpu = probe_recorded("graviton3");
  EXPECT_EQ(cpu.model, "Neoverse-V1");
  EXPECT_EQ(cpu.neoverse_class, "V1");
  EXPECT_EQ(cpu.isa_level, "armv8.4-a+sve");
  for (const char* f : {"sve", "bf16", "i8mm", "svebf16", "svei8mm"}) EXPECT_TRUE(has(cpu, f)) << f;
  EXPECT_FALSE(has(cpu, "sve2"));
}

TEST(ArmCpuProbe, Graviton4IsNeoverseV2WithSve2) {
  HostCpu cpu = probe_recorded("graviton4");
  EXPECT_EQ(cpu.model, "Neoverse-V2");
  EXPECT_EQ(cpu.neoverse_class, "V2");
  EXPECT_EQ(cpu.logical_cores, 4);
  EXPECT_EQ(cpu.isa_level, "armv9-a");
  for (const char* f : {"sve", "sve2", "bf16", "i8mm", "svebitperm"}) EXPECT_TRUE(has(cpu, f)) << f;
}

TEST(ArmCpuProbe, GraceIsNeoverseV2) {
  HostCpu cpu = probe_recorded("grace_gh200");
  EXPECT_EQ(cpu.model, "Neoverse-V2");
  EXPECT_EQ(cpu.neoverse_class, "V2");
  EXPECT_NE(cpu.seen_in.find("GH200"), std::string::npos) << cpu.seen_in;
  EXPECT_EQ(cpu.logical_cores, 3);  // the published dump elides processors 2..143
  EXPECT_EQ(cpu.isa_level, "armv9-a");
  EXPECT_TRUE(has(cpu, "sve2"));
}

TEST(ArmCpuProbe, Gb10NamesBothCoreKindsAndIsV2Class) {
  HostCpu cpu = probe_recorded("gb10_dgx_spark");
  EXPECT_EQ(cpu.cores, (std::vector<std::string>{"Cortex-A725", "Cortex-X925"}));
  EXPECT_EQ(cpu.model, "Cortex-A725 + Cortex-X925");
  EXPECT_EQ(cpu.midr, "0x41:0xd87");
  EXPECT_EQ(cpu.neoverse_class, "V2");
  EXPECT_EQ(cpu.logical_cores, 20);
  EXPECT_EQ(cpu.isa_level, "armv9-a");
  for (const char* f : {"sve2", "bf16", "i8mm", "wfxt"}) EXPECT_TRUE(has(cpu, f)) << f;
}

// Orin's MIDR as NVIDIA's Tegra234 kernel patch quotes it (README): only the implementer
// and part lines, so the core is named but no feature is claimed from nothing.
TEST(ArmCpuProbe, OrinRecordedLinesNameCortexA78AE) {
  HostCpu cpu = probe_recorded("orin_tegra234_lines");
  EXPECT_EQ(cpu.arch, "aarch64");
  EXPECT_EQ(cpu.model, "Cortex-A78AE");
  EXPECT_EQ(cpu.cores, std::vector<std::string>{"Cortex-A78AE"});
  EXPECT_EQ(cpu.midr, "0x41:0xd42");
  EXPECT_EQ(cpu.neoverse_class, "N1");
  EXPECT_NE(cpu.seen_in.find("Orin"), std::string::npos) << cpu.seen_in;
  EXPECT_TRUE(cpu.features.empty()) << testing::PrintToString(cpu.features);
}

// A Jetson AGX Orin's features and MIDR fields as its published lscpu shows them (README:
// Flags, Model 1 = variant 0x0, Stepping r0p1 = revision 1), in a cpuinfo layout written here.
TEST(ArmCpuProbe, OrinLscpuFeaturesAreArmv82WithDotProductAndNoSve) {
  tailor::test::FakeHostFiles f;
  f.arch = "aarch64";
  f.files["/proc/cpuinfo"] =
      "processor\t: 0\nBogoMIPS\t: 62.50\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 "
      "atomics fphp "
      "asimdhp cpuid asimdrdm lrcpc dcpop asimddp uscat ilrcpc flagm paca pacg\n"
      "CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: 0xd42\nCPU "
      "revision\t: 1\n";
  HostCpu cpu = probe_cpu(f);
  EXPECT_EQ(cpu.model, "Cortex-A78AE");
  EXPECT_EQ(cpu.neoverse_class, "N1");
  EXPECT_EQ(cpu.features_source, "/proc/cpuinfo");
  EXPECT_EQ(cpu.isa_level, "armv8.2-a");
  for (const char* x : {"asimddp", "lrcpc", "ilrcpc", "paca", "atomics"})
    EXPECT_TRUE(has(cpu, x)) << x;
  for (const char* x : {"sve", "sve2", "bf16", "i8mm"}) EXPECT_FALSE(has(cpu, x)) << x;
}

// qemu-user: /proc/cpuinfo is the x86 host's, HWCAP and MIDR are the emulated CPU's.
const char* k_x86_cpuinfo =
    "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B12\n"
    "flags\t\t: fpu sse sse2 pni ssse3 avx avx2 bmi1 bmi2\nphysical id\t: 0\ncore id\t\t: 0\n\n"
    "processor\t: 1\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B12\n"
    "flags\t\t: fpu sse sse2 pni ssse3 avx avx2 bmi1 bmi2\nphysical id\t: 0\ncore id\t\t: 0\n\n";

TEST(ArmCpuProbe, UnderAnEmulatorHwcapAndMidrWinOverTheHostsCpuinfo) {
  tailor::test::FakeHostFiles f;
  f.arch = "aarch64";
  f.files["/proc/cpuinfo"] = k_x86_cpuinfo;
  f.cpuid = hwcap_names(0x119ffb, 0);  // qemu-aarch64 -cpu neoverse-n1
  f.midr = 0x414fd0c1;
  HostCpu cpu = probe_cpu(f);
  EXPECT_EQ(cpu.model, "Neoverse-N1");
  EXPECT_EQ(cpu.midr, "0x41:0xd0c");
  EXPECT_EQ(cpu.neoverse_class, "N1");
  EXPECT_EQ(cpu.features_source, "hwcap");
  EXPECT_EQ(cpu.isa_level, "armv8.2-a");
  EXPECT_EQ(cpu.logical_cores, 2);
  EXPECT_FALSE(has(cpu, "avx2"));
  EXPECT_FALSE(has(cpu, "evtstrm"));  // qemu sets no event stream bit
  EXPECT_TRUE(has(cpu, "asimddp"));
}

TEST(ArmCpuProbe, AnUnknownPartIsNamedByNumberAndClassedByFeatures) {
  tailor::test::FakeHostFiles f;
  f.arch = "aarch64";
  f.files["/proc/cpuinfo"] = k_x86_cpuinfo;
  f.cpuid = hwcap_names(0xecfffffb, 0x7f877fff);  // qemu-aarch64 7.2 -cpu max
  f.midr = 0x000f0510;
  HostCpu cpu = probe_cpu(f);
  EXPECT_EQ(cpu.model, "unknown Arm core (implementer 0x00, part 0x051)");
  EXPECT_EQ(cpu.neoverse_class, "V2");
  EXPECT_TRUE(has(cpu, "sve2"));
  EXPECT_TRUE(has(cpu, "sme"));
}

TEST(ArmCpuProbe, NoCpuinfoNoMidrStillClassesByFeatures) {
  tailor::test::FakeHostFiles f;
  f.arch = "aarch64";
  f.cpuid = {"fp", "asimd"};
  HostCpu cpu = probe_cpu(f);
  EXPECT_TRUE(cpu.cores.empty());
  EXPECT_EQ(cpu.model, "");
  EXPECT_EQ(cpu.neoverse_class, "");  // below N1
  EXPECT_EQ(cpu.isa_level, "armv8-a");
}

TEST(ArmCpuProbe, MalformedPartNumbersAreIgnored) {
  tailor::test::FakeHostFiles f;
  f.arch = "aarch64";
  f.files["/proc/cpuinfo"] =
      "processor\t: 0\nFeatures\t: fp asimd\nCPU implementer\t: 0xZZ\nCPU part\t: 0xd0c\n\n"
      "processor\t: 1\nFeatures\t: fp asimd\nCPU implementer\t: 0x41\nCPU part\t: d0c\n\n"
      "processor\t: 2\nFeatures\t: fp asimd\nCPU implementer\t: 0x41\nCPU part\t: "
      "0x1234567890123\n";
  HostCpu cpu = probe_cpu(f);
  EXPECT_TRUE(cpu.cores.empty());
  EXPECT_EQ(cpu.logical_cores, 3);
}

TEST(HwcapNames, BitsMapToTheKernelsNames) {
  auto n = hwcap_names(uint64_t{1} << 20 | uint64_t{1} << 22, uint64_t{1} << 1 | uint64_t{1} << 14);
  EXPECT_EQ(n, (std::set<std::string>{"asimddp", "sve", "sve2", "bf16"}));
  EXPECT_TRUE(hwcap_names(0, 0).empty());
  // Bits past the table (newer kernels) are left out, not misnamed.
  EXPECT_TRUE(hwcap_names(0, uint64_t{1} << 63).empty());
}

TEST(ArmCoreTable, PartNumbersOfTheMachinesTailorTargets) {
  const auto& t = isa_level_table();
  struct Want {
    unsigned impl, part;
    const char* name;
    const char* cls;
  };
  for (const Want& w :
       {Want{0x41, 0xd0c, "Neoverse-N1", "N1"}, Want{0x41, 0xd40, "Neoverse-V1", "V1"},
        Want{0x41, 0xd4f, "Neoverse-V2", "V2"}, Want{0x41, 0xd42, "Cortex-A78AE", "N1"},
        Want{0x41, 0xd85, "Cortex-X925", "V2"}, Want{0x41, 0xd87, "Cortex-A725", "V2"}}) {
    const ArmCore* c = t.find_arm_core(w.impl, w.part);
    ASSERT_NE(c, nullptr) << w.name;
    EXPECT_EQ(c->name, w.name);
    EXPECT_EQ(c->neoverse, w.cls);
  }
  EXPECT_EQ(t.find_arm_core(0x41, 0xfff), nullptr);
  EXPECT_EQ(t.aarch64_hwcap.size(), 32u);
}

#if defined(__aarch64__)
// The real HWCAP of the machine (or emulator) running the tests: every aarch64 CPU has
// FP and Advanced SIMD.
TEST(HwcapFeatures, ThisArmCpuHasFpAndAsimd) {
  auto f = hwcap_features();
  EXPECT_TRUE(f.count("fp"));
  EXPECT_TRUE(f.count("asimd"));
}
#endif

}  // namespace
}  // namespace tailor::probe
