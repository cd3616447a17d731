// slim_elf on nvcc-built libraries: what it keeps, how the file is cut, that the result
// parses to exactly the kept entries, and what it does with layouts it must not move.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <map>

#include "formats/elf.h"
#include "formats/fatbin.h"
#include "slim/elf_slim.h"
#include "support/fixtures.h"

namespace tailor::slim {
namespace {

using test::fixture;
using test::slurp;

KeepPolicy keep(cuda::ComputeCapability cc, PtxPolicy ptx = PtxPolicy::needed) {
  KeepPolicy p;
  p.devices = {cc};
  p.ptx = ptx;
  return p;
}

// Runs slim_elf into a memfd and returns the written bytes.
std::vector<std::byte> slim_to_memory(const std::vector<std::byte>& in, const KeepPolicy& p, LibrarySlim& out) {
  int fd = ::memfd_create("slim", 0);
  EXPECT_GE(fd, 0);
  auto r = slim_elf(Bytes(in.data(), in.size()), p, fd);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message);
  if (!r) return {};
  out = *r;
  std::vector<std::byte> bytes(static_cast<size_t>(::lseek(fd, 0, SEEK_END)));
  EXPECT_EQ(::pread(fd, bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
  ::close(fd);
  return bytes;
}

std::vector<std::string> targets_in(const std::vector<std::byte>& file) {
  Bytes b(file.data(), file.size());
  auto elf = formats::parse_elf(b);
  EXPECT_TRUE(elf.has_value());
  std::vector<std::string> names;
  if (!elf) return names;
  const auto* fat = elf->find(".nv_fatbin");
  if (!fat) return names;
  auto containers = formats::parse_fatbin_section(*formats::section_bytes(b, *fat), fat->offset);
  EXPECT_TRUE(containers.has_value());
  if (!containers) return names;
  for (const auto& c : *containers)
    for (const auto& e : c.entries)
      if (std::find(names.begin(), names.end(), e.target_name()) == names.end()) names.push_back(e.target_name());
  std::sort(names.begin(), names.end());
  return names;
}

// Entries per target in both device code sections (.nv_fatbin and __nv_relfatbin): what
// `inspect` finds in the file.
std::map<std::string, uint32_t> entries_in(const std::vector<std::byte>& file) {
  Bytes b(file.data(), file.size());
  std::map<std::string, uint32_t> count;
  auto elf = formats::parse_elf(b);
  EXPECT_TRUE(elf.has_value());
  if (!elf) return count;
  for (const char* name : {".nv_fatbin", "__nv_relfatbin"}) {
    const auto* section = elf->find(name);
    if (!section) continue;
    auto containers = formats::parse_fatbin_section(*formats::section_bytes(b, *section), section->offset);
    EXPECT_TRUE(containers.has_value());
    if (!containers) continue;
    for (const auto& c : *containers)
      for (const auto& e : c.entries) ++count[e.target_name()];
  }
  return count;
}

// The same count from the result's account of what is left.
std::map<std::string, uint32_t> entries_left(const LibrarySlim& r) {
  std::map<std::string, uint32_t> count;
  for (const auto& t : r.left) count[t.target] += t.entries;
  return count;
}

const TargetLeft* find_left(const LibrarySlim& r, const std::string& target, LeftReason reason) {
  for (const auto& t : r.left)
    if (t.target == target && t.reason == reason) return &t;
  return nullptr;
}

class ElfSlim : public ::testing::Test {
protected:
  void SetUp() override {
    if (!std::filesystem::exists(fixture("slim_multi"))) GTEST_SKIP() << fixture("slim_multi") << " not built (no nvcc)";
    input = slurp(fixture("slim_multi"));
  }
  std::vector<std::byte> input;
};

TEST_F(ElfSlim, KeepsExactlyTheChosenTargetsAndCutsTheFile) {
  LibrarySlim r;
  auto out = slim_to_memory(input, keep({8, 0}), r);
  EXPECT_EQ(r.outcome, SlimOutcome::slimmed);
  EXPECT_TRUE(r.packed);
  EXPECT_TRUE(r.split);
  EXPECT_EQ(r.containers, 3u);
  EXPECT_EQ(targets_in(out), (std::vector<std::string>{"sm_80"}));
  EXPECT_EQ(out.size(), r.size_after);
  const uint64_t shrunk = input.size() - out.size();
  EXPECT_LE(shrunk, r.removed_bytes());
  EXPECT_GE(shrunk + 2 * 4096, r.removed_bytes());
  EXPECT_EQ(shrunk % 4096, 0u);
  // Per target: what went and what stayed add up to what was there.
  uint64_t kept = 0, removed = 0;
  for (const auto& t : r.targets) {
    kept += t.kept_bytes;
    removed += t.removed_bytes;
    if (t.target == "sm_80") EXPECT_EQ(t.removed, 0u);
    else EXPECT_EQ(t.kept, 0u) << t.target;
  }
  EXPECT_EQ(kept, r.device_after);
  EXPECT_EQ(kept + removed, r.device_before);
}

TEST_F(ElfSlim, KeptTargetsSayWhichGpuRunsThem) {
  LibrarySlim r;
  slim_to_memory(input, keep({8, 6}), r);
  ASSERT_EQ(r.left.size(), 1u);
  EXPECT_EQ(r.left[0].target, "sm_80");
  EXPECT_EQ(r.left[0].reason, LeftReason::runs);
  EXPECT_EQ(r.left[0].detail, "runs on 8.6 as compatible SASS");
  // 10.0 runs two containers through compute_90; the third keeps sm_75 as a placeholder.
  slim_to_memory(input, keep({10, 0}), r);
  ASSERT_NE(find_left(r, "compute_90", LeftReason::runs), nullptr);
  EXPECT_EQ(find_left(r, "compute_90", LeftReason::runs)->detail, "runs on 10.0 through PTX JIT");
  EXPECT_NE(find_left(r, "sm_75", LeftReason::placeholder), nullptr);
}

TEST_F(ElfSlim, ResultIsAValidElfWithOneMoreLoadSegment) {
  LibrarySlim r;
  auto out = slim_to_memory(input, keep({9, 0}, PtxPolicy::keep), r);
  EXPECT_EQ(targets_in(out), (std::vector<std::string>{"compute_90", "sm_90"}));
  Bytes before(input.data(), input.size()), after(out.data(), out.size());
  auto a = formats::parse_elf(before), b = formats::parse_elf(after);
  ASSERT_TRUE(a && b);
  ASSERT_EQ(a->sections.size(), b->sections.size());
  uint16_t phnum_before, phnum_after;
  std::memcpy(&phnum_before, input.data() + 56, 2);
  std::memcpy(&phnum_after, out.data() + 56, 2);
  EXPECT_EQ(phnum_after, phnum_before + 1);
  // Every section keeps its address; those after the cut move down in the file.
  for (size_t i = 0; i < a->sections.size(); ++i) {
    EXPECT_EQ(a->sections[i].addr, b->sections[i].addr) << a->sections[i].name;
    EXPECT_EQ(a->sections[i].name, b->sections[i].name);
  }
  EXPECT_LT(b->find(".nv_fatbin")->size, a->find(".nv_fatbin")->size);
}

TEST_F(ElfSlim, NothingToRemoveWritesNothing) {
  KeepPolicy all;
  all.devices = {{7, 5}, {8, 0}, {9, 0}};
  all.ptx = PtxPolicy::keep;
  auto r = slim_elf(Bytes(input.data(), input.size()), all, -1);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->outcome, SlimOutcome::unchanged);
  EXPECT_EQ(r->size_after, r->size_before);
}

TEST_F(ElfSlim, ContainerNamedByAnotherPointerKeepsItsAddress) {
  // Point the first wrapper's relocation into the middle of its container: that container
  // must stay whole and in place; the file is still valid and holds the other's choice.
  auto elf = formats::parse_elf(Bytes(input.data(), input.size()));
  ASSERT_TRUE(elf.has_value());
  const auto* seg = elf->find(".nvFatBinSegment");
  const auto* rela = elf->find(".rela.dyn");
  ASSERT_TRUE(seg && rela);
  bool patched = false;
  for (uint64_t at = rela->offset; at < rela->offset + rela->size; at += 24) {
    uint64_t place, addend;
    std::memcpy(&place, input.data() + at, 8);
    std::memcpy(&addend, input.data() + at + 16, 8);
    if (place == seg->addr + 8) {
      addend += 16;
      std::memcpy(input.data() + at + 16, &addend, 8);
      patched = true;
    }
  }
  ASSERT_TRUE(patched);
  uint64_t word;  // the linker also wrote the target in place; move it the same way
  std::memcpy(&word, input.data() + seg->offset + 8, 8);
  word += 16;
  std::memcpy(input.data() + seg->offset + 8, &word, 8);
  LibrarySlim r;
  auto out = slim_to_memory(input, keep({8, 0}), r);
  EXPECT_EQ(r.outcome, SlimOutcome::slimmed);
  EXPECT_EQ(r.containers_whole, 1u);
  EXPECT_GE(r.containers_pinned, 1u);
  EXPECT_TRUE(formats::parse_elf(Bytes(out.data(), out.size())).has_value());
}

TEST_F(ElfSlim, DamagedFatbinIsAnErrorNotAGuess) {
  auto elf = formats::parse_elf(Bytes(input.data(), input.size()));
  ASSERT_TRUE(elf.has_value());
  const auto* fat = elf->find(".nv_fatbin");
  uint64_t huge = uint64_t{1} << 40;
  std::memcpy(input.data() + fat->offset + 16 + 8, &huge, 8);  // first entry's payload size
  auto r = slim_elf(Bytes(input.data(), input.size()), keep({8, 0}), -1);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message.find("runs past its container"), std::string::npos) << r.error().message;
}

TEST(ElfSlimPlain, LibraryWithoutDeviceCode) {
  if (!std::filesystem::exists(fixture("plain_c"))) GTEST_SKIP() << "fixture not built";
  auto in = slurp(fixture("plain_c"));
  auto r = slim_elf(Bytes(in.data(), in.size()), keep({9, 0}), -1);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->outcome, SlimOutcome::no_device_code);
}

TEST(ElfSlimPlain, RelocatableDeviceCodeIsLeftAsIs) {
  if (!std::filesystem::exists(fixture("rdc"))) GTEST_SKIP() << "fixture not built";
  auto in = slurp(fixture("rdc"));
  auto r = slim_elf(Bytes(in.data(), in.size()), keep({9, 0}), -1);
  ASSERT_TRUE(r.has_value());
  EXPECT_GT(r->relocatable_bytes, 0u);
}

// Issue 27: `slim --keep 8.6` said "kept: sm_86" while sm_60..sm_120 stayed in
// __nv_relfatbin and placeholder PTX stayed in .nv_fatbin, named nowhere. Every entry left
// in the file is now accounted for, with its reason.
TEST(ElfSlimPlain, EveryTargetLeftIsAccountedFor) {
  struct Case {
    const char* fixture;
    cuda::ComputeCapability keep;
  };
  for (const Case& c : {Case{"rdc", {7, 5}}, Case{"rdc", {8, 0}}, Case{"sm_90a", {8, 6}}, Case{"slim_multi", {8, 6}},
                        Case{"slim_multi", {10, 0}}, Case{"sass_ptx_80", {9, 0}}, Case{"family_120f", {9, 0}}}) {
    if (!std::filesystem::exists(fixture(c.fixture))) GTEST_SKIP() << fixture(c.fixture) << " not built (no nvcc)";
    SCOPED_TRACE(std::string(c.fixture) + " --keep " + c.keep.str());
    auto in = slurp(fixture(c.fixture));
    LibrarySlim r;
    auto out = slim_to_memory(in, keep(c.keep), r);
    // Nothing removed: nothing written, the input is the result.
    EXPECT_EQ(entries_left(r), entries_in(r.outcome == SlimOutcome::slimmed ? out : in));
  }
}

TEST(ElfSlimPlain, RelocatableAndPlaceholderTargetsAreNamedWithTheirReason) {
  if (!std::filesystem::exists(fixture("rdc"))) GTEST_SKIP() << "fixture not built";
  auto in = slurp(fixture("rdc"));
  // 7.5: sm_80 is no code for it. .nv_fatbin keeps its only entry as a placeholder, and the
  // relocatable copy of sm_80 stays as it is.
  auto r = slim_elf(Bytes(in.data(), in.size()), keep({7, 5}), -1);
  ASSERT_TRUE(r.has_value());
  const auto* rel = find_left(*r, "sm_80", LeftReason::relocatable);
  ASSERT_NE(rel, nullptr);
  EXPECT_GT(rel->bytes, 0u);
  const auto* placeholder = find_left(*r, "sm_80", LeftReason::placeholder);
  ASSERT_NE(placeholder, nullptr);
  EXPECT_EQ(placeholder->detail, "its container has no code for 7.5");
  EXPECT_EQ(find_left(*r, "sm_80", LeftReason::runs), nullptr);
  // 8.0: sm_80 runs there; the relocatable copy is still named apart.
  r = slim_elf(Bytes(in.data(), in.size()), keep({8, 0}), -1);
  ASSERT_TRUE(r.has_value());
  const auto* runs = find_left(*r, "sm_80", LeftReason::runs);
  ASSERT_NE(runs, nullptr);
  EXPECT_EQ(runs->detail, "runs on 8.0");
  EXPECT_NE(find_left(*r, "sm_80", LeftReason::relocatable), nullptr);
}

TEST(ElfSlimPlain, PlaceholderPtxIsNamed) {
  if (!std::filesystem::exists(fixture("sm_90a"))) GTEST_SKIP() << "fixture not built";
  auto in = slurp(fixture("sm_90a"));
  LibrarySlim r;
  slim_to_memory(in, keep({8, 6}), r);
  ASSERT_FALSE(r.left.empty());
  for (const auto& t : r.left) {
    EXPECT_EQ(t.reason, LeftReason::placeholder) << t.target;
    EXPECT_EQ(t.detail, "its container has no code for 8.6");
  }
}

}  // namespace
}  // namespace tailor::slim
