// Hostile fatbin input: the .nv_fatbin section of a real nvcc-made library, patched in
// the test (container size overflow, header size 0, payloads past the end, broken
// compressed streams), plus a synthetic container of minimal entries. Every case is an
// Error naming the file offset of the container or entry.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "formats/decompress.h"
#include "formats/elf.h"
#include "formats/fatbin.h"
#include "support/fatbin_writer.h"
#include "support/fixtures.h"

using namespace tailor;
using namespace tailor::formats;

namespace {

using test::fixture;
using test::slurp;

using test::put;

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// The whole library and where its .nv_fatbin lies; `first_entry` is the file offset of
// the first entry header (container header + 16).
class HostileFatbin : public testing::Test {
 protected:
  void load(const std::string& name) {
    if (!std::filesystem::exists(fixture(name))) GTEST_SKIP() << fixture(name) << " not built";
    m_file = slurp(fixture(name));
    auto elf = parse_elf(m_file);
    ASSERT_TRUE(elf) << elf.error().message;
    const ElfSection* s = elf->find(".nv_fatbin");
    ASSERT_NE(s, nullptr);
    m_section = *s;
    m_first_entry = s->offset + 16;
  }
  void SetUp() override { load("sass_ptx_80"); }
  Bytes section_of(const std::vector<std::byte>& f) const {
    return Bytes(f).subspan(m_section.offset, m_section.size);
  }
  std::string walk_error(const std::vector<std::byte>& f) const {
    auto r = parse_fatbin_section(section_of(f), m_section.offset);
    EXPECT_FALSE(r) << "hostile fatbin parsed";
    return r ? "" : r.error().message;
  }
  std::vector<FatbinEntry> entries(const std::vector<std::byte>& f) const {
    auto r = parse_fatbin_section(section_of(f), m_section.offset);
    EXPECT_TRUE(r) << r.error().message;
    std::vector<FatbinEntry> out;
    if (r)
      for (auto& c : *r)
        for (auto& e : c.entries) out.push_back(e);
    return out;
  }
  std::vector<std::byte> m_file;
  ElfSection m_section;
  uint64_t m_first_entry = 0;
};

}  // namespace

TEST_F(HostileFatbin, ContainerSizeOverflows) {
  auto f = m_file;
  put<uint64_t>(f, m_section.offset + 8, 0xfffffffffffffff8ull);
  std::string e = walk_error(f);
  EXPECT_NE(e.find("fatbin container at " + hex(m_section.offset) +
                   ": size 0xfffffffffffffff8 runs past"),
            std::string::npos)
      << e;
}

TEST_F(HostileFatbin, ContainerHeaderSizeZero) {
  auto f = m_file;
  put<uint16_t>(f, m_section.offset + 6, 0);
  EXPECT_NE(walk_error(f).find("header size 0x0 is below 16"), std::string::npos);
}

TEST_F(HostileFatbin, BadMagic) {
  auto f = m_file;
  put<uint32_t>(f, m_section.offset, 0xdeadbeef);
  EXPECT_NE(walk_error(f).find("no fatbin container magic at " + hex(m_section.offset) +
                               " (found 0xdeadbeef)"),
            std::string::npos);
}

TEST_F(HostileFatbin, EntryHeaderSizeZeroWouldLoop) {
  auto f = m_file;
  put<uint32_t>(f, m_first_entry + 4, 0);
  std::string e = walk_error(f);
  EXPECT_NE(e.find("fatbin entry at " + hex(m_first_entry) + ": header size 0x0 is below 64"),
            std::string::npos)
      << e;
}

TEST_F(HostileFatbin, EntryPayloadSizeHuge) {
  auto f = m_file;
  put<uint64_t>(f, m_first_entry + 8, 0x7fffffffffffffffull);
  EXPECT_NE(walk_error(f).find("fatbin entry at " + hex(m_first_entry) +
                               ": payload size 0x7fffffffffffffff runs past"),
            std::string::npos);
}

TEST_F(HostileFatbin, EntryPayloadSizeWrapsAround) {
  // header + payload would wrap to a small number with unchecked arithmetic
  auto f = m_file;
  put<uint64_t>(f, m_first_entry + 8, 0xffffffffffffffc0ull);
  EXPECT_NE(walk_error(f).find("payload size 0xffffffffffffffc0 runs past"), std::string::npos);
}

TEST_F(HostileFatbin, IdentifierOutsideContainer) {
  auto f = m_file;
  put<uint32_t>(f, m_first_entry + 0x20, 0x100000);
  put<uint32_t>(f, m_first_entry + 0x24, 16);
  EXPECT_NE(walk_error(f).find("identifier at offset 0x100000"), std::string::npos);
}

TEST_F(HostileFatbin, TruncatedSection) {
  auto f = m_file;
  Bytes cut = section_of(f).first(16 + 40);
  auto r = parse_fatbin_section(cut, m_section.offset);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("fatbin container at " + hex(m_section.offset)),
            std::string::npos)
      << r.error().message;
}

TEST_F(HostileFatbin, OffsetsAreFileOffsets) {
  for (auto& e : entries(m_file)) {
    EXPECT_GE(e.header_offset, m_section.offset);
    EXPECT_LT(e.payload_offset(), m_section.offset + m_section.size);
  }
}

TEST_F(HostileFatbin, CompressedSizeLargerThanPayload) {
  auto f = m_file;
  for (auto& e : entries(f)) {
    if (e.compression == FatbinCompression::none) continue;
    put<uint32_t>(f, e.header_offset + 0x10, static_cast<uint32_t>(e.stored_size + 8));
    EXPECT_NE(walk_error(f).find("fatbin entry at " + hex(e.header_offset) + ": compressed size"),
              std::string::npos);
    return;
  }
  FAIL() << "fixture has no compressed entry";
}

TEST_F(HostileFatbin, DeclaredSizeAboveLimitIsRefusedBeforeAllocating) {
  auto f = m_file;
  for (auto& e : entries(f)) {
    if (e.compression != FatbinCompression::zstd) continue;
    put<uint64_t>(f, e.header_offset + 0x38, 0x4000000000ull);  // 256 GiB
    auto patched = entries(f);
    for (auto& p : patched) {
      if (p.header_offset != e.header_offset) continue;
      auto out = decompress_entry(f, p, 1 << 20);
      ASSERT_FALSE(out);
      EXPECT_NE(out.error().message.find("fatbin entry at " + hex(p.header_offset)),
                std::string::npos);
      EXPECT_NE(out.error().message.find("exceeds the limit"), std::string::npos);
    }
    return;
  }
  FAIL() << "fixture has no ZSTD entry";
}

TEST_F(HostileFatbin, CorruptZstdAndWrongDeclaredSize) {
  for (auto& e : entries(m_file)) {
    if (e.compression != FatbinCompression::zstd) continue;
    auto f = m_file;
    put<uint32_t>(f, e.payload_offset(), 0x11223344);  // destroy the frame magic
    auto out = decompress_entry(f, e, 1 << 20);
    ASSERT_FALSE(out);
    EXPECT_NE(out.error().message.find("ZSTD frame does not decode"), std::string::npos);
    FatbinEntry shorter = e;
    shorter.uncompressed_size -= 1;  // real stream, wrong declared size
    EXPECT_FALSE(decompress_entry(m_file, shorter, 1 << 20));
    return;
  }
  FAIL() << "fixture has no ZSTD entry";
}

TEST_F(HostileFatbin, CorruptLz4) {
  load("mode_speed");
  for (auto& e : entries(m_file)) {
    if (e.compression != FatbinCompression::lz4) continue;
    ASSERT_TRUE(decompress_entry(m_file, e, 1 << 20));
    auto f = m_file;
    for (uint64_t i = 0; i < e.compressed_size; ++i) put<uint8_t>(f, e.payload_offset() + i, 0xff);
    auto out = decompress_entry(f, e, 1 << 20);
    ASSERT_FALSE(out);
    EXPECT_NE(out.error().message.find("LZ4 block does not decode"), std::string::npos);
    return;
  }
  FAIL() << "fixture has no LZ4 entry";
}

TEST_F(HostileFatbin, PayloadOutsideFileForDecompress) {
  auto e = entries(m_file).at(0);
  e.stored_size = m_file.size();
  auto out = decompress_entry(m_file, e, 1ull << 40);
  ASSERT_FALSE(out);
  EXPECT_NE(out.error().message.find("runs past end of file"), std::string::npos);
  // formats names the entry by its raw header fields (a target name is the CUDA model's).
  EXPECT_EQ(out.error().message.rfind("fatbin entry at " + hex(e.header_offset) + " (kind " +
                                          std::to_string(e.kind) + ", arch 80): payload",
                                      0),
            0u)
      << out.error().message;
}

TEST(SyntheticFatbin, MinimalEntriesAreBoundedBySize) {
  // One container of 1000 entries with 64-byte headers and empty payloads: the walk
  // returns exactly size/64 entries (the most any section can hold).
  const uint64_t n = 1000;
  const auto s = test::fatbin_container(
      std::vector<test::FatbinEntrySpec>(n, {.kind = 2, .arch = 80, .payload = 0}));
  ASSERT_EQ(s.size(), 16 + n * 64);
  auto r = parse_fatbin_section(s, 0x5000);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].entries.size(), n);
  EXPECT_EQ((*r)[0].entries.back().header_offset, 0x5000 + 16 + (n - 1) * 64);
  EXPECT_EQ((*r)[0].entries.back().kind, k_fatbin_kind_cubin);
  EXPECT_EQ((*r)[0].entries.back().arch, 80u);
}

TEST(SyntheticFatbin, ZeroPaddingBetweenContainersIsSkipped) {
  // Two containers of one compute_90a entry (flags 0x100011: `a`, 64-bit, Linux), 24 zero
  // bytes between them.
  const auto one =
      test::fatbin_container({{.kind = 1, .arch = 90, .payload = 0, .flags = 0x100011}});
  const auto s = test::concat({one, test::filled(24, 0), one});
  auto r = parse_fatbin_section(s, 0);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[1].offset, 16u + 64 + 24);
  const FatbinEntry& e = (*r)[1].entries.at(0);
  EXPECT_EQ(e.kind, k_fatbin_kind_ptx);
  EXPECT_EQ(e.arch, 90u);
  EXPECT_TRUE(e.arch_specific);
  EXPECT_FALSE(e.family);
}

TEST(SyntheticFatbin, HeaderOnlyContainersAreContainersWithoutEntries) {
  // What `tailor slim` leaves of a container with no code for the kept GPUs: its 16-byte
  // header, payload size 0. Two of them, one followed by zeros (an emptied container that
  // kept its address), around a container with one entry: three containers, the walk goes
  // on after each.
  const auto s = test::concat({test::fatbin_header(0), test::fatbin_header(0), test::filled(24, 0),
                               test::fatbin_container({{.kind = 2, .arch = 90, .payload = 0}})});
  const uint64_t full = 16 + 16 + 24;
  auto r = parse_fatbin_section(s, 0x3000);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0].offset, 0x3000u);
  EXPECT_EQ((*r)[0].size, 16u);
  EXPECT_TRUE((*r)[0].entries.empty());
  EXPECT_EQ((*r)[1].offset, 0x3000u + 16);
  EXPECT_EQ((*r)[1].size, 16u);
  EXPECT_TRUE((*r)[1].entries.empty());
  EXPECT_EQ((*r)[2].offset, 0x3000u + full);
  ASSERT_EQ((*r)[2].entries.size(), 1u);
  EXPECT_EQ((*r)[2].entries[0].kind, k_fatbin_kind_cubin);
  EXPECT_EQ((*r)[2].entries[0].arch, 90u);
  // A section of header-only containers alone.
  const auto only = test::concat({test::fatbin_header(0), test::fatbin_header(0),
                                  test::fatbin_header(0), test::fatbin_header(0)});
  r = parse_fatbin_section(only, 0);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->size(), 4u);
  for (const auto& c : *r) EXPECT_TRUE(c.entries.empty());
}

TEST(SyntheticFatbin, EmptyAndTinySections) {
  EXPECT_TRUE(parse_fatbin_section({}, 0));
  std::vector<std::byte> three(3);
  EXPECT_TRUE(parse_fatbin_section(three, 0));  // zero padding only
  std::vector<std::byte> junk(3, std::byte{0x41});
  auto r = parse_fatbin_section(junk, 0x10);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("no fatbin container magic at 0x10"), std::string::npos);
}
