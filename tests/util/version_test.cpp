#include "util/version.h"

#include <gtest/gtest.h>

using namespace tailor;

TEST(Version, ParsesWhatToolsPrint) {
  auto nvcc = parse_version("13.0.88");
  ASSERT_TRUE(nvcc) << nvcc.error().message;
  EXPECT_EQ(nvcc->parts, (std::vector<int>{13, 0, 88}));
  EXPECT_EQ(nvcc->major_minor(), "13.0");
  EXPECT_EQ(nvcc->patch(), 88);

  auto torch = parse_version("2.11.0+cu130");
  ASSERT_TRUE(torch) << torch.error().message;
  EXPECT_EQ(torch->parts, (std::vector<int>{2, 11, 0}));
  EXPECT_EQ(torch->local, "cu130");

  auto py = parse_version("3.12");
  ASSERT_TRUE(py);
  EXPECT_EQ(py->major(), 3);
  EXPECT_EQ(py->minor(), 12);
  EXPECT_EQ(py->patch(), 0);

  auto bare = parse_version("12");
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->major_minor(), "12.0");
}

TEST(Version, RejectsWhatIsNoVersion) {
  for (const char* text : {"", "1..2", "v1", "1.x", "1.", ".1", "2.0+", "-1", "1.2 "}) {
    auto v = parse_version(text);
    EXPECT_FALSE(v) << text;
    if (!v) {
      EXPECT_NE(v.error().message.find("is not a version"), std::string::npos) << v.error().message;
    }
  }
}

TEST(Version, ComparesNumerically) {
  EXPECT_LT(compare_versions("2.9", "2.10"), 0);
  EXPECT_GT(compare_versions("3.4.19", "3.4.9"), 0);
  EXPECT_EQ(compare_versions("13", "13.0"), 0);
  EXPECT_EQ(compare_versions("13.0.88", "13.0.88"), 0);
  EXPECT_LT(compare_versions("12.8", "13.0"), 0);
  EXPECT_EQ(compare_versions("2.11.0+cu130", "2.11.0"), 0);
  EXPECT_LT(compare_versions("2.11.0+cu130", "2.11.1+cu126"), 0);
  // Non-numeric parts count by their leading digits, none: 0 (GLIBC_PRIVATE-style tails).
  EXPECT_LT(compare_versions("2.x", "2.1"), 0);
  EXPECT_EQ(compare_versions("2.34a", "2.34"), 0);
}

TEST(Version, Major) {
  EXPECT_EQ(version_major("13.0.88"), 13);
  EXPECT_EQ(version_major("12"), 12);
  EXPECT_EQ(version_major("12.8+local"), 12);
  EXPECT_EQ(version_major(""), std::nullopt);
  EXPECT_EQ(version_major("cuda"), std::nullopt);
}
