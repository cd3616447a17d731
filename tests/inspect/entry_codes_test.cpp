// inspect reads each fatbin entry into a cuda::FatbinCode (cuda/fatbin_code.h) and groups,
// orders and judges by it: LTO IR is listed, never judged; an entry the model cannot read
// as a target is listed, and a verdict over it is an error; the names shown are the code's.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "../formats/synthetic_elf.h"
#include "cuda/fatbin_code.h"
#include "formats/fatbin.h"
#include "inspect/inspect_report.h"
#include "inspect/library_classifier.h"
#include "inspect/library_report.h"
#include "inspect/verdicts.h"
#include "support/fatbin_writer.h"

using namespace tailor;
using namespace tailor::inspect;

namespace {

static_assert(cuda::k_fatbin_kind_ptx == formats::k_fatbin_kind_ptx);
static_assert(cuda::k_fatbin_kind_cubin == formats::k_fatbin_kind_cubin);
static_assert(cuda::k_fatbin_kind_lto_ir == formats::k_fatbin_kind_lto_ir);

using Spec = test::FatbinEntrySpec;
using test::fatbin_container;
constexpr uint64_t k_a = test::k_entry_arch_specific, k_f = test::k_entry_family;

std::vector<std::string> names_of(const std::vector<TargetStats>& targets) {
  std::vector<std::string> out;
  for (const auto& t : targets) out.push_back(t.name);
  return out;
}

}  // namespace

TEST(EntryCodes, LibraryTargetsGroupAndOrderByCode) {
  // Two containers; lto_100 before lto_50 and sm_100 before sm_80 in the file.
  auto section = fatbin_container({{2, 100}, {8, 100, 128}, {2, 80}, {1, 80}, {8, 50}});
  auto more =
      fatbin_container({{2, 90, 64, k_a}, {2, 80}, {8, 50}, {1, 100, 64, k_f}, {2, 0}, {4, 75}});
  section.insert(section.end(), more.begin(), more.end());
  auto r = analyze_library(testing_elf::with_fatbin(section), "x.so");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(names_of(r->targets),
            (std::vector<std::string>{"sm_80", "compute_80", "sm_90a", "sm_100", "compute_100f",
                                      "lto_50", "lto_100", "sm_0", "kind4_75"}));
  const TargetStats& sm80 = r->targets[0];
  EXPECT_EQ(sm80.code, (cuda::FatbinCode{2, 80, false, false}));
  EXPECT_EQ(sm80.entries, 2u);
  EXPECT_EQ(r->targets[2].code.target(), cuda::sass({9, 0}, cuda::ArchVariant::a));
  EXPECT_EQ(r->targets[4].code.target(), cuda::ptx({10, 0}, cuda::ArchVariant::f));
  const TargetStats& lto50 = r->targets[5];
  EXPECT_TRUE(lto50.code.is_lto_ir());
  EXPECT_FALSE(lto50.code.target());
  EXPECT_EQ(lto50.entries, 2u);
  EXPECT_EQ(r->targets[6].stored_bytes, 128u);
  for (const auto& t : r->targets) EXPECT_EQ(t.name, t.code.name());

  // Wheel totals and the union over inputs keep the same order.
  InspectedLibrary lib;
  static_cast<LibraryReport&>(lib) = *r;
  auto totals = target_totals({lib, lib}, {}, 0);
  ASSERT_EQ(totals.size(), r->targets.size());
  for (size_t i = 0; i < totals.size(); ++i) {
    EXPECT_EQ(totals[i].code, r->targets[i].code);
    EXPECT_EQ(totals[i].name, r->targets[i].name);
    EXPECT_EQ(totals[i].libraries, 2u);
  }
  InspectReport report;
  report.libraries = {lib};
  EXPECT_EQ(report.targets_union(), names_of(r->targets));
}

TEST(EntryCodes, VerdictsSkipLtoIrAndRefuseWhatIsNoTarget) {
  auto r = analyze_library(testing_elf::with_fatbin(fatbin_container({{2, 90}, {8, 90}, {8, 50}})),
                           "x.so");
  ASSERT_TRUE(r) << r.error().message;
  InspectReport report;
  InspectedLibrary lib;
  static_cast<LibraryReport&>(lib) = *r;
  lib.machine = "x86_64";
  report.libraries = {lib};
  VerdictSpecs specs;
  specs.gpu = {"9.0"};
  auto v = evaluate(report, specs);
  ASSERT_TRUE(v) << v.error().message;
  ASSERT_EQ(v->items.size(), 1u);
  EXPECT_TRUE(v->items[0].pass);
  EXPECT_EQ(v->items[0].via, "sm_90");
  ASSERT_EQ(v->items[0].covering.size(), 1u);  // lto_90 covers nothing

  for (const Spec& odd : {Spec{4, 90}, Spec{2, 0}, Spec{2, 90, 64, k_a | k_f}, Spec{1, 5000}}) {
    auto bad = analyze_library(testing_elf::with_fatbin(fatbin_container({{2, 90}, odd})), "y.so");
    ASSERT_TRUE(bad) << bad.error().message;  // listed as read
    InspectReport one;
    InspectedLibrary l;
    static_cast<LibraryReport&>(l) = *bad;
    l.machine = "x86_64";
    one.libraries = {l};
    auto refused = evaluate(one, specs);
    ASSERT_FALSE(refused);
    EXPECT_NE(
        refused.error().message.find("y.so: unknown target '" + bad->targets.back().name + "'"),
        std::string::npos)
        << refused.error().message;
  }
}
