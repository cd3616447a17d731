#include "build/verify.h"

#include <gtest/gtest.h>

using namespace tailor::build;

TEST(Verify, ExactTargetsPass) {
  std::vector<LibraryTargets> libs = {
      {"fused_ops/_C.cpython-311-x86_64-linux-gnu.so", true, {"sm_75"}, {{"sm_75", 1000}}},
      {"fused_ops/helper.so", false, {}, {}},
  };
  auto v = compare_targets(libs, {"sm_75"});
  EXPECT_TRUE(v.ok());
  EXPECT_EQ(v.libraries.size(), 1u);  // only libraries with device code are judged
  EXPECT_EQ(v.bytes_per_target.at("sm_75"), 1000u);
}

TEST(Verify, MissingAndExtraTargetsFail) {
  std::vector<LibraryTargets> libs = {
      {"a.so", true, {"sm_80", "sm_90"}, {{"sm_80", 10}, {"sm_90", 20}}},
      {"b.so", true, {"sm_90", "compute_90"}, {{"sm_90", 5}, {"compute_90", 7}}},
  };
  auto v = compare_targets(libs, {"sm_90", "sm_90"});
  EXPECT_FALSE(v.ok());
  ASSERT_EQ(v.libraries.size(), 2u);
  EXPECT_EQ(v.libraries[0].unexpected, std::vector<std::string>{"sm_80"});
  EXPECT_EQ(v.libraries[1].unexpected, std::vector<std::string>{"compute_90"});
  EXPECT_EQ(v.bytes_per_target.at("sm_90"), 25u);
  EXPECT_NE(v.describe_problems().find("a.so: unexpected sm_80 (asked for sm_90)"), std::string::npos);

  auto missing = compare_targets(libs, {"sm_80", "sm_90", "sm_100"});
  EXPECT_EQ(missing.libraries[0].missing, std::vector<std::string>{"sm_100"});
}

TEST(Verify, NoDeviceCodeAtAllFails) {
  auto v = compare_targets({{"a.so", false, {}, {}}}, {"sm_75"});
  EXPECT_FALSE(v.ok());
  EXPECT_NE(v.describe_problems().find("no library"), std::string::npos);
}
