// slim_elf on nvcc-built libraries: what it keeps, how the file is cut, that the result
// parses to exactly the kept entries, and what it does with layouts it must not move.
#include "slim/elf_slim.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "cuda/fatbin_code.h"
#include "formats/elf.h"
#include "formats/fatbin.h"
#include "slim/slim_paths.h"
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
std::vector<std::byte> slim_to_memory(const std::vector<std::byte>& in, const KeepPolicy& p,
                                      LibrarySlim& out) {
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
      if (std::find(names.begin(), names.end(), cuda::fatbin_code(e).name()) == names.end())
        names.push_back(cuda::fatbin_code(e).name());
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
    auto containers =
        formats::parse_fatbin_section(*formats::section_bytes(b, *section), section->offset);
    EXPECT_TRUE(containers.has_value());
    if (!containers) continue;
    for (const auto& c : *containers)
      for (const auto& e : c.entries) ++count[cuda::fatbin_code(e).name()];
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

// The .nv_fatbin containers of a file, as the parser reads them.
std::vector<formats::FatbinContainer> fatbin_containers(const std::vector<std::byte>& file) {
  Bytes b(file.data(), file.size());
  auto elf = formats::parse_elf(b);
  EXPECT_TRUE(elf.has_value());
  if (!elf || !elf->find(".nv_fatbin")) return {};
  const auto* fat = elf->find(".nv_fatbin");
  auto containers = formats::parse_fatbin_section(*formats::section_bytes(b, *fat), fat->offset);
  EXPECT_TRUE(containers.has_value()) << (containers ? "" : containers.error().message);
  return containers ? *containers : std::vector<formats::FatbinContainer>{};
}

template <typename T>
T read_at(const std::vector<std::byte>& file, uint64_t at) {
  T v{};
  std::memcpy(&v, file.data() + at, sizeof v);
  return v;
}

// A container of its 16-byte header alone: magic, version 1, header size 16, size 0.
void expect_header_only(const std::vector<std::byte>& file, const formats::FatbinContainer& c) {
  EXPECT_TRUE(c.entries.empty()) << "container at " << c.offset;
  EXPECT_EQ(c.size, 16u) << "container at " << c.offset;
  EXPECT_EQ(read_at<uint32_t>(file, c.offset), 0xBA55ED50u);
  EXPECT_EQ(read_at<uint16_t>(file, c.offset + 4), 1u);
  EXPECT_EQ(read_at<uint16_t>(file, c.offset + 6), 16u);
  EXPECT_EQ(read_at<uint64_t>(file, c.offset + 8), 0u);
}

// Every registration wrapper's data pointer (its RELA addend where one relocates it, else
// the word in place) names the start of a container of the file's .nv_fatbin.
void expect_wrappers_name_containers(const std::vector<std::byte>& file) {
  Bytes b(file.data(), file.size());
  auto elf = formats::parse_elf(b);
  ASSERT_TRUE(elf.has_value());
  const auto* seg = elf->find(".nvFatBinSegment");
  const auto* fat = elf->find(".nv_fatbin");
  ASSERT_TRUE(seg && fat);
  std::set<uint64_t> starts;
  for (const auto& c : fatbin_containers(file)) starts.insert(fat->addr + (c.offset - fat->offset));
  std::map<uint64_t, uint64_t> addend_at;  // place -> addend
  for (const auto& s : elf->sections)
    if (s.type == 4 /* SHT_RELA */)
      for (uint64_t at = s.offset; at + 24 <= s.offset + s.size; at += 24)
        addend_at[read_at<uint64_t>(file, at)] = read_at<uint64_t>(file, at + 16);
  ASSERT_GT(seg->size, 0u);
  for (uint64_t w = 0; w + 24 <= seg->size; w += 24) {
    const uint64_t place = seg->addr + w + 8, word = read_at<uint64_t>(file, seg->offset + w + 8);
    auto rela = addend_at.find(place);
    const uint64_t target = rela != addend_at.end() ? rela->second : word;
    EXPECT_TRUE(starts.count(target))
        << "wrapper " << w / 24 << " points at " << std::hex << target;
    if (rela != addend_at.end() && word != 0) {
      EXPECT_EQ(word, target);
    }
  }
}

class ElfSlim : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(fixture("slim_multi")))
      GTEST_SKIP() << fixture("slim_multi") << " not built (no nvcc)";
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
    if (t.target == "sm_80")
      EXPECT_EQ(t.removed, 0u);
    else
      EXPECT_EQ(t.kept, 0u) << t.target;
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
  // 10.0 runs two containers through compute_90; the third has nothing for 10.0 and is
  // emptied to its header: nothing of it is left.
  slim_to_memory(input, keep({10, 0}), r);
  ASSERT_NE(find_left(r, "compute_90", LeftReason::runs), nullptr);
  EXPECT_EQ(find_left(r, "compute_90", LeftReason::runs)->detail, "runs on 10.0 through PTX JIT");
  ASSERT_EQ(r.left.size(), 1u);
  EXPECT_EQ(r.containers_emptied, 1u);
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
  EXPECT_NE(r.error().message.find("runs past its container"), std::string::npos)
      << r.error().message;
}

TEST_F(ElfSlim, FatbinSymbolsMoveWithTheirContainers) {
  // nvcc names each container by a local `fatbinData` symbol in .nv_fatbin; packing moves
  // the containers, and each symbol must still name the start of one.
  LibrarySlim r;
  auto out = slim_to_memory(input, keep({8, 0}), r);
  ASSERT_TRUE(r.packed);
  Bytes b(out.data(), out.size());
  auto elf = formats::parse_elf(b);
  ASSERT_TRUE(elf.has_value());
  const auto fat = elf->find_index(".nv_fatbin");
  ASSERT_TRUE(fat);
  const auto& section = elf->sections[*fat];
  auto containers =
      formats::parse_fatbin_section(*formats::section_bytes(b, section), section.offset);
  ASSERT_TRUE(containers.has_value());
  std::set<uint64_t> starts;
  for (const auto& c : *containers) starts.insert(section.addr + (c.offset - section.offset));
  auto symbols = formats::symbol_table(b, *elf, *elf->find(".symtab"));
  ASSERT_TRUE(symbols.has_value()) << symbols.error().message;
  std::set<uint64_t> named;
  for (uint64_t i = 0; i < symbols->size(); ++i) {
    const auto sym = (*symbols)[i];
    if (sym.shndx != *fat) continue;
    auto name = symbols->name(sym);
    ASSERT_TRUE(name.has_value()) << name.error().message;
    EXPECT_EQ(*name, "fatbinData");
    named.insert(sym.value);
  }
  EXPECT_EQ(named, starts);
  EXPECT_EQ(named.size(), 3u);
}

TEST_F(ElfSlim, UnreadableProgramHeadersLeaveTheFileUntouched) {
  const uint16_t phnum = 0x7000;  // a table of 1.5 MB in a 1 MB file
  std::memcpy(input.data() + formats::k_elf64_e_phnum, &phnum, 2);
  int fd = ::memfd_create("slim", 0);
  ASSERT_GE(fd, 0);
  auto r = slim_elf(Bytes(input.data(), input.size()), keep({8, 0}), fd);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->outcome, SlimOutcome::left_untouched);
  EXPECT_NE(r->note.find("program header table at 0x40 (0x188000 bytes) runs past end of file"),
            std::string::npos)
      << r->note;
  EXPECT_EQ(::lseek(fd, 0, SEEK_END), 0);  // nothing written
  ::close(fd);
}

TEST_F(ElfSlim, UnreadableRelocationsKeepContainersInPlace) {
  // .rela.dyn's size no longer a whole number of records: which pointers name which
  // container is unknown, so nothing moves; entries are still compacted inside each
  // container and the file keeps its size.
  auto elf = formats::parse_elf(Bytes(input.data(), input.size()));
  ASSERT_TRUE(elf.has_value());
  const auto rela = elf->find_index(".rela.dyn");
  ASSERT_TRUE(rela);
  const uint64_t size = elf->sections[*rela].size - 8;
  std::memcpy(
      input.data() + elf->e_shoff + *rela * formats::k_elf64_shdr_size + formats::k_elf64_sh_size,
      &size, 8);
  LibrarySlim r;
  auto out = slim_to_memory(input, keep({8, 0}), r);
  EXPECT_EQ(r.outcome, SlimOutcome::slimmed);
  EXPECT_FALSE(r.packed);
  EXPECT_EQ(r.containers_pinned, r.containers);
  EXPECT_EQ(out.size(), input.size());
  EXPECT_NE(r.note.find("not shrunk on disk (section .rela.dyn at 0x"), std::string::npos)
      << r.note;
  EXPECT_NE(r.note.find("is not a whole number of 24-byte RELA records"), std::string::npos)
      << r.note;
  EXPECT_EQ(targets_in(out), (std::vector<std::string>{"sm_80"}));
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
// __nv_relfatbin and PTX kept for another GPU stayed in .nv_fatbin, named nowhere. Every entry left
// in the file is now accounted for, with its reason.
TEST(ElfSlimPlain, EveryTargetLeftIsAccountedFor) {
  struct Case {
    const char* fixture;
    cuda::ComputeCapability keep;
  };
  for (const Case& c : {Case{"rdc", {7, 5}}, Case{"rdc", {8, 0}}, Case{"sm_90a", {8, 6}},
                        Case{"slim_multi", {8, 6}}, Case{"slim_multi", {10, 0}},
                        Case{"sass_ptx_80", {9, 0}}, Case{"family_120f", {9, 0}}}) {
    if (!std::filesystem::exists(fixture(c.fixture)))
      GTEST_SKIP() << fixture(c.fixture) << " not built (no nvcc)";
    SCOPED_TRACE(std::string(c.fixture) + " --keep " + c.keep.str());
    auto in = slurp(fixture(c.fixture));
    LibrarySlim r;
    auto out = slim_to_memory(in, keep(c.keep), r);
    // Nothing removed: nothing written, the input is the result.
    EXPECT_EQ(entries_left(r), entries_in(r.outcome == SlimOutcome::slimmed ? out : in));
  }
}

TEST(ElfSlimPlain, RelocatableTargetsAreNamedWithTheirReason) {
  if (!std::filesystem::exists(fixture("rdc"))) GTEST_SKIP() << "fixture not built";
  auto in = slurp(fixture("rdc"));
  // 7.5: sm_80 is no code for it. .nv_fatbin's container is emptied to its header, and the
  // relocatable copy of sm_80 stays as it is.
  auto r = slim_elf(Bytes(in.data(), in.size()), keep({7, 5}), -1);
  ASSERT_TRUE(r.has_value());
  const auto* rel = find_left(*r, "sm_80", LeftReason::relocatable);
  ASSERT_NE(rel, nullptr);
  EXPECT_GT(rel->bytes, 0u);
  ASSERT_EQ(r->left.size(), 1u);
  EXPECT_GE(r->containers_emptied, 1u);
  EXPECT_EQ(r->device_after, 0u);
  // 8.0: sm_80 runs there; the relocatable copy is still named apart.
  r = slim_elf(Bytes(in.data(), in.size()), keep({8, 0}), -1);
  ASSERT_TRUE(r.has_value());
  const auto* runs = find_left(*r, "sm_80", LeftReason::runs);
  ASSERT_NE(runs, nullptr);
  EXPECT_EQ(runs->detail, "runs on 8.0");
  EXPECT_NE(find_left(*r, "sm_80", LeftReason::relocatable), nullptr);
}

TEST(ElfSlimPlain, ArchSpecificCodeOnAnotherGpuLeavesNothing) {
  // sm_90a and compute_90a run nowhere but 9.0: for 8.6 every container is emptied, sm_90a
  // and compute_90a are both gone, and nothing is left to name.
  if (!std::filesystem::exists(fixture("sm_90a"))) GTEST_SKIP() << "fixture not built";
  auto in = slurp(fixture("sm_90a"));
  LibrarySlim r;
  auto out = slim_to_memory(in, keep({8, 6}), r);
  EXPECT_EQ(r.outcome, SlimOutcome::slimmed);
  EXPECT_TRUE(r.left.empty());
  EXPECT_EQ(r.containers_emptied, r.containers);
  EXPECT_TRUE(entries_in(out).empty());
}

// A GPU that no container serves: every container is emptied to its 16-byte header (the
// CUDA runtime answers "no kernel image" for such a container, as for one with code only
// for other GPUs), the file still parses, the wrappers still name container starts, and
// every entry's bytes count as removed.
TEST(ElfSlimHeaderOnly, NoContainerServesTheGpuEveryContainerIsEmptied) {
  struct Case {
    const char* fixture;
    cuda::ComputeCapability keep;
  };
  for (const Case& c :
       {Case{"slim_multi", {6, 1}}, Case{"sass_75_80", {9, 0}}, Case{"sm_90a", {8, 6}},
        Case{"sass_ptx_80", {7, 0}}, Case{"compress_all", {7, 5}}}) {
    if (!std::filesystem::exists(fixture(c.fixture)))
      GTEST_SKIP() << fixture(c.fixture) << " not built (no nvcc)";
    SCOPED_TRACE(std::string(c.fixture) + " --keep " + c.keep.str());
    auto in = slurp(fixture(c.fixture));
    LibrarySlim r;
    auto out = slim_to_memory(in, keep(c.keep), r);
    ASSERT_EQ(r.outcome, SlimOutcome::slimmed) << r.note;
    ASSERT_EQ(out.size(), r.size_after);
    EXPECT_GT(r.containers, 0u);
    EXPECT_EQ(r.containers_emptied, r.containers);
    EXPECT_EQ(r.containers_whole, 0u);
    EXPECT_EQ(r.device_after, 0u);
    EXPECT_EQ(r.removed_bytes(), r.device_before);
    uint64_t removed = 0;
    for (const auto& t : r.targets) {
      EXPECT_EQ(t.kept, 0u) << t.target;
      removed += t.removed_bytes;
    }
    EXPECT_EQ(removed, r.device_before);
    for (const auto& t : r.left) EXPECT_EQ(t.reason, LeftReason::relocatable) << t.target;
    // Every container is its header alone, packed 8-aligned from the section's start.
    auto containers = fatbin_containers(out);
    ASSERT_EQ(containers.size(), r.containers);
    for (const auto& container : containers) expect_header_only(out, container);
    auto elf = formats::parse_elf(Bytes(out.data(), out.size()));
    ASSERT_TRUE(elf.has_value());
    if (r.packed) {
      EXPECT_EQ(elf->find(".nv_fatbin")->size, 16 * r.containers);
    }
    expect_wrappers_name_containers(out);
    // A re-read agrees: containers, no entries, no bytes.
    auto n = count_device_code(Bytes(out.data(), out.size()));
    ASSERT_TRUE(n.has_value()) << n.error().message;
    EXPECT_EQ(n->fatbin_containers, r.containers);
    EXPECT_EQ(n->entries, 0u);
    EXPECT_EQ(n->bytes, 0u);
    // Slimmed again for the same GPU: nothing left to remove.
    auto again = slim_elf(Bytes(out.data(), out.size()), keep(c.keep), -1);
    ASSERT_TRUE(again.has_value()) << again.error().message;
    EXPECT_EQ(again->outcome, SlimOutcome::unchanged);
    EXPECT_EQ(again->containers_emptied, 0u);
  }
}

// One container serves the kept GPU, another does not: the first keeps its entry, the
// second becomes its header, and both stay where their wrappers say.
TEST_F(ElfSlim, ServedAndUnservedContainersSideBySide) {
  LibrarySlim r;
  auto out = slim_to_memory(input, keep({10, 0}), r);
  ASSERT_EQ(r.outcome, SlimOutcome::slimmed);
  EXPECT_EQ(r.containers_emptied, 1u);
  EXPECT_EQ(r.containers_ptx_only, 2u);
  auto containers = fatbin_containers(out);
  ASSERT_EQ(containers.size(), 3u);
  size_t emptied = 0;
  for (const auto& c : containers) {
    if (c.entries.empty()) {
      expect_header_only(out, c);
      ++emptied;
      continue;
    }
    ASSERT_EQ(c.entries.size(), 1u);
    EXPECT_EQ(cuda::fatbin_code(c.entries[0]).name(), "compute_90");
  }
  EXPECT_EQ(emptied, 1u);
  expect_wrappers_name_containers(out);
  EXPECT_EQ(entries_in(out), (std::map<std::string, uint32_t>{{"compute_90", 2}}));
  // The emptied container's entries (sm_75, sm_80, sm_90 of kernels_more.cu) count as removed.
  uint64_t removed = 0;
  for (const auto& t : r.targets) removed += t.removed_bytes;
  EXPECT_EQ(removed, r.removed_bytes());
  auto n = count_device_code(Bytes(out.data(), out.size()));
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(n->fatbin_containers, 3u);
  EXPECT_EQ(n->entries, 2u);
  EXPECT_EQ(n->bytes, r.device_after);
}

// Written to disk through slim_paths, whose re-read checks the written file against the
// plan before renaming it: header-only containers pass.
TEST(ElfSlimHeaderOnly, WrittenFileIsCheckedAndRenamed) {
  if (!std::filesystem::exists(fixture("slim_multi")))
    GTEST_SKIP() << fixture("slim_multi") << " not built (no nvcc)";
  const auto dir = test::scratch_dir("slim_header_only");
  const auto path = dir / "libslim_multi.so";
  std::filesystem::copy_file(fixture("slim_multi"), path,
                             std::filesystem::copy_options::overwrite_existing);
  SlimOptions o;
  o.policy = keep({6, 1});
  o.in_place = true;
  o.jobs = 1;
  auto report = slim_paths({path.string()}, o);
  ASSERT_TRUE(report.has_value()) << report.error().message;
  ASSERT_EQ(report->inputs.size(), 1u);
  ASSERT_EQ(report->inputs[0].files.size(), 1u);
  EXPECT_EQ(report->inputs[0].files[0].lib.containers_emptied, 3u);
  EXPECT_EQ(report->devices, (std::vector<std::string>{"6.1"}));
  auto out = slurp(path.string());
  for (const auto& c : fatbin_containers(out)) expect_header_only(out, c);
}

}  // namespace
}  // namespace tailor::slim
