#include <gtest/gtest.h>

#include "probe/probe.h"
#include "support/fake_host.h"
#include "util/strings.h"

namespace tailor::probe {
namespace {

std::set<std::string> words(const std::string& s) {
  auto v = split_any(s, " ");
  return {v.begin(), v.end()};
}

const std::string k_v2 = "cx16 lahf popcnt sse3 sse4.1 sse4.2 ssse3";
const std::string k_v3 = k_v2 + " avx avx2 bmi1 bmi2 f16c fma lzcnt movbe osxsave";
const std::string k_v4 = k_v3 + " avx512f avx512bw avx512cd avx512dq avx512vl";

TEST(X86IsaLevel, Levels) {
  EXPECT_EQ(x86_isa_level({}), "x86-64");
  EXPECT_EQ(x86_isa_level(words(k_v2)), "x86-64-v2");
  EXPECT_EQ(x86_isa_level(words(k_v3)), "x86-64-v3");
  EXPECT_EQ(x86_isa_level(words(k_v4)), "x86-64-v4");
}

TEST(X86IsaLevel, OneMissingFeatureDropsTheLevel) {
  auto f = words(k_v3);
  f.erase("movbe");
  EXPECT_EQ(x86_isa_level(f), "x86-64-v2");
  f = words(k_v3);
  f.erase("osxsave");  // the OS does not save AVX state: AVX unusable
  EXPECT_EQ(x86_isa_level(f), "x86-64-v2");
  f = words(k_v4);
  f.erase("avx512vl");
  EXPECT_EQ(x86_isa_level(f), "x86-64-v3");
}

TEST(X86IsaLevel, HigherFeaturesWithoutLowerLevelDoNotCount) {
  auto f = words("avx512f avx512bw avx512cd avx512dq avx512vl avx avx2");
  EXPECT_EQ(x86_isa_level(f), "x86-64");
}

// Linux "Features" lines of real machines.
const char* k_graviton2 =
    "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop "
    "asimddp ssbs";
const char* k_graviton3 =
    "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt fcma "
    "lrcpc dcpop sha3 sm3 "
    "sm4 asimddp sha512 sve asimdfhm dit uscat ilrcpc flagm ssbs paca pacg dcpodp svei8mm svebf16 "
    "i8mm bf16 dgh rng";
const char* k_grace =
    "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt fcma "
    "lrcpc dcpop sha3 sm3 "
    "sm4 asimddp sha512 sve asimdfhm dit uscat ilrcpc flagm ssbs sb paca pacg dcpodp sve2 sveaes "
    "svepmull svebitperm "
    "svesha3 svesm4 flagm2 frint svei8mm svebf16 i8mm bf16 dgh bti";

TEST(Aarch64IsaLevel, Graviton2IsArmv82) {
  EXPECT_EQ(aarch64_isa_level(words(k_graviton2)), "armv8.2-a");
}
TEST(Aarch64IsaLevel, Graviton3IsArmv84WithSve) {
  EXPECT_EQ(aarch64_isa_level(words(k_graviton3)), "armv8.4-a+sve");
}
TEST(Aarch64IsaLevel, GraceIsArmv9) { EXPECT_EQ(aarch64_isa_level(words(k_grace)), "armv9-a"); }
TEST(Aarch64IsaLevel, BareArmv8) {
  EXPECT_EQ(aarch64_isa_level(words("fp asimd evtstrm crc32 cpuid")), "armv8-a");
}

TEST(ProbeCpu, X86FromCpuinfoFlagsWhenNoCpuid) {
  test::FakeHostFiles f;
  std::string block =
      "model name\t: AMD EPYC 9654 96-Core Processor\n"
      "flags\t\t: fpu sse sse2 pni ssse3 fma cx16 sse4_1 sse4_2 movbe popcnt xsave avx f16c "
      "lahf_lm abm avx2 bmi1 "
      "bmi2 avx512f avx512dq avx512cd avx512bw avx512vl\n";
  f.files["/proc/cpuinfo"] = "processor\t: 0\n" + block + "physical id\t: 0\ncore id\t\t: 0\n\n" +
                             "processor\t: 1\n" + block + "physical id\t: 0\ncore id\t\t: 0\n\n" +
                             "processor\t: 2\n" + block + "physical id\t: 0\ncore id\t\t: 1\n\n";
  auto cpu = probe_cpu(f);
  EXPECT_EQ(cpu.model, "AMD EPYC 9654 96-Core Processor");
  EXPECT_EQ(cpu.logical_cores, 3);
  EXPECT_EQ(cpu.physical_cores, 2);
  EXPECT_EQ(cpu.isa_level, "x86-64-v4");
  EXPECT_NE(std::find(cpu.features.begin(), cpu.features.end(), "sse3"), cpu.features.end());
}

TEST(ProbeCpu, X86CpuidWinsOverFlags) {
  test::FakeHostFiles f;
  f.files["/proc/cpuinfo"] = "processor\t: 0\nmodel name\t: X\nflags\t\t: pni\n";
  f.cpuid = words(k_v3);
  EXPECT_EQ(probe_cpu(f).isa_level, "x86-64-v3");
}

TEST(ProbeCpu, Aarch64NamesTheCoreFromItsPartNumber) {
  test::FakeHostFiles f;
  f.arch = "aarch64";
  std::string block =
      std::string("Features\t: ") + k_grace +
      "\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: 0xd4f\n\n";
  f.files["/proc/cpuinfo"] = "processor\t: 0\n" + block + "processor\t: 1\n" + block;
  auto cpu = probe_cpu(f);
  EXPECT_EQ(cpu.model, "Neoverse-V2");
  EXPECT_EQ(cpu.logical_cores, 2);
  EXPECT_EQ(cpu.physical_cores, 2);
  EXPECT_EQ(cpu.isa_level, "armv9-a");
}

TEST(ProbeCpu, MissingCpuinfoIsNotFatal) {
  test::FakeHostFiles f;
  auto cpu = probe_cpu(f);
  EXPECT_EQ(cpu.logical_cores, 0);
  EXPECT_EQ(cpu.isa_level, "x86-64");
}

#if defined(__x86_64__)
TEST(CpuidFeatures, ThisX86CpuHasAtLeastV1AndSse3) {
  auto f = cpuid_features();
  EXPECT_TRUE(f.count("sse3"));  // every x86-64 CPU made since 2005
  EXPECT_FALSE(x86_isa_level(f).empty());
}
#endif

}  // namespace
}  // namespace tailor::probe
