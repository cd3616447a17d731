// Entry selection: native SASS first, then compatible SASS of the same major, PTX only
// where nothing else runs (or when asked); a container with no code for the kept GPUs
// keeps no entry (it is emptied to its header), any other keeps at least one.
#include "slim/keep_policy.h"

#include <gtest/gtest.h>

#include "cuda/fatbin_code.h"
#include "slim/elf_slim.h"

namespace tailor::slim {
namespace {

formats::FatbinEntry entry(uint16_t kind, uint32_t arch, uint64_t bytes = 1000, bool a = false) {
  formats::FatbinEntry e;
  e.kind = kind;
  e.arch = arch;
  e.arch_specific = a;
  e.header_size = 64;
  e.stored_size = bytes;
  return e;
}
formats::FatbinEntry sass(uint32_t arch, uint64_t bytes = 1000) {
  return entry(formats::k_fatbin_kind_cubin, arch, bytes);
}
formats::FatbinEntry ptx(uint32_t arch, uint64_t bytes = 1000) {
  return entry(formats::k_fatbin_kind_ptx, arch, bytes);
}

formats::FatbinContainer container(std::vector<formats::FatbinEntry> entries) {
  formats::FatbinContainer c;
  c.entries = std::move(entries);
  return c;
}

KeepPolicy devices(std::vector<cuda::ComputeCapability> ccs,
                   PtxPolicy ptx_policy = PtxPolicy::needed) {
  KeepPolicy p;
  p.devices = std::move(ccs);
  p.ptx = ptx_policy;
  return p;
}

std::vector<bool> kept(const formats::FatbinContainer& c, const KeepPolicy& p) {
  return choose_entries(c, p).keep;
}

TEST(KeepPolicy, NativeSassOnly) {
  auto c = container({sass(75), sass(80), sass(86), sass(90), ptx(90)});
  EXPECT_EQ(kept(c, devices({{9, 0}})), (std::vector<bool>{false, false, false, true, false}));
  EXPECT_EQ(kept(c, devices({{8, 0}, {7, 5}})),
            (std::vector<bool>{true, true, false, false, false}));
}

TEST(KeepPolicy, BestCompatibleSassOfTheSameMajor) {
  auto c = container({sass(80), sass(86), ptx(80)});
  // 8.9 runs sm_86 (and sm_80); the best, sm_86, is kept.
  EXPECT_EQ(kept(c, devices({{8, 9}})), (std::vector<bool>{false, true, false}));
}

TEST(KeepPolicy, PtxWhenItIsTheOnlyCode) {
  auto c = container({sass(75), sass(80), ptx(80)});
  auto choice = choose_entries(c, devices({{9, 0}}));
  EXPECT_EQ(choice.keep, (std::vector<bool>{false, false, true}));
  EXPECT_TRUE(choice.ptx_only);
  // Asked to keep PTX: SASS and the best PTX.
  EXPECT_EQ(kept(c, devices({{8, 0}}, PtxPolicy::keep)), (std::vector<bool>{false, true, true}));
  // --drop-ptx, but PTX is the only code for 9.0: kept anyway (what runs there stays).
  EXPECT_EQ(kept(c, devices({{9, 0}}, PtxPolicy::drop)), (std::vector<bool>{false, false, true}));
}

TEST(KeepPolicy, ArchSpecificSassOnlyOnItsExactCc) {
  auto c = container({entry(formats::k_fatbin_kind_cubin, 90, 1000, true), sass(80)});
  EXPECT_EQ(kept(c, devices({{9, 0}})), (std::vector<bool>{true, false}));
  // sm_90a does not run on 10.0 and there is no PTX: nothing runs there, before either.
  auto choice = choose_entries(c, devices({{10, 0}}));
  EXPECT_TRUE(choice.no_code_for_kept);
}

TEST(KeepPolicy, NoCodeForTheKeptGpuKeepsNoEntry) {
  // sm_100, sm_120 and compute_120 run nowhere on 9.0: the container keeps nothing (emptied
  // to its header), as the CUDA runtime answers "no kernel image" for it either way.
  auto c = container({sass(100, 5000), sass(120, 300), ptx(120, 4000)});
  auto choice = choose_entries(c, devices({{9, 0}}));
  EXPECT_TRUE(choice.no_code_for_kept);
  EXPECT_FALSE(choice.whole);
  EXPECT_EQ(choice.keep, (std::vector<bool>{false, false, false}));
  EXPECT_NE(choice.note.find("no code for 9.0"), std::string::npos) << choice.note;
  EXPECT_NE(choice.note.find("it had sm_100 sm_120 compute_120"), std::string::npos) << choice.note;
  EXPECT_NE(choice.note.find("emptied to its header"), std::string::npos) << choice.note;
  // With two kept GPUs, one served: that one's entry is kept, the container is not emptied.
  auto both = choose_entries(c, devices({{9, 0}, {12, 0}}));
  EXPECT_FALSE(both.no_code_for_kept);
  EXPECT_EQ(both.keep, (std::vector<bool>{false, true, false}));
  // A container with no entries at all (one emptied before) is not emptied again.
  auto none = choose_entries(container({}), devices({{9, 0}}));
  EXPECT_FALSE(none.no_code_for_kept);
  EXPECT_TRUE(none.keep.empty());
}

TEST(KeepPolicy, KeptLtoIrOrNamedPtxKeepsAContainerFromBeingEmptied) {
  // Nothing for 9.0, but LTO IR kept (the default) or PTX named in --keep: those entries
  // stay, and the container is not "emptied".
  auto c = container({sass(100), entry(formats::k_fatbin_kind_lto_ir, 75, 500), ptx(75)});
  auto lto = choose_entries(c, devices({{7, 0}}));
  EXPECT_FALSE(lto.no_code_for_kept);
  EXPECT_TRUE(lto.lto_kept);
  EXPECT_EQ(lto.keep, (std::vector<bool>{false, true, false}));
  auto asked = devices({{7, 0}});
  asked.lto = LtoPolicy::drop;
  asked.ptx_asked.push_back(cuda::ptx({7, 5}));
  auto named = choose_entries(c, asked);
  EXPECT_FALSE(named.no_code_for_kept);
  EXPECT_EQ(named.keep, (std::vector<bool>{false, false, true}));
  // Neither: emptied.
  asked.ptx_asked.clear();
  auto emptied = choose_entries(c, asked);
  EXPECT_TRUE(emptied.no_code_for_kept);
  EXPECT_EQ(emptied.keep, (std::vector<bool>{false, false, false}));
}

TEST(KeepPolicy, UnknownKindKeepsTheContainerWhole) {
  auto c = container({sass(80), entry(7, 80)});
  auto choice = choose_entries(c, devices({{9, 0}}));
  EXPECT_TRUE(choice.whole);
  EXPECT_EQ(choice.keep, (std::vector<bool>{true, true}));
}

TEST(KeepPolicy, AnEntryThatIsNoTargetKeepsTheContainerWhole) {
  // SASS whose arch number is no CC, or with both the a and f flags: not guessed at.
  auto both = entry(formats::k_fatbin_kind_cubin, 100, 1000, true);
  both.family = true;
  for (const auto& odd : {sass(0), sass(5), ptx(100000), both}) {
    auto choice = choose_entries(container({sass(90), odd}), devices({{9, 0}}));
    EXPECT_TRUE(choice.whole) << cuda::fatbin_code(odd).name();
    EXPECT_EQ(choice.keep, (std::vector<bool>{true, true}));
    EXPECT_NE(choice.note.find("an entry of kind " + std::to_string(odd.kind) +
                               " that this tool does not read"),
              std::string::npos)
        << choice.note;
  }
}

TEST(KeepPolicy, LtoIrIsKeptAsideFromTheChoiceUnlessDropped) {
  // LTO IR is not a reason to keep a container whole, nor code for a GPU: the SASS and PTX
  // are chosen as without it, and the IR is kept (or dropped) as a whole.
  auto c = container({sass(80), sass(90), entry(formats::k_fatbin_kind_lto_ir, 50), ptx(90)});
  auto choice = choose_entries(c, devices({{9, 0}}));
  EXPECT_FALSE(choice.whole);
  EXPECT_TRUE(choice.lto_kept);
  EXPECT_EQ(choice.keep, (std::vector<bool>{false, true, true, false}));
  auto drop = devices({{9, 0}});
  drop.lto = LtoPolicy::drop;
  EXPECT_EQ(kept(c, drop), (std::vector<bool>{false, true, false, false}));
  EXPECT_NE(drop.describe().find("LTO IR dropped"), std::string::npos);
  // LTO IR alone, dropped: nothing is left, the container is emptied to its header.
  auto only = container({entry(formats::k_fatbin_kind_lto_ir, 50, 500),
                         entry(formats::k_fatbin_kind_lto_ir, 75, 100)});
  auto emptied = choose_entries(only, drop);
  EXPECT_TRUE(emptied.no_code_for_kept);
  EXPECT_EQ(emptied.keep, (std::vector<bool>{false, false}));
  EXPECT_NE(emptied.note.find(
                "no code for 9.0 before either (it had lto_50 lto_75): emptied to its header"),
            std::string::npos)
      << emptied.note;
  EXPECT_EQ(kept(only, devices({{9, 0}})), (std::vector<bool>{true, true}));
}

TEST(KeepPolicy, ExplicitPtxTargetsAreKept) {
  auto c = container({sass(90), ptx(90), ptx(80)});
  auto p = devices({{9, 0}}, PtxPolicy::drop);
  p.ptx_asked.push_back(cuda::ptx({8, 0}));
  EXPECT_EQ(kept(c, p), (std::vector<bool>{true, false, true}));
}

TEST(KeepPolicy, WhyKeptNamesTheGpusAndHow) {
  auto p = devices({{8, 6}, {8, 9}, {10, 0}});
  EXPECT_EQ(why_kept(cuda::sass({8, 6}), p), "runs on 8.6; runs on 8.9 as compatible SASS");
  EXPECT_EQ(why_kept(cuda::ptx({9, 0}), p), "runs on 10.0 through PTX JIT");
  EXPECT_EQ(why_kept(cuda::ptx({12, 0}), p), "named in --keep");
}

TEST(KeepPolicy, PolicyFromArchSpelling) {
  cuda::TargetSet t;
  t.add(cuda::sass({8, 6}));
  t.add(cuda::ptx({9, 0}));
  auto p = keep_policy_for(t, PtxPolicy::needed);
  EXPECT_EQ(p.devices, (std::vector<cuda::ComputeCapability>{{8, 6}, {9, 0}}));
  ASSERT_EQ(p.ptx_asked.size(), 1u);
  EXPECT_EQ(p.ptx_asked[0].name(), "compute_90");
}

}  // namespace
}  // namespace tailor::slim

TEST(AddLeft, RowsSumPerCodeAndFollowTheCanonicalOrderNotTheText) {
  using tailor::slim::LeftReason;
  using tailor::slim::TargetLeft;
  auto code = [](std::string_view name) {  // "sm_120" -> kind SASS, arch 120
    const bool ptx = name.starts_with("compute_");
    return tailor::cuda::FatbinCode{
        ptx ? tailor::cuda::k_fatbin_kind_ptx : tailor::cuda::k_fatbin_kind_cubin,
        static_cast<uint32_t>(std::stoul(std::string(name.substr(ptx ? 8 : 3))))};
  };
  std::vector<TargetLeft> rows;
  for (const char* n : {"sm_120", "compute_90", "sm_75", "sm_90", "sm_120"})
    tailor::slim::add_left(rows, {n, LeftReason::runs, "", 10, 1, code(n)});
  std::vector<std::string> names;
  for (const auto& r : rows) names.push_back(r.target);
  // As text, compute_90 < sm_120 < sm_75: the order a user reads is by capability.
  EXPECT_EQ(names, (std::vector<std::string>{"sm_75", "sm_90", "compute_90", "sm_120"}));
  EXPECT_EQ(rows.back().bytes, 20u);
  EXPECT_EQ(rows.back().entries, 2u);
}
