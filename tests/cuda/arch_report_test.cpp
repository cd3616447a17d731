#include "cuda/arch_report.h"

#include <gtest/gtest.h>

#include "cuda/arch_spec.h"
#include "util/strings.h"

using namespace tailor::cuda;

TEST(ArchReport, VersionsDevicesAndCheck) {
  auto set = parse_arch_spec("6.0");
  ASSERT_TRUE(set);
  auto check = NvccCheck{*nvcc_capabilities_from_table("13.0"), "", {}};
  ArchReport r = make_arch_report(*set, check);
  EXPECT_EQ(tailor::join(to_strings(r.cuda_versions_that_build), " "),
            "11.8 12.0 12.1 12.2 12.3 12.4 12.5 12.6 12.8 12.9");
  ASSERT_TRUE(r.nvcc_check);
  EXPECT_EQ(tailor::join(r.nvcc_check->problems, "|"),
            "CUDA 13.0 cannot target sm_60; its lowest is 7.5 (sm_75)");
  ASSERT_EQ(r.spellings.size(), 5u);
  EXPECT_EQ(r.spellings[0].text, "6.0");
  EXPECT_EQ(r.spellings[1].text, "60-real");
  std::vector<std::string> runs;
  for (const auto& d : r.devices)
    if (d.coverage.mode != RunMode::none) runs.push_back(d.capability.cc.str());
  EXPECT_EQ(tailor::join(runs, " "), "6.0 6.1");  // not 6.2: Tegra
  EXPECT_EQ(r.devices.size(), known_capabilities().size());
}

TEST(ArchReport, NothingBuildsATargetNoTableHas) {
  auto set = parse_arch_spec("3.5;sm_110");
  ASSERT_TRUE(set);
  ArchReport r = make_arch_report(*set, std::nullopt);
  EXPECT_TRUE(r.cuda_versions_that_build.empty());
  EXPECT_FALSE(r.nvcc_check);
}
