// Hostile libraries through the whole analysis: one error line that starts with the path
// and names the offset; truncation at any point is an error or a report, never a crash.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "formats/elf.h"
#include "inspect/library_report.h"
#include "support/fixtures.h"

using namespace tailor;
using tailor::test::fixture;
using tailor::test::slurp;

namespace {

std::string hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

#define LOAD_FIXTURE(var, name)                                             \
  if (!std::filesystem::exists(fixture(name)))                              \
    GTEST_SKIP() << "fixture " << fixture(name) << " not built (no nvcc?)"; \
  auto var = slurp(fixture(name))

}  // namespace

TEST(LibraryHostile, TruncatedFileNamesPathAndOffset) {
  LOAD_FIXTURE(b, "glibc_234");
  b.resize(b.size() / 2);
  auto r = inspect::analyze_library(b, "/some/where/libbroken.so");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message.rfind("/some/where/libbroken.so: ", 0), 0u) << r.error().message;
  EXPECT_NE(r.error().message.find("runs past end of file"), std::string::npos);
  EXPECT_NE(r.error().message.find("0x"), std::string::npos);
  EXPECT_EQ(r.error().message.find('\n'), std::string::npos);
}

TEST(LibraryHostile, BrokenFatbinNamesPathAndEntryOffset) {
  LOAD_FIXTURE(f, "sass_ptx_80");
  auto elf = formats::parse_elf(f);
  ASSERT_TRUE(elf);
  const formats::ElfSection* s = elf->find(".nv_fatbin");
  ASSERT_NE(s, nullptr);
  const uint64_t entry = s->offset + 16;
  uint64_t fat_size;
  std::memcpy(&fat_size, f.data() + s->offset + 8, 8);
  uint32_t zero = 0;
  std::memcpy(f.data() + entry + 4, &zero, 4);
  auto r = inspect::analyze_library(f, "libbroken.so");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "libbroken.so: fatbin entry at " + hex(entry) +
                ": header size 0x0 is below 64 or runs past its container (end " +
                hex(s->offset + 16 + fat_size) + ")");
}

TEST(LibraryHostile, FatbinSectionPastEndOfFile) {
  LOAD_FIXTURE(f, "sass_ptx_80");
  auto elf = formats::parse_elf(f);
  ASSERT_TRUE(elf);
  uint64_t shoff;
  std::memcpy(&shoff, f.data() + 0x28, 8);
  for (size_t i = 0; i < elf->sections.size(); ++i) {
    if (elf->sections[i].name != ".nv_fatbin") continue;
    uint64_t huge = f.size() - 8;  // starts inside the file, ends far outside
    std::memcpy(f.data() + shoff + i * 64 + 24, &huge, 8);
  }
  auto r = inspect::analyze_library(f, "lib.so");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("lib.so: section .nv_fatbin at " + hex(f.size() - 8)),
            std::string::npos)
      << r.error().message;
}

TEST(LibraryHostile, EveryTruncationIsAnErrorOrAReport) {
  LOAD_FIXTURE(whole, "rdc");
  // Cut the file at many points (and always inside the device code): each prefix either
  // gives a report or one error line that starts with the path.
  int errors = 0;
  for (size_t n = 0; n < whole.size(); n += 4093) {
    std::vector<std::byte> b(whole.begin(), whole.begin() + n);
    auto r = inspect::analyze_library(b, "cut.so", {.verify_payloads = true});
    if (!r) {
      ++errors;
      EXPECT_EQ(r.error().message.find('\n'), std::string::npos);
      EXPECT_EQ(r.error().message.rfind("cut.so: ", 0), 0u);
    }
  }
  EXPECT_GT(errors, 0);
}
