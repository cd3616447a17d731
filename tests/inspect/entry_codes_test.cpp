// inspect reads each fatbin entry into a cuda::FatbinCode (cuda/fatbin_code.h) and groups,
// orders and judges by it: LTO IR is listed, never judged; an entry the model cannot read
// as a target is listed, and a verdict over it is an error; the names shown are formats'.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "../formats/synthetic_elf.h"
#include "cuda/fatbin_code.h"
#include "formats/fatbin.h"
#include "inspect/inspect_report.h"
#include "inspect/library_classifier.h"
#include "inspect/library_report.h"
#include "inspect/verdicts.h"

using namespace tailor;
using namespace tailor::inspect;

namespace {

static_assert(cuda::k_fatbin_kind_ptx == formats::k_fatbin_kind_ptx);
static_assert(cuda::k_fatbin_kind_cubin == formats::k_fatbin_kind_cubin);
static_assert(cuda::k_fatbin_kind_lto_ir == formats::k_fatbin_kind_lto_ir);

struct Spec {
  uint16_t kind = 2;
  uint32_t arch = 80;
  uint64_t flags = 0;  // 0x100000 `a`, 0x200000 `f`
  uint64_t payload = 64;
};

// One container of `specs`, entries as nvcc writes their headers.
std::vector<std::byte> container(const std::vector<Spec>& specs) {
  using testing_elf::Builder;
  uint64_t body = 0;
  for (const auto& s : specs) body += 64 + s.payload;
  std::vector<std::byte> c(16 + body);
  Builder::put<uint32_t>(c, 0, 0xBA55ED50);
  Builder::put<uint16_t>(c, 4, 1);
  Builder::put<uint16_t>(c, 6, 16);
  Builder::put<uint64_t>(c, 8, body);
  uint64_t at = 16;
  for (const auto& s : specs) {
    Builder::put<uint16_t>(c, at, s.kind);
    Builder::put<uint32_t>(c, at + 4, 64);
    Builder::put<uint64_t>(c, at + 8, s.payload);
    Builder::put<uint32_t>(c, at + 0x1c, s.arch);
    Builder::put<uint64_t>(c, at + 0x28, s.flags);
    Builder::put<uint64_t>(c, at + 0x38, s.payload);
    at += 64 + s.payload;
  }
  return c;
}

constexpr uint64_t k_a = 0x100000, k_f = 0x200000;

std::vector<std::string> names_of(const std::vector<TargetStats>& targets) {
  std::vector<std::string> out;
  for (const auto& t : targets) out.push_back(t.name);
  return out;
}

}  // namespace

TEST(EntryCodes, NamesAreFormatsNamesForEveryKindArchAndFlag) {
  // formats names entries in its own errors; inspect and slim show the code's name. Both
  // spellings agree for every header, a target or not.
  for (uint16_t kind : {uint16_t{0}, uint16_t{1}, uint16_t{2}, uint16_t{3}, uint16_t{4}, uint16_t{8}, uint16_t{9},
                        uint16_t{0xffff}})
    for (uint32_t arch : {0u, 9u, 10u, 50u, 75u, 90u, 100u, 121u, 999u, 1000u, std::numeric_limits<uint32_t>::max()})
      for (int flags = 0; flags < 4; ++flags) {
        formats::FatbinEntry e;
        e.kind = kind;
        e.arch = arch;
        e.arch_specific = flags & 1;
        e.family = flags & 2;
        EXPECT_EQ(cuda::fatbin_code(e).name(), e.target_name()) << kind << " " << arch << " " << flags;
      }
}

TEST(EntryCodes, LibraryTargetsGroupAndOrderByCode) {
  // Two containers; lto_100 before lto_50 and sm_100 before sm_80 in the file.
  auto section = container({{2, 100}, {8, 100, 0, 128}, {2, 80}, {1, 80}, {8, 50}});
  auto more = container({{2, 90, k_a}, {2, 80}, {8, 50}, {1, 100, k_f}, {2, 0}, {4, 75}});
  section.insert(section.end(), more.begin(), more.end());
  auto r = analyze_library(testing_elf::with_fatbin(section), "x.so");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(names_of(r->targets), (std::vector<std::string>{"sm_80", "compute_80", "sm_90a", "sm_100", "compute_100f",
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
  auto totals = target_totals({lib, lib}, 0);
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
  auto r = analyze_library(testing_elf::with_fatbin(container({{2, 90}, {8, 90}, {8, 50}})), "x.so");
  ASSERT_TRUE(r) << r.error().message;
  InspectReport report;
  InspectedLibrary lib;
  static_cast<LibraryReport&>(lib) = *r;
  lib.machine = "x86_64";
  report.libraries = {lib};
  VerdictSpecs specs;
  specs.gpu = "9.0";
  auto v = evaluate(report, specs);
  ASSERT_TRUE(v) << v.error().message;
  ASSERT_EQ(v->items.size(), 1u);
  EXPECT_TRUE(v->items[0].pass);
  EXPECT_EQ(v->items[0].via, "sm_90");
  ASSERT_EQ(v->items[0].covering.size(), 1u);  // lto_90 covers nothing

  for (const Spec& odd : {Spec{4, 90}, Spec{2, 0}, Spec{2, 90, k_a | k_f}, Spec{1, 5000}}) {
    auto bad = analyze_library(testing_elf::with_fatbin(container({{2, 90}, odd})), "y.so");
    ASSERT_TRUE(bad) << bad.error().message;  // listed as read
    InspectReport one;
    InspectedLibrary l;
    static_cast<LibraryReport&>(l) = *bad;
    l.machine = "x86_64";
    one.libraries = {l};
    auto refused = evaluate(one, specs);
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.error().message.find("y.so: unknown target '" + bad->targets.back().name + "'"),
              std::string::npos)
        << refused.error().message;
  }
}
