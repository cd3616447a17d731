// The device code sections and the sections searched for embedded fatbin containers, the
// one rule inspect and slim share: only allocated sections with file bytes inside the file,
// never a device section or one overlapping a device section (also one that only an
// earlier, larger device section reaches), never one starting inside an earlier searched
// one, in file order whatever the header order; the scan keeps no cap of its own (inspect
// caps the sections holding containers, slim the containers); and a library read by
// parse_elf gets the indices of its own section table.
#include "formats/device_sections.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "formats/elf.h"
#include "synthetic_elf.h"

using namespace tailor;
using namespace tailor::formats;

namespace device_sections_test {  // named: the unity build batches this file with the other formats
                                  // tests

constexpr uint64_t k_file = 1 << 20;

ElfSection section(std::string name, uint64_t offset, uint64_t size, uint64_t flags = k_shf_alloc,
                   uint32_t type = k_sht_progbits) {
  ElfSection s;
  s.name = std::move(name);
  s.type = type;
  s.flags = flags;
  s.offset = offset;
  s.size = size;
  s.addr = offset;
  return s;
}

ElfFile with(std::vector<ElfSection> sections) {
  ElfFile elf;
  elf.sections = std::move(sections);
  return elf;
}

std::vector<size_t> scan(const ElfFile& elf, uint64_t file_size = k_file) {
  return embedded_scan_sections(elf, file_size);
}

TEST(DeviceSections, NamesNvccsTwoSectionsOnly) {
  EXPECT_TRUE(is_device_section(".nv_fatbin"));
  EXPECT_TRUE(is_device_section("__nv_relfatbin"));
  EXPECT_TRUE(is_device_section(section("__nv_relfatbin", 0, 16)));
  for (const char* other : {"", ".nv_fatbin.1", "nv_fatbin", ".NV_FATBIN", "__nv_relfatbin ",
                            ".rodata", ".nvFatBinSegment", ".cask_resource"})
    EXPECT_FALSE(is_device_section(other)) << other;
}

TEST(EmbeddedScanSections, AllocatedSectionsWithFileBytesInFileOrder) {
  // Headers listed out of file order; the result is by offset, as indices into the table.
  auto elf = with({section("", 0, 0, 0, 0),  // 0: the null section
                   section(".data", 0x3000, 0x100, k_shf_alloc | k_shf_write),  // 1
                   section(".rodata", 0x1000, 0x100),                           // 2
                   section(".cask_resource", 0x2000, 0x100)});                  // 3
  EXPECT_EQ(scan(elf), (std::vector<size_t>{2, 3, 1}));
}

TEST(EmbeddedScanSections, SkipsUnallocatedEmptyNobitsAndPastTheEnd) {
  auto elf = with({section(".comment", 0x1000, 0x100, 0),  // 0: not SHF_ALLOC
                   section(".bss", 0x2000, 0x100, k_shf_alloc | k_shf_write, k_sht_nobits),  // 1
                   section(".empty", 0x3000, 0),                     // 2: no bytes
                   section(".rodata", 0x4000, 0x100),                // 3: kept
                   section(".past", k_file + 8, 0x100),              // 4: starts past the end
                   section(".runs_over", k_file - 0x80, 0x100),      // 5: ends past the end
                   section(".huge", 0x5000, ~uint64_t{0} - 0x10),    // 6: offset + size wraps
                   section(".to_the_end", k_file - 0x100, 0x100)});  // 7: ends at the end: kept
  EXPECT_EQ(scan(elf), (std::vector<size_t>{3, 7}));
  // The file size is the caller's: the same table over a shorter file keeps less.
  EXPECT_EQ(scan(elf, 0x4000), (std::vector<size_t>{}));
  EXPECT_EQ(scan(elf, 0x4100), (std::vector<size_t>{3}));
}

TEST(EmbeddedScanSections, DeviceSectionsAndWhatOverlapsThem) {
  // Device sections are never searched, allocated or not, and nothing over their bytes is.
  auto elf = with({section(".nv_fatbin", 0x1000, 0x1000),        // 0
                   section("__nv_relfatbin", 0x4000, 0x100, 0),  // 1: not allocated, still device
                   section(".holds_fatbin", 0x0800, 0x1000),     // 2: covers .nv_fatbin's start
                   section(".inside_fatbin", 0x1800, 0x10),      // 3
                   section(".covers_relfatbin", 0x3f00, 0x400),  // 4
                   section(".before", 0x0700, 0x100),  // 5: ends where .holds_fatbin starts
                   section(".after", 0x2000, 0x100),   // 6: starts where .nv_fatbin ends
                   section(".tail", 0x4100, 0x100)});  // 7: starts where __nv_relfatbin ends
  EXPECT_EQ(scan(elf), (std::vector<size_t>{5, 6, 7}));
}

TEST(EmbeddedScanSections, AnEarlierLargerDeviceSectionStillCounts) {
  // [0x1000, 0x9000) and a later-starting small one [0x2000, 0x2100): a section at 0x5000
  // lies after the small one's end but inside the large one.
  auto elf = with({section(".nv_fatbin", 0x1000, 0x8000), section("__nv_relfatbin", 0x2000, 0x100),
                   section(".data", 0x5000, 0x100), section(".ldata", 0x9000, 0x100)});
  EXPECT_EQ(scan(elf), (std::vector<size_t>{3}));
}

TEST(EmbeddedScanSections, OverlappingCandidatesAreSearchedOnce) {
  auto elf = with({section(".rodata", 0x1000, 0x1000),   // 0
                   section(".alias", 0x1000, 0x1000),    // 1: the same range
                   section(".inner", 0x1800, 0x100),     // 2: inside .rodata
                   section(".straddle", 0x1f00, 0x200),  // 3: starts inside .rodata
                   section(".next", 0x2000, 0x100)});    // 4: starts at .rodata's end
  EXPECT_EQ(scan(elf), (std::vector<size_t>{0, 4}));
  // The section that starts first is searched, whatever the header order.
  auto swapped = with({section(".small", 0x1000, 0x10), section(".big", 0x0800, 0x1000)});
  EXPECT_EQ(scan(swapped), (std::vector<size_t>{1}));
}

TEST(EmbeddedScanSections, NoCapOfItsOwnAndLinearWork) {
  // 300 disjoint sections (more than inspect's 256 sections holding containers): all are
  // searched; bounding what the search finds is the caller's.
  std::vector<ElfSection> many;
  for (uint64_t i = 0; i < 300; ++i)
    many.push_back(section(".s" + std::to_string(i), 0x1000 + i * 0x100, 0x100));
  auto elf = with(many);
  auto got = scan(elf);
  ASSERT_EQ(got.size(), 300u);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], i);
  // 60000 headers naming one range and 60000 device sections: one search, in well under a second.
  std::vector<ElfSection> hostile;
  for (int i = 0; i < 60000; ++i) hostile.push_back(section(".rodata", 0x1000, 0x1000));
  for (uint64_t i = 0; i < 60000; ++i) hostile.push_back(section(".nv_fatbin", 0x10000 + i, 1));
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(scan(with(hostile)), (std::vector<size_t>{0}));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST(EmbeddedScanSections, IndicesOfAParsedLibrary) {
  // Through parse_elf: indices are those of elf.sections (the null section included).
  std::vector<std::byte> bytes(64, std::byte{0x5a});
  auto file = testing_elf::with_sections({".rodata", ".nv_fatbin", ".data"}, {bytes, bytes, bytes});
  auto elf = parse_elf(file);
  ASSERT_TRUE(elf) << elf.error().message;
  auto got = embedded_scan_sections(*elf, file.size());
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(elf->sections[got[0]].name, ".rodata");
  EXPECT_EQ(elf->sections[got[1]].name, ".data");
}

}  // namespace device_sections_test
