// slim_elf on a real library whose relative relocations are a RELR table (relr.so: nvcc,
// sm_75 + sm_90, `-z pack-relative-relocs`), slimmed to sm_90: the registration wrappers'
// pointers are RELR places, so slim moves the words in place; the file is cut. The table is
// unchanged and every place it names still lies in a load segment; the words that pointed
// at containers point at the same containers, packed, holding only the sm_90 entries; every
// other relocated word is as it was; sm_75 is gone; and the dynamic loader maps the result,
// applies the table and finds the containers where the wrappers say.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cuda/fatbin_code.h"
#include "formats/elf.h"
#include "formats/fatbin.h"
#include "slim/elf_slim.h"
#include "support/fixtures.h"

namespace tailor::slim {
namespace relr_test {  // named: the unity build batches this file with the other slim tests

using test::fixture;

constexpr uint32_t k_fatbin_magic = 0xBA55ED50, k_wrapper_magic = 0x466243B1;

// A library read once: its bytes, sections and program headers.
struct Library {
  std::vector<std::byte> bytes;
  formats::ElfFile elf;
  std::vector<formats::ElfSegment> phdrs;
  Bytes view() const { return {bytes.data(), bytes.size()}; }
};

Library read_library(std::vector<std::byte> bytes) {
  Library lib;
  lib.bytes = std::move(bytes);
  auto elf = formats::parse_elf(lib.view());
  EXPECT_TRUE(elf) << elf.error().message;
  if (!elf) return lib;
  lib.elf = *elf;
  auto phdrs = formats::read_segments(lib.view(), lib.elf);
  EXPECT_TRUE(phdrs) << phdrs.error().message;
  if (phdrs) lib.phdrs = *phdrs;
  return lib;
}

const formats::ElfSection* relr_section(const Library& lib) {
  for (const auto& s : lib.elf.sections)
    if (s.type == formats::k_sht_relr) return &s;
  return nullptr;
}

// Every address the RELR table relocates, in table order.
std::vector<uint64_t> relr_places(const Library& lib) {
  std::vector<uint64_t> places;
  const auto* s = relr_section(lib);
  if (!s) return places;
  auto table = formats::relr_table(lib.view(), lib.elf, *s);
  EXPECT_TRUE(table) << table.error().message;
  if (table) table->for_each_place([&](uint64_t place) { places.push_back(place); });
  return places;
}

// The file offset of the 8-byte word at a virtual address, through the load segments.
std::optional<uint64_t> offset_of(const Library& lib, uint64_t vaddr) {
  auto at = formats::file_offset_of(lib.phdrs, vaddr, 8);
  if (!at || *at + 8 > lib.bytes.size()) return std::nullopt;
  return at;
}

uint64_t word_at(const Library& lib, uint64_t offset) {
  uint64_t w = 0;
  std::memcpy(&w, lib.bytes.data() + offset, 8);
  return w;
}

// .nv_fatbin's containers by address, each as the targets of its entries in order.
std::map<uint64_t, std::vector<std::string>> containers_by_address(const Library& lib) {
  std::map<uint64_t, std::vector<std::string>> out;
  const auto* fat = lib.elf.find(".nv_fatbin");
  if (!fat) return out;
  auto containers =
      formats::parse_fatbin_section(*formats::section_bytes(lib.view(), *fat), fat->offset);
  EXPECT_TRUE(containers) << containers.error().message;
  if (!containers) return out;
  for (const auto& c : *containers) {
    auto& names = out[fat->addr + (c.offset - fat->offset)];
    for (const auto& e : c.entries) names.push_back(cuda::fatbin_code(e).name());
  }
  return out;
}

std::vector<std::string> without(std::vector<std::string> names, const std::string& dropped) {
  std::erase(names, dropped);
  return names;
}

std::vector<std::byte> slim_to_memory(const Library& in, const KeepPolicy& policy,
                                      LibrarySlim& result) {
  int fd = ::memfd_create("slim_relr", 0);
  EXPECT_GE(fd, 0);
  auto r = slim_elf(in.view(), policy, fd);
  EXPECT_TRUE(r) << r.error().message;
  std::vector<std::byte> out;
  if (r) {
    result = *r;
    out.resize(static_cast<size_t>(::lseek(fd, 0, SEEK_END)));
    EXPECT_EQ(::pread(fd, out.data(), out.size(), 0), static_cast<ssize_t>(out.size()));
  }
  ::close(fd);
  return out;
}

class RelrSlim : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(fixture("relr")))
      GTEST_SKIP() << fixture("relr") << " not built (no nvcc)";
    in = read_library(test::slurp(fixture("relr")));
    ASSERT_FALSE(in.phdrs.empty());
    if (!relr_section(in))
      GTEST_SKIP() << fixture("relr")
                   << " has no RELR table (a linker without -z pack-relative-relocs)";
    KeepPolicy policy;
    policy.devices = {{9, 0}};
    out = read_library(slim_to_memory(in, policy, result));
    ASSERT_FALSE(out.phdrs.empty());
  }
  Library in, out;
  LibrarySlim result;
};

TEST_F(RelrSlim, FixtureKeepsItsWrapperPointersInTheRelrTable) {
  // What makes the fixture worth having: no RELA record relocates a wrapper, the RELR table
  // does, and both targets are in it.
  const auto* seg = in.elf.find(".nvFatBinSegment");
  ASSERT_NE(seg, nullptr);
  for (const auto& s : in.elf.sections) {
    if (s.type != formats::k_sht_rela) continue;
    auto rela = formats::rela_table(in.view(), in.elf, s);
    ASSERT_TRUE(rela) << rela.error().message;
    for (uint64_t i = 0; i < rela->size(); ++i)
      EXPECT_FALSE((*rela)[i].place >= seg->addr && (*rela)[i].place < seg->addr + seg->size)
          << s.name;
  }
  const auto places = relr_places(in);
  for (uint64_t w = 0; w + 24 <= seg->size; w += 24)
    EXPECT_NE(std::find(places.begin(), places.end(), seg->addr + w + 8), places.end())
        << "wrapper " << w / 24;
  std::map<std::string, int> targets;
  for (const auto& [addr, names] : containers_by_address(in))
    for (const auto& n : names) ++targets[n];
  EXPECT_GT(targets["sm_75"], 0);
  EXPECT_GT(targets["sm_90"], 0);
  EXPECT_EQ(targets.size(), 2u);
}

TEST_F(RelrSlim, RelocatedWordsNameTheKeptContainers) {
  EXPECT_EQ(result.outcome, SlimOutcome::slimmed);
  EXPECT_TRUE(result.packed);
  EXPECT_TRUE(result.split) << result.note;  // the file is cut: later words move in the file
  EXPECT_LT(out.bytes.size(), in.bytes.size());

  // The table itself is untouched (addresses do not change), and so is what it names.
  const auto* relr_in = relr_section(in);
  const auto* relr_out = relr_section(out);
  ASSERT_NE(relr_out, nullptr);
  ASSERT_EQ(relr_in->size, relr_out->size);
  EXPECT_EQ(0, std::memcmp(in.bytes.data() + relr_in->offset, out.bytes.data() + relr_out->offset,
                           relr_in->size));
  const auto places = relr_places(in);
  ASSERT_EQ(relr_places(out), places);

  const auto containers_in = containers_by_address(in), containers_out = containers_by_address(out);
  const auto* fat = in.elf.find(".nv_fatbin");
  ASSERT_NE(fat, nullptr);
  size_t into_fatbin = 0, moved = 0, shifted = 0;
  for (uint64_t place : places) {
    auto at_in = offset_of(in, place), at_out = offset_of(out, place);
    ASSERT_TRUE(at_in && at_out) << std::hex << "place 0x" << place;
    if (*at_in != *at_out) ++shifted;
    const uint64_t before = word_at(in, *at_in), after = word_at(out, *at_out);
    if (before < fat->addr || before >= fat->addr + fat->size) {
      EXPECT_EQ(after, before) << std::hex << "place 0x" << place;
      continue;
    }
    // A pointer into .nv_fatbin: it named a container's start, and names the same
    // container, now holding only its sm_90 entries.
    ++into_fatbin;
    if (after != before) ++moved;
    auto was = containers_in.find(before);
    auto is = containers_out.find(after);
    ASSERT_NE(was, containers_in.end()) << std::hex << "0x" << before << " is no container's start";
    ASSERT_NE(is, containers_out.end())
        << std::hex << "0x" << after << " is no container's start after slimming";
    EXPECT_EQ(is->second, without(was->second, "sm_75")) << std::hex << "place 0x" << place;
    EXPECT_FALSE(is->second.empty());
  }
  EXPECT_EQ(into_fatbin, containers_in.size());  // one wrapper per container
  EXPECT_GT(moved, 0u);                          // packing moved some
  EXPECT_GT(shifted, 0u);                        // and some places lie after the cut
}

TEST_F(RelrSlim, DroppedArchIsGone) {
  std::map<std::string, int> targets;
  for (const auto& [addr, names] : containers_by_address(out))
    for (const auto& n : names) ++targets[n];
  EXPECT_EQ(targets.count("sm_75"), 0u);
  EXPECT_GT(targets["sm_90"], 0);
  EXPECT_EQ(targets.size(), 1u);
  ASSERT_EQ(result.left.size(), 1u);
  EXPECT_EQ(result.left[0].target, "sm_90");
}

TEST_F(RelrSlim, LoaderAppliesTheTableToTheSlimmedLibrary) {
  struct utsname host {};
  ASSERT_EQ(::uname(&host), 0);
  if (test::nvcc_fixture_machine() != host.machine)
    GTEST_SKIP() << "the fixture is " << test::nvcc_fixture_machine() << " code; this host is "
                 << host.machine;
  const auto path = test::scratch_dir("relr_slim") / "librelr_slim.so";
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(out.bytes.data()),
             static_cast<std::streamsize>(out.bytes.size()));
  // Host code only: no CUDA call runs, so no GPU is needed. The handle is never closed:
  // the static CUDA runtime registered the containers at load and unregisters them at exit.
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << ::dlerror();
  EXPECT_NE(::dlsym(handle, "tailor_fixture_check"), nullptr);
  link_map* map = nullptr;
  ASSERT_EQ(::dlinfo(handle, RTLD_DI_LINKMAP, &map), 0) << ::dlerror();
  const auto base = static_cast<uintptr_t>(map->l_addr);
  const auto* seg = out.elf.find(".nvFatBinSegment");
  const auto* fat = out.elf.find(".nv_fatbin");
  ASSERT_TRUE(seg && fat);
  size_t wrappers = 0;
  for (uint64_t w = 0; w + 24 <= seg->size; w += 24) {
    const auto* wrapper = reinterpret_cast<const std::byte*>(base + seg->addr + w);
    uint32_t magic;
    uintptr_t data;
    std::memcpy(&magic, wrapper, 4);
    std::memcpy(&data, wrapper + 8, 8);
    ASSERT_EQ(magic, k_wrapper_magic);
    // The loaded pointer is the container's address plus the load base; the bytes there are
    // the container the file holds at that address.
    const uint64_t addr = data - base;
    ASSERT_TRUE(addr >= fat->addr && addr + 16 <= fat->addr + fat->size)
        << std::hex << "0x" << addr;
    const uint64_t file_at = fat->offset + (addr - fat->addr);
    uint64_t size;
    std::memcpy(&size, out.bytes.data() + file_at + 8, 8);
    ASSERT_LE(addr + 16 + size, fat->addr + fat->size);
    uint32_t loaded_magic;
    std::memcpy(&loaded_magic, reinterpret_cast<const void*>(data), 4);
    EXPECT_EQ(loaded_magic, k_fatbin_magic);
    EXPECT_EQ(
        0, std::memcmp(reinterpret_cast<const void*>(data), out.bytes.data() + file_at, 16 + size));
    ++wrappers;
  }
  EXPECT_EQ(wrappers, containers_by_address(out).size());
}

}  // namespace relr_test
}  // namespace tailor::slim
