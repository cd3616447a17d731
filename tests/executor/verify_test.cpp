// Verification of a wheel's targets: exactly what was asked, plus what the recipe says
// the package adds by design (named), over the cuda module's types.
#include "executor/verify.h"

#include <gtest/gtest.h>

using namespace tailor;
using namespace tailor::executor;
using namespace tailor::cache;

namespace {

cuda::TargetSet set_of(std::initializer_list<const char*> names) {
  cuda::TargetSet s;
  for (const char* n : names) {
    auto t = cuda::parse_target_name(n);
    EXPECT_TRUE(t) << n;
    if (t) s.add(*t);
  }
  return s;
}

LibraryTargets lib(std::string path, std::initializer_list<const char*> names) {
  LibraryTargets l;
  l.path = std::move(path);
  l.has_device_code = names.size() > 0;
  l.targets = set_of(names);
  for (const char* n : names) l.bytes_per_target[n] = 10;
  return l;
}

/// What bitsandbytes' recipe declares for a request.
std::vector<plan::PackageAddition> bnb_additions(const cuda::TargetSet& requested) {
  plan::VerifyPolicy policy;
  policy.ptx_of_highest = true;
  return plan::package_additions("bitsandbytes", policy, requested);
}

}  // namespace

TEST(Verify, ExactTargetsPass) {
  std::vector<LibraryTargets> libs = {lib("fused_ops/_C.cpython-311-x86_64-linux-gnu.so", {"sm_75"}),
                                      {"fused_ops/helper.so", false, {}, {}}};
  auto v = compare_targets(libs, set_of({"sm_75"}));
  EXPECT_TRUE(v.ok());
  EXPECT_EQ(v.libraries.size(), 1u);  // only libraries with device code are judged
  EXPECT_EQ(v.bytes_per_target.at("sm_75"), 10u);
  EXPECT_EQ(v.summary(), "exactly sm_75 in every library with device code");
}

TEST(Verify, MissingAndExtraTargetsFail) {
  std::vector<LibraryTargets> libs = {lib("a.so", {"sm_80", "sm_90"}), lib("b.so", {"sm_90", "compute_90"})};
  auto v = compare_targets(libs, set_of({"sm_90"}));
  EXPECT_FALSE(v.ok());
  ASSERT_EQ(v.libraries.size(), 2u);
  EXPECT_EQ(v.libraries[0].unexpected.names(), std::vector<std::string>{"sm_80"});
  EXPECT_EQ(v.libraries[1].unexpected.names(), std::vector<std::string>{"compute_90"});
  EXPECT_EQ(v.bytes_per_target.at("sm_90"), 20u);
  EXPECT_NE(v.describe_problems().find("a.so: unexpected sm_80 (asked for sm_90)"), std::string::npos)
      << v.describe_problems();
}

TEST(Verify, MissingTargetSaysHowThatGpuWouldStillRun) {
  // coverage_on: a 9.0 GPU runs compute_80 PTX by JIT; a 10.0 GPU has nothing without it.
  auto v = compare_targets({lib("a.so", {"sm_80", "compute_80"})}, set_of({"sm_80", "compute_80", "sm_90"}));
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.libraries[0].missing.names(), std::vector<std::string>{"sm_90"});
  EXPECT_NE(v.describe_problems().find("missing sm_90 (9.0: PTX JIT via compute_80)"), std::string::npos)
      << v.describe_problems();
  auto none = compare_targets({lib("a.so", {"sm_80"})}, set_of({"sm_80", "sm_100"}));
  EXPECT_NE(none.describe_problems().find("missing sm_100 (10.0: no kernel image)"), std::string::npos)
      << none.describe_problems();
}

TEST(Verify, NumericOrderNotTextOrder) {
  // As text "sm_100" < "sm_80"; as targets 8.0 < 10.0. Both the expected list and the
  // differences come out in CC order, and the highest target is 10.0.
  auto asked = set_of({"sm_100", "sm_80", "sm_90"});
  auto v = compare_targets({lib("a.so", {"sm_80"})}, asked);
  EXPECT_EQ(v.expected, (std::vector<std::string>{"sm_80", "sm_90", "sm_100"}));
  EXPECT_EQ(v.libraries[0].missing.names(), (std::vector<std::string>{"sm_90", "sm_100"}));
  auto adds = bnb_additions(asked);
  ASSERT_EQ(adds.size(), 1u);
  EXPECT_EQ(adds[0].target.name(), "compute_100");  // not compute_90
}

TEST(Verify, DeclaredPtxOfHighestPassesAndIsNamed) {
  // bitsandbytes asked for 9.0: its CMakeLists.txt adds compute_90.
  auto asked = set_of({"sm_90"});
  auto v = compare_targets({lib("bitsandbytes/libbitsandbytes_cuda130.so", {"sm_90", "compute_90"})}, asked,
                           bnb_additions(asked));
  EXPECT_TRUE(v.ok()) << v.describe_problems();
  ASSERT_EQ(v.describe_additions().size(), 1u);
  EXPECT_EQ(v.describe_additions()[0].rfind("compute_90 added by bitsandbytes' build (PTX of the highest target)", 0),
            0u)
      << v.describe_additions()[0];
  EXPECT_NE(v.summary().find("exactly sm_90 in every library with device code; compute_90 added by bitsandbytes"),
            std::string::npos)
      << v.summary();

  // Several targets: only the highest's PTX is declared.
  auto many = set_of({"sm_75", "sm_80", "sm_100"});
  auto ok = compare_targets({lib("l.so", {"sm_75", "sm_80", "sm_100", "compute_100"})}, many, bnb_additions(many));
  EXPECT_TRUE(ok.ok()) << ok.describe_problems();
}

TEST(Verify, DeclaredAdditionIsNotRequired) {
  // A release that does not add it still passes, and nothing is named.
  auto asked = set_of({"sm_90"});
  auto v = compare_targets({lib("l.so", {"sm_90"})}, asked, bnb_additions(asked));
  EXPECT_TRUE(v.ok());
  EXPECT_TRUE(v.describe_additions().empty());
  EXPECT_EQ(v.summary(), "exactly sm_90 in every library with device code");
}

TEST(Verify, UndeclaredExtraStillFails) {
  auto asked = set_of({"sm_80", "sm_90"});
  // PTX of a lower target is not what bitsandbytes declares.
  auto v = compare_targets({lib("l.so", {"sm_80", "sm_90", "compute_80"})}, asked, bnb_additions(asked));
  EXPECT_FALSE(v.ok());
  EXPECT_EQ(v.libraries[0].unexpected.names(), std::vector<std::string>{"compute_80"});
  EXPECT_NE(v.describe_problems().find("the package adds compute_90"), std::string::npos) << v.describe_problems();
  // Nor is SASS of a target not asked for.
  auto sass = compare_targets({lib("l.so", {"sm_80", "sm_90", "compute_90", "sm_86"})}, asked, bnb_additions(asked));
  EXPECT_FALSE(sass.ok());
  EXPECT_EQ(sass.libraries[0].unexpected.names(), std::vector<std::string>{"sm_86"});
  EXPECT_EQ(sass.libraries[0].package_added.names(), std::vector<std::string>{"compute_90"});
}

TEST(Verify, MissingTargetFailsEvenWithTheAddition) {
  auto asked = set_of({"sm_80", "sm_90"});
  auto v = compare_targets({lib("l.so", {"sm_80", "compute_90"})}, asked, bnb_additions(asked));
  EXPECT_FALSE(v.ok());
  EXPECT_EQ(v.libraries[0].missing.names(), std::vector<std::string>{"sm_90"});
  EXPECT_TRUE(v.libraries[0].unexpected.empty());
}

TEST(Verify, NoDeviceCodeAtAllFails) {
  auto v = compare_targets({{"a.so", false, {}, {}}}, set_of({"sm_75"}));
  EXPECT_FALSE(v.ok());
  EXPECT_NE(v.describe_problems().find("no library"), std::string::npos);
}
