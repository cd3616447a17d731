// Hostile ELF input made by truncating and patching a real library: every case is one
// Error that names the field and the offset, never a crash or a huge allocation.
// (The same through analyze_library, with the file name: tests/inspect/library_hostile_test.cpp.)
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "formats/elf.h"
#include "support/fixtures.h"

using namespace tailor;
using namespace tailor::formats;

namespace {

using test::fixture;
using test::slurp;

template <typename T>
void poke(std::vector<std::byte>& b, uint64_t at, T v) {
  ASSERT_LE(at + sizeof(T), b.size());
  std::memcpy(b.data() + at, &v, sizeof(T));
}
template <typename T>
T peek(const std::vector<std::byte>& b, uint64_t at) {
  T v;
  std::memcpy(&v, b.data() + at, sizeof(T));
  return v;
}

class HostileElf : public testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(fixture("glibc_234")))
      GTEST_SKIP() << fixture("glibc_234") << " not built";
    m_bytes = slurp(fixture("glibc_234"));
    auto elf = parse_elf(m_bytes);
    ASSERT_TRUE(elf) << elf.error().message;
    m_elf = *elf;
  }
  // File offset of section `name`'s 64-byte header.
  uint64_t header_of(const std::string& name) const {
    uint64_t shoff = peek<uint64_t>(m_bytes, 0x28);
    for (size_t i = 0; i < m_elf.sections.size(); ++i)
      if (m_elf.sections[i].name == name) return shoff + i * 64;
    ADD_FAILURE() << "no section " << name;
    return 0;
  }
  std::string error_of(const std::vector<std::byte>& b) {
    auto r = parse_elf(b);
    EXPECT_FALSE(r) << "hostile input parsed";
    return r ? "" : r.error().message;
  }
  std::vector<std::byte> m_bytes;
  ElfFile m_elf;
};

}  // namespace

TEST_F(HostileElf, NotElf) {
  std::vector<std::byte> junk(100, std::byte{'A'});
  EXPECT_FALSE(looks_like_elf(junk));
  EXPECT_NE(error_of(junk).find("not an ELF file"), std::string::npos);
  EXPECT_NE(error_of({}).find("not an ELF file"), std::string::npos);
}

TEST_F(HostileElf, TruncatedHeader) {
  auto b = m_bytes;
  b.resize(40);
  EXPECT_NE(error_of(b).find("ELF header at 0x0 runs past end of file (size 0x28)"),
            std::string::npos);
}

TEST_F(HostileElf, TruncatedBeforeSectionHeaders) {
  auto b = m_bytes;
  uint64_t shoff = peek<uint64_t>(b, 0x28);
  b.resize(shoff + 100);
  std::string e = error_of(b);
  EXPECT_NE(e.find("section header table at 0x"), std::string::npos) << e;
  EXPECT_NE(e.find("runs past end of file"), std::string::npos) << e;
}

TEST_F(HostileElf, SectionHeaderOffsetOverflows) {
  auto b = m_bytes;
  poke<uint64_t>(b, 0x28, 0xfffffffffffffff0ull);
  EXPECT_NE(error_of(b).find("section header table at 0xfffffffffffffff0"), std::string::npos);
}

TEST_F(HostileElf, SectionCountPastFile) {
  auto b = m_bytes;
  poke<uint16_t>(b, 0x3c, 0xfff0);
  EXPECT_NE(error_of(b).find("section header table at 0x"), std::string::npos);
}

TEST_F(HostileElf, WrongSectionHeaderSize) {
  auto b = m_bytes;
  poke<uint16_t>(b, 0x3a, 12);
  EXPECT_NE(error_of(b).find("e_shentsize at 0x3a is 0xc"), std::string::npos);
}

TEST_F(HostileElf, StringIndexOutOfRange) {
  auto b = m_bytes;
  poke<uint16_t>(b, 0x3e, 0x7fff);
  EXPECT_NE(error_of(b).find("e_shstrndx 32767"), std::string::npos);
}

TEST_F(HostileElf, SectionOffsetPastEndOfFile) {
  auto b = m_bytes;
  uint64_t h = header_of(".dynstr");
  poke<uint64_t>(b, h + 24, b.size() + 0x1000);
  std::string e = error_of(b);
  EXPECT_NE(e.find("section .dynstr at 0x"), std::string::npos) << e;
  EXPECT_NE(e.find("runs past end of file"), std::string::npos) << e;
}

TEST_F(HostileElf, SectionSizeHuge) {
  auto b = m_bytes;
  poke<uint64_t>(b, header_of(".gnu.version_r") + 32, 0xffffffffffffff00ull);
  std::string e = error_of(b);
  EXPECT_NE(e.find("section .gnu.version_r at 0x"), std::string::npos) << e;
}

TEST_F(HostileElf, SectionNameOutsideStringTable) {
  auto b = m_bytes;
  poke<uint32_t>(b, header_of(".dynsym"), 0x7fffffff);
  EXPECT_NE(error_of(b).find("name offset 0x7fffffff lies outside its string table"),
            std::string::npos);
}

TEST_F(HostileElf, VersionNeedPointsOutside) {
  auto b = m_bytes;
  const ElfSection* vr = m_elf.find(".gnu.version_r");
  ASSERT_NE(vr, nullptr);
  poke<uint32_t>(b, vr->offset + 8, 0x7ffffff0);  // vn_aux of the first record
  std::string e = error_of(b);
  EXPECT_NE(e.find("version need aux record at 0x"), std::string::npos) << e;
}

TEST_F(HostileElf, VersionNeedCountLoops) {
  // vn_cnt claims 65535 aux records and each vna_next points at the same record: the
  // walk must stop at the record budget, not spin or grow without bound.
  auto b = m_bytes;
  const ElfSection* vr = m_elf.find(".gnu.version_r");
  ASSERT_NE(vr, nullptr);
  poke<uint16_t>(b, vr->offset + 2, 0xffff);
  uint32_t aux = peek<uint32_t>(b, vr->offset + 8);
  poke<uint32_t>(b, vr->offset + aux + 12, 0x10);  // next aux: +16, walking off the end
  auto r = parse_elf(b);
  if (r) {
    for (auto& n : r->version_needs) EXPECT_LE(n.versions.size(), vr->size / 16 + 1);
  } else {
    EXPECT_NE(r.error().message.find("0x"), std::string::npos);
  }
}

TEST_F(HostileElf, DynamicStringOffsetOutside) {
  auto b = m_bytes;
  const ElfSection* dyn = m_elf.find(".dynamic");
  ASSERT_NE(dyn, nullptr);
  for (uint64_t p = dyn->offset; p + 16 <= dyn->offset + dyn->size; p += 16) {
    if (peek<int64_t>(b, p) == 1) {  // DT_NEEDED
      poke<uint64_t>(b, p + 8, 0x7fffffff);
      break;
    }
  }
  EXPECT_NE(error_of(b).find("DT_NEEDED name offset 0x7fffffff"), std::string::npos);
}
