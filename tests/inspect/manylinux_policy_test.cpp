// The manylinux policy data (auditwheel's policy file, data/manylinux/policies.toml) and
// the CUDA provider table, through their loaders.
#include "inspect/manylinux_policy.h"

#include <gtest/gtest.h>

#include "inspect/cuda_providers.h"

using namespace tailor::inspect;
using tailor::formats::ElfVersionNeed;

namespace {
ManylinuxFit fit(const std::string& arch, std::vector<ElfVersionNeed> needs) {
  return ManylinuxPolicies::get().strictest_fit(arch, needs);
}
}  // namespace

TEST(ManylinuxPolicies, LoadsBothArchitecturesStrictestFirst) {
  const auto& p = ManylinuxPolicies::get();
  ASSERT_FALSE(p.for_arch("x86_64").empty());
  ASSERT_FALSE(p.for_arch("aarch64").empty());
  EXPECT_EQ(p.for_arch("x86_64").front().name, "manylinux_2_5");
  EXPECT_EQ(p.for_arch("aarch64").front().name, "manylinux_2_17");  // no 2_5/2_12 on aarch64
  EXPECT_TRUE(p.for_arch("riscv64").empty());
  EXPECT_TRUE(p.whitelisted("libstdc++.so.6"));
  EXPECT_TRUE(p.whitelisted("libz.so.1"));
  EXPECT_FALSE(p.whitelisted("libcudart.so.13"));
  EXPECT_FALSE(p.source().empty());
}

TEST(ManylinuxPolicies, RowsMatchTheReferenceTable) {
  // shared/reference/manylinux.md, x86_64 maxima, checked against auditwheel's file.
  struct Row {
    const char* name;
    const char *glibc, *glibcxx, *cxxabi, *gcc;
  };
  for (auto r : {Row{"manylinux_2_17", "2.17", "3.4.19", "1.3.7", "4.8.0"},
                 Row{"manylinux_2_28", "2.28", "3.4.24", "1.3.11", "7.0.0"},
                 Row{"manylinux_2_31", "2.31", "3.4.28", "1.3.12", "7.0.0"},
                 Row{"manylinux_2_34", "2.34", "3.4.29", "1.3.13", "7.0.0"},
                 Row{"manylinux_2_35", "2.35", "3.4.30", "1.3.13", "12.0.0"},
                 Row{"manylinux_2_39", "2.39", "3.4.33", "1.3.15", "14.0.0"}}) {
    const ManylinuxPolicy* found = nullptr;
    for (const auto& p : ManylinuxPolicies::get().for_arch("x86_64"))
      if (p.name == r.name) found = &p;
    ASSERT_NE(found, nullptr) << r.name;
    EXPECT_EQ(found->max_version.at("GLIBC"), r.glibc) << r.name;
    EXPECT_EQ(found->max_version.at("GLIBCXX"), r.glibcxx) << r.name;
    EXPECT_EQ(found->max_version.at("CXXABI"), r.cxxabi) << r.name;
    EXPECT_EQ(found->max_version.at("GCC"), r.gcc) << r.name;
  }
}

TEST(ManylinuxPolicies, StrictestFitFollowsTheNewestNeed) {
  EXPECT_EQ(fit("x86_64", {{"libc.so.6", {"GLIBC_2.2.5", "GLIBC_2.17"}}}).tag,
            "manylinux_2_17_x86_64");
  EXPECT_EQ(fit("x86_64", {{"libc.so.6", {"GLIBC_2.2.5"}}}).tag, "manylinux_2_5_x86_64");
  auto f = fit("x86_64", {{"libc.so.6", {"GLIBC_2.34", "GLIBC_2.2.5"}},
                          {"libstdc++.so.6", {"GLIBCXX_3.4.19"}}});
  EXPECT_EQ(f.policy, "manylinux_2_34");
  ASSERT_FALSE(f.limiting.empty());
  EXPECT_EQ(f.limiting.front(), "GLIBC_2.34 (libc.so.6)");
  EXPECT_EQ(fit("x86_64", {{"libstdc++.so.6", {"GLIBCXX_3.4.30"}}}).policy, "manylinux_2_35");
  EXPECT_EQ(fit("x86_64", {{"libgcc_s.so.1", {"GCC_12.0.0"}}}).policy, "manylinux_2_35");
  // 3.4.9 is past 2_5's 3.4.8 but below 2_12's 3.4.13 numerically (as text it would not be).
  EXPECT_EQ(fit("x86_64", {{"libstdc++.so.6", {"GLIBCXX_3.4.9"}}}).policy, "manylinux_2_12");
  // Non-numeric versions: TM_1 is allowed from 2_17, GLIBC_PRIVATE never.
  EXPECT_EQ(fit("x86_64", {{"libstdc++.so.6", {"CXXABI_TM_1"}}}).policy, "manylinux_2_17");
  EXPECT_EQ(fit("x86_64", {{"libc.so.6", {"GLIBC_PRIVATE"}}}).tag, "linux_x86_64");
  // The dynamic loader's own versions do not count.
  EXPECT_EQ(fit("x86_64", {{"ld-linux-x86-64.so.2", {"GLIBC_2.35"}}}).policy, "manylinux_2_5");
  // aarch64 starts at 2_17 and its GLIBC list tops at 2.18 there.
  EXPECT_EQ(fit("aarch64", {{"libc.so.6", {"GLIBC_2.17"}}}).tag, "manylinux_2_17_aarch64");
  EXPECT_EQ(fit("aarch64", {{"libc.so.6", {"GLIBC_2.27"}}}).tag, "manylinux_2_27_aarch64");
  EXPECT_EQ(fit("ppc64le", {{"libc.so.6", {"GLIBC_2.17"}}}).tag, "linux_ppc64le");
}

TEST(ManylinuxPolicies, ParsesPlatformTagsAndAliases) {
  const auto& p = ManylinuxPolicies::get();
  auto a = p.parse_platform_tag("manylinux2014_x86_64");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->policy, "manylinux_2_17");
  EXPECT_EQ(a->arch, "x86_64");
  auto b = p.parse_platform_tag("manylinux_2_28_aarch64");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->glibc_minor, 28);
  auto c = p.parse_platform_tag("manylinux_2_30_x86_64");  // no auditwheel policy, still a claim
  ASSERT_TRUE(c);
  EXPECT_EQ(c->glibc_minor, 30);
  EXPECT_FALSE(p.parse_platform_tag("linux_x86_64"));
  EXPECT_FALSE(p.parse_platform_tag("any"));
}

TEST(CudaProviders, KnowsRuntimeWheelsAndPackages) {
  const auto& c = CudaProviders::get();
  auto cudart = c.lookup("libcudart.so.13");
  ASSERT_EQ(cudart.size(), 1u);
  EXPECT_EQ(cudart[0]->wheel, "nvidia-cuda-runtime");
  EXPECT_EQ(cudart[0]->system, "cuda-cudart-13-*");
  auto cudart12 = c.lookup("libcudart.so.12");
  ASSERT_EQ(cudart12.size(), 1u);
  EXPECT_EQ(cudart12[0]->wheel, "nvidia-cuda-runtime-cu12");
  EXPECT_EQ(c.lookup("libcudnn.so.9").size(), 3u);  // cu11, cu12 and cu13 families
  EXPECT_TRUE(c.lookup("libfoo.so.1").empty());
  EXPECT_TRUE(c.is_driver_library("libcuda.so.1"));
  EXPECT_FALSE(c.is_driver_library("libcudart.so.13"));
}
