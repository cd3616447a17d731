#include "cuda/cuda_target.h"

#include <gtest/gtest.h>

#include "cuda/target_set.h"

using namespace tailor::cuda;

TEST(ComputeCapability, ParsesDottedForms) {
  struct Case {
    const char* text;
    int major, minor;
    const char* str;
    int number;
  };
  for (auto c : {Case{"9.0", 9, 0, "9.0", 90}, Case{"12.1", 12, 1, "12.1", 121},
                 Case{"7.5", 7, 5, "7.5", 75}}) {
    auto cc = parse_compute_capability(c.text);
    ASSERT_TRUE(cc) << c.text;
    EXPECT_EQ(cc->major, c.major);
    EXPECT_EQ(cc->minor, c.minor);
    EXPECT_EQ(cc->str(), c.str);
    EXPECT_EQ(cc->number(), c.number);
  }
  for (const char* bad : {"", "9", "9.", ".0", "9.10", "x.0", "0.5", "9.0a", "1234.0"})
    EXPECT_FALSE(parse_compute_capability(bad)) << bad;
}

TEST(ComputeCapability, FromDigitsTakesLastDigitAsMinor) {
  EXPECT_EQ(compute_capability_from_digits("90")->str(), "9.0");
  EXPECT_EQ(compute_capability_from_digits("121")->str(), "12.1");
  EXPECT_EQ(compute_capability_from_digits("100")->str(), "10.0");
  EXPECT_FALSE(compute_capability_from_digits("9"));
  EXPECT_FALSE(compute_capability_from_digits("09"));
  EXPECT_FALSE(compute_capability_from_digits("9a"));
}

TEST(CudaTarget, CanonicalNamesRoundTrip) {
  for (const char* name :
       {"sm_75", "sm_90a", "compute_90", "sm_100f", "compute_120a", "sm_121", "sm_30"}) {
    auto t = parse_target_name(name);
    ASSERT_TRUE(t) << name;
    EXPECT_EQ(t->name(), name);
  }
  auto t = parse_target_name("sm_90a");
  EXPECT_EQ(t->kind, TargetKind::sass);
  EXPECT_EQ(t->variant, ArchVariant::a);
  EXPECT_EQ(t->cc, (ComputeCapability{9, 0}));
  EXPECT_EQ(parse_target_name("compute_100f")->kind, TargetKind::ptx);
  for (const char* bad : {"sm75", "SM_75", "sm_", "sm_9", "compute_90x", "lto_90", "sm_90aa", "75"})
    EXPECT_FALSE(parse_target_name(bad)) << bad;
}

TEST(TargetSet, SortedUniqueInReadingOrder) {
  TargetSet s({ptx({8, 6}), sass({9, 0}, ArchVariant::a), sass({8, 6}), sass({8, 0}), sass({8, 6}),
               sass({9, 0})});
  EXPECT_EQ(s.names(),
            (std::vector<std::string>{"sm_80", "sm_86", "compute_86", "sm_90", "sm_90a"}));
  EXPECT_TRUE(s.contains(sass({9, 0}, ArchVariant::a)));
  EXPECT_FALSE(s.contains(ptx({9, 0})));
  s.add(ptx({7, 5}));
  EXPECT_EQ(s.names().front(), "compute_75");
  EXPECT_EQ(s.capabilities().size(), 4u);
}
