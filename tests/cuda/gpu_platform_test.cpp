// The one platform rule: a GPU or instance that exists on one platform only implies it,
// and a machine (a library's, a host's) of the other platform is named in one line.
// (implied_platform and variant_platform through plan: tests/plan/torch_platform_test.cpp.)
#include "cuda/gpu_platform.h"

#include <gtest/gtest.h>

namespace tailor::cuda {
namespace {

ImpliedPlatform implied(const std::string& spec) {
  auto p = implied_platform({spec});
  EXPECT_TRUE(p && *p) << spec;
  return p && *p ? **p : ImpliedPlatform{};
}

TEST(GpuPlatform, MismatchNamesTheGpuItsInstanceAndBothPlatforms) {
  EXPECT_EQ(platform_mismatch(implied("T4G"), "x86_64", "this library"),
            "T4G (g5g) exists only on aarch64; this library is x86_64");
  EXPECT_EQ(platform_mismatch(implied("g5g.xlarge"), "x86_64", "this host"),
            "g5g.xlarge (T4G) exists only on aarch64; this host is x86_64");
  EXPECT_EQ(platform_mismatch(implied("g4dn.xlarge"), "aarch64", "this library"),
            "g4dn.xlarge (T4) exists only on x86_64; this library is aarch64");
  EXPECT_EQ(platform_mismatch(implied("T4G;GH200"), "amd64", "this host"),
            "T4G (g5g), GH200 exist only on aarch64; this host is x86_64");
}

TEST(GpuPlatform, TheSamePlatformOrNoCpuPlatformIsNoMismatch) {
  EXPECT_EQ(platform_mismatch(implied("T4G"), "aarch64", "this library"), "");
  EXPECT_EQ(platform_mismatch(implied("T4G"), "arm64", "this host"), "");
  EXPECT_EQ(platform_mismatch(implied("T4G"), "cuda", "this library"), "");  // a stray cubin
  EXPECT_EQ(platform_mismatch(implied("T4G"), "em_243", "this library"),
            "");  // RISC-V: not tailor's to judge
  EXPECT_EQ(platform_mismatch(implied("T4G"), "", "this host"), "");  // not known
}

TEST(GpuPlatform, ImpliedPlatformKeepsOneHintPerName) {
  auto p = implied("g5g.xlarge;8.0;T4G");
  EXPECT_EQ(p.platform, "aarch64");
  ASSERT_EQ(p.hints.size(), 2u);
  EXPECT_EQ(p.hints[0].name, "g5g.xlarge");
  EXPECT_EQ(p.hints[1].name, "T4G");
}

}  // namespace
}  // namespace tailor::cuda
