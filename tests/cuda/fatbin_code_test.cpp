// The one conversion from a fatbin entry's header fields to a CudaTarget: every kind, the
// a/f flags, LTO IR (never a target), unknown kinds and arch numbers that are no CC.
#include "cuda/fatbin_code.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

using namespace tailor::cuda;

namespace {

FatbinCode code(uint16_t kind, uint32_t arch, bool a = false, bool f = false) {
  return {kind, arch, a, f};
}

}  // namespace

TEST(FatbinCode, CubinIsSassAndPtxIsPtx) {
  auto t = code(k_fatbin_kind_cubin, 90).target();
  ASSERT_TRUE(t);
  EXPECT_EQ(*t, sass({9, 0}));
  EXPECT_EQ(code(k_fatbin_kind_cubin, 90).name(), "sm_90");
  EXPECT_EQ(code(k_fatbin_kind_ptx, 120).target(), ptx({12, 0}));
  EXPECT_EQ(code(k_fatbin_kind_ptx, 120).name(), "compute_120");
  // The last digit is the minor, as nvcc spells it.
  EXPECT_EQ(code(k_fatbin_kind_cubin, 121).target(), sass({12, 1}));
  EXPECT_EQ(code(k_fatbin_kind_cubin, 75).target(), sass({7, 5}));
  EXPECT_EQ(code(k_fatbin_kind_cubin, 10).target(), sass({1, 0}));
  EXPECT_FALSE(code(k_fatbin_kind_cubin, 90).is_lto_ir());
}

TEST(FatbinCode, ArchSpecificAndFamilyFlags) {
  EXPECT_EQ(code(k_fatbin_kind_cubin, 90, true).target(), sass({9, 0}, ArchVariant::a));
  EXPECT_EQ(code(k_fatbin_kind_cubin, 90, true).name(), "sm_90a");
  EXPECT_EQ(code(k_fatbin_kind_ptx, 100, false, true).target(), ptx({10, 0}, ArchVariant::f));
  EXPECT_EQ(code(k_fatbin_kind_ptx, 100, false, true).name(), "compute_100f");
  // Both at once is no variant the model (or nvcc) knows: no target, shown as read.
  EXPECT_FALSE(code(k_fatbin_kind_cubin, 100, true, true).target());
  EXPECT_EQ(code(k_fatbin_kind_cubin, 100, true, true).name(), "sm_100af");
}

TEST(FatbinCode, LtoIrIsNeverATarget) {
  for (uint32_t arch : {50u, 75u, 90u, 100u}) {
    auto c = code(k_fatbin_kind_lto_ir, arch);
    EXPECT_TRUE(c.is_lto_ir()) << arch;
    EXPECT_FALSE(c.target()) << arch;
    EXPECT_EQ(c.name(), "lto_" + std::to_string(arch));
  }
  EXPECT_EQ(code(k_fatbin_kind_lto_ir, 100, true).name(), "lto_100a");
  EXPECT_FALSE(code(k_fatbin_kind_lto_ir, 100, true).target());
  EXPECT_TRUE(code(k_fatbin_kind_lto_ir, 0).is_lto_ir());
}

TEST(FatbinCode, UnknownKindsAreNoTarget) {
  for (uint16_t kind :
       {uint16_t{0}, uint16_t{3}, uint16_t{4}, uint16_t{7}, uint16_t{9}, uint16_t{0xffff}}) {
    auto c = code(kind, 80);
    EXPECT_FALSE(c.target()) << kind;
    EXPECT_FALSE(c.is_lto_ir()) << kind;
    EXPECT_EQ(c.name(), "kind" + std::to_string(kind) + "_80");
  }
}

TEST(FatbinCode, ArchNumbersThatAreNoCcAreNoTarget) {
  const uint32_t bad[] = {0,     1,           9,           k_max_fatbin_arch + 1,
                          99999, 2147483647u, 2147483648u, std::numeric_limits<uint32_t>::max()};
  for (uint16_t kind : {k_fatbin_kind_cubin, k_fatbin_kind_ptx})
    for (uint32_t arch : bad) {
      auto c = code(kind, arch);
      EXPECT_FALSE(c.target()) << kind << " " << arch;
      EXPECT_FALSE(c.is_lto_ir());
      EXPECT_EQ(c.name(),
                (kind == k_fatbin_kind_cubin ? "sm_" : "compute_") + std::to_string(arch));
    }
  EXPECT_EQ(code(k_fatbin_kind_cubin, k_max_fatbin_arch).target(), sass({99, 9}));
}

TEST(FatbinCode, CanonicalOrderTargetsThenLtoIrThenTheRest) {
  std::vector<FatbinCode> codes = {
      code(9, 75),                          // an unknown kind
      code(k_fatbin_kind_lto_ir, 100),      // lto_100
      code(k_fatbin_kind_cubin, 0),         // sm_0: no target
      code(k_fatbin_kind_ptx, 90),          // compute_90
      code(k_fatbin_kind_cubin, 100),       // sm_100
      code(k_fatbin_kind_lto_ir, 50),       // lto_50
      code(k_fatbin_kind_cubin, 90, true),  // sm_90a
      code(k_fatbin_kind_cubin, 90),        // sm_90
      code(k_fatbin_kind_cubin, 80),        // sm_80
      code(4, 75),                          // another unknown kind
  };
  std::sort(codes.begin(), codes.end());
  std::vector<std::string> names;
  for (const auto& c : codes) names.push_back(c.name());
  // Numbers, not text: sm_80 < sm_100 and lto_50 < lto_100.
  EXPECT_EQ(names, (std::vector<std::string>{"sm_80", "sm_90", "compute_90", "sm_90a", "sm_100",
                                             "lto_50", "lto_100", "sm_0", "kind4_75", "kind9_75"}));
  EXPECT_EQ(code(k_fatbin_kind_cubin, 90), code(k_fatbin_kind_cubin, 90));
  EXPECT_NE(code(k_fatbin_kind_cubin, 90), code(k_fatbin_kind_cubin, 90, true));
  EXPECT_EQ(code(k_fatbin_kind_cubin, 90) <=> code(k_fatbin_kind_cubin, 90),
            std::strong_ordering::equal);
}

TEST(FatbinCode, CopiedFromAnyEntryWithTheHeaderFields) {
  struct Entry {  // formats::FatbinEntry's fields, as formats reads them
    uint16_t kind = 0;
    uint32_t arch = 0;
    bool arch_specific = false, family = false;
    uint64_t header_offset = 0;
  };
  Entry e;
  e.kind = k_fatbin_kind_cubin;
  e.arch = 100;
  e.family = true;
  EXPECT_EQ(fatbin_code(e), code(k_fatbin_kind_cubin, 100, false, true));
  EXPECT_EQ(fatbin_code(e).target(), sass({10, 0}, ArchVariant::f));
}
