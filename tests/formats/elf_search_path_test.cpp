// The search-path rewrite over libraries linked at build time by the real toolchain
// (tests/fixtures), checked with binutils' readelf, the ELF reader and the dynamic loader.
#include "formats/elf_search_path.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "formats/elf.h"
#include "support/fixtures.h"
#include "util/process.h"
#include "util/strings.h"

using namespace tailor;
using namespace tailor::formats;
namespace fs = std::filesystem;

namespace {

#define LOAD_SEARCH_PATH_FIXTURE(var, name)                                            \
  if (!fs::exists(test::fixture(name)))                                                \
    GTEST_SKIP() << "fixture " << test::fixture(name) << " not built (no toolchain?)"; \
  auto var = test::slurp(test::fixture(name))

bool sp_keep_origin(std::string_view e) { return e.starts_with("$ORIGIN"); }

fs::path sp_write_scratch(const std::string& name, const std::vector<std::byte>& bytes) {
  fs::path p = test::scratch_dir("elf_search_path_test") / name;
  std::ofstream(p, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  return p;
}

// readelf -dW's lines, one per dynamic entry.
std::string sp_readelf_dynamic(const fs::path& path) {
  auto r = run_command({"readelf", "-dW", path.string()});
  EXPECT_TRUE(r.ok()) << r.err;
  return r.out;
}

bool sp_contains(const std::vector<std::byte>& bytes, std::string_view text) {
  auto it = std::search(bytes.begin(), bytes.end(), text.begin(), text.end(),
                        [](std::byte b, char c) { return static_cast<char>(b) == c; });
  return it != bytes.end();
}

// The value field (d_val) of the first dynamic entry with `tag`: where the file holds it.
uint64_t sp_dynamic_value_at(const std::vector<std::byte>& bytes, int64_t tag) {
  auto elf = parse_elf(Bytes(bytes.data(), bytes.size()));
  EXPECT_TRUE(elf);
  const ElfSection* dyn = elf->find(".dynamic");
  EXPECT_NE(dyn, nullptr);
  for (uint64_t at = dyn->offset; at + 16 <= dyn->offset + dyn->size; at += 16) {
    int64_t t;
    std::memcpy(&t, bytes.data() + at, 8);
    if (t == tag) return at + 8;
  }
  ADD_FAILURE() << "no dynamic entry " << tag;
  return 0;
}

// Whether the dynamic loader loads the file (python3's ctypes: dlopen).
// The machine an ELF file is for, as Python's platform.machine() names it; "" when unknown.
std::string sp_machine(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  unsigned char head[20] = {};
  if (!f.read(reinterpret_cast<char*>(head), sizeof head) || std::memcmp(head,
                                                                         "\x7f"
                                                                         "ELF",
                                                                         4))
    return "";
  switch (head[18] | head[19] << 8) {
    case 62:
      return "x86_64";
    case 183:
      return "aarch64";
    default:
      return "";
  }
}

// Whether the host's python3 loads the library: true or false, or nullopt when that python
// cannot load it whatever its bytes (another machine's library: the fixtures of a cross
// build, run under qemu while python3 is the build machine's).
std::optional<bool> sp_loads(const fs::path& path) {
  auto machine = run_command({"python3", "-c", "import platform; print(platform.machine())"},
                             std::chrono::seconds(30));
  if (!machine.ok() || std::string(trim(machine.out)) != sp_machine(path)) return std::nullopt;
  return run_command(
             {"python3", "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])", path.string()},
             std::chrono::seconds(30))
      .ok();
}

// The load check, or a line saying why it cannot be made here.
void sp_expect_loads(const fs::path& path) {
  auto loads = sp_loads(path);
  if (!loads) {
    std::printf("note: %s not loaded: python3 here is another machine's\n", path.c_str());
    return;
  }
  EXPECT_TRUE(*loads) << path;
}

}  // namespace

TEST(ElfSearchPath, KeepsOriginEntriesAndShortensTheStringInPlace) {
  LOAD_SEARCH_PATH_FIXTURE(bytes, "glibc_234");
  const auto before = bytes;
  auto edits = rewrite_search_paths(bytes, sp_keep_origin);
  ASSERT_TRUE(edits) << edits.error().message;
  ASSERT_EQ(edits->size(), 1u);
  EXPECT_EQ((*edits)[0].tag, "RUNPATH");
  EXPECT_EQ((*edits)[0].before, "$ORIGIN/lib:/opt/tailor/lib");
  EXPECT_EQ((*edits)[0].after, "$ORIGIN/lib");
  EXPECT_EQ((*edits)[0].removed, (std::vector<std::string>{"/opt/tailor/lib"}));
  EXPECT_EQ(bytes.size(), before.size());
  EXPECT_FALSE(sp_contains(bytes, "/opt/tailor/lib"));

  auto path = sp_write_scratch("glibc_234.so", bytes);
  std::string d = sp_readelf_dynamic(path);
  EXPECT_NE(d.find("Library runpath: [$ORIGIN/lib]"), std::string::npos) << d;
  auto elf = parse_elf(Bytes(bytes.data(), bytes.size()));
  ASSERT_TRUE(elf) << elf.error().message;
  auto old = parse_elf(Bytes(before.data(), before.size()));
  EXPECT_EQ(elf->runpath, (std::vector<std::string>{"$ORIGIN/lib"}));
  EXPECT_EQ(elf->needed, old->needed);
  EXPECT_EQ(elf->version_needs.size(), old->version_needs.size());
  sp_expect_loads(path);

  // A second pass has nothing left to do.
  auto again = rewrite_search_paths(bytes, sp_keep_origin);
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->empty());
}

TEST(ElfSearchPath, RemovesARunpathOfTheBuildMachineAndTheLibraryStillLoads) {
  LOAD_SEARCH_PATH_FIXTURE(bytes, "runpath_build_machine");
  const auto old = parse_elf(Bytes(bytes.data(), bytes.size()));
  ASSERT_TRUE(old);
  ASSERT_EQ(old->runpath, (std::vector<std::string>{"/root/.pyenv/versions/3.11.7/lib"}));
  auto edits = rewrite_search_paths(bytes, sp_keep_origin);
  ASSERT_TRUE(edits) << edits.error().message;
  ASSERT_EQ(edits->size(), 1u);
  EXPECT_EQ((*edits)[0].after, "");
  EXPECT_FALSE(sp_contains(bytes, "/root/.pyenv"));

  auto path = sp_write_scratch("runpath_build_machine.so", bytes);
  std::string d = sp_readelf_dynamic(path);
  EXPECT_EQ(d.find("RUNPATH"), std::string::npos) << d;
  EXPECT_EQ(d.find("RPATH"), std::string::npos) << d;
  auto elf = parse_elf(Bytes(bytes.data(), bytes.size()));
  ASSERT_TRUE(elf) << elf.error().message;
  EXPECT_TRUE(elf->runpath.empty());
  EXPECT_EQ(elf->needed, old->needed);
  sp_expect_loads(path);
}

TEST(ElfSearchPath, RemovesAnOldStyleRpath) {
  LOAD_SEARCH_PATH_FIXTURE(bytes, "isa_v3");
  auto edits = rewrite_search_paths(bytes, sp_keep_origin);
  ASSERT_TRUE(edits) << edits.error().message;
  ASSERT_EQ(edits->size(), 1u);
  EXPECT_EQ((*edits)[0].tag, "RPATH");
  EXPECT_EQ((*edits)[0].removed, (std::vector<std::string>{"/opt/old-style"}));
  auto path = sp_write_scratch("isa_v3.so", bytes);
  EXPECT_EQ(sp_readelf_dynamic(path).find("RPATH"), std::string::npos);
  auto elf = parse_elf(Bytes(bytes.data(), bytes.size()));
  ASSERT_TRUE(elf);
  EXPECT_TRUE(elf->rpath.empty());
}

TEST(ElfSearchPath, LeavesAFileAloneWhenEveryEntryStays) {
  LOAD_SEARCH_PATH_FIXTURE(bytes, "glibc_234");
  const auto before = bytes;
  auto edits = rewrite_search_paths(bytes, [](std::string_view) { return true; });
  ASSERT_TRUE(edits);
  EXPECT_TRUE(edits->empty());
  EXPECT_EQ(bytes, before);
  LOAD_SEARCH_PATH_FIXTURE(plain, "plain_c");
  const auto plain_before = plain;
  auto none = rewrite_search_paths(plain, sp_keep_origin);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
  EXPECT_EQ(plain, plain_before);
}

// A linker may store a short name as the tail of a longer string: a DT_NEEDED (DT_SONAME)
// that points inside the RUNPATH string here. Shortening the string would change that name, so the
// rewrite refuses and leaves the file as it was; removing the entry keeps the bytes.
TEST(ElfSearchPath, RefusesToRewriteAStringAnotherNameSharesAndLeavesTheFile) {
  LOAD_SEARCH_PATH_FIXTURE(bytes, "glibc_234");
  const uint64_t runpath_at = sp_dynamic_value_at(bytes, 29);
  const uint64_t needed_at = sp_dynamic_value_at(bytes, 1);
  uint64_t runpath;
  std::memcpy(&runpath, bytes.data() + runpath_at, 8);
  const uint64_t inside = runpath + std::string("$ORIGIN/lib:").size();  // "/opt/tailor/lib"
  std::memcpy(bytes.data() + needed_at, &inside, 8);
  const auto before = bytes;
  auto edits = rewrite_search_paths(bytes, sp_keep_origin);
  ASSERT_FALSE(edits);
  EXPECT_NE(edits.error().message.find("shares its bytes with another name"), std::string::npos)
      << edits.error().message;
  EXPECT_EQ(bytes, before);

  LOAD_SEARCH_PATH_FIXTURE(machine, "runpath_build_machine");
  const uint64_t m_runpath_at = sp_dynamic_value_at(machine, 29);
  const uint64_t m_needed_at = sp_dynamic_value_at(machine, 14);  // DT_SONAME
  uint64_t m_runpath;
  std::memcpy(&m_runpath, machine.data() + m_runpath_at, 8);
  const uint64_t m_inside =
      m_runpath + std::string("/root/.pyenv/versions/3.11.7/").size();  // "lib"
  std::memcpy(machine.data() + m_needed_at, &m_inside, 8);
  auto removed = rewrite_search_paths(machine, sp_keep_origin);
  ASSERT_TRUE(removed) << removed.error().message;
  ASSERT_EQ(removed->size(), 1u);
  auto elf = parse_elf(Bytes(machine.data(), machine.size()));
  ASSERT_TRUE(elf) << elf.error().message;
  EXPECT_TRUE(elf->runpath.empty());
  EXPECT_EQ(elf->soname, "lib");  // the shared bytes stayed
}

TEST(ElfSearchPath, RefusesWhenTheLoaderReadsAnotherStringTable) {
  LOAD_SEARCH_PATH_FIXTURE(bytes, "glibc_234");
  const uint64_t strtab_at = sp_dynamic_value_at(bytes, 5);  // DT_STRTAB
  uint64_t v;
  std::memcpy(&v, bytes.data() + strtab_at, 8);
  v += 8;
  std::memcpy(bytes.data() + strtab_at, &v, 8);
  const auto before = bytes;
  auto edits = rewrite_search_paths(bytes, sp_keep_origin);
  ASSERT_FALSE(edits);
  EXPECT_NE(edits.error().message.find("DT_STRTAB"), std::string::npos) << edits.error().message;
  EXPECT_EQ(bytes, before);
}

// A file may name its sections from .dynstr itself (e_shstrndx): a section name inside the
// RUNPATH string is a shared string too.
TEST(ElfSearchPath, SectionNamesFromTheSameTableCountAsSharers) {
  LOAD_SEARCH_PATH_FIXTURE(bytes, "glibc_234");
  auto elf = parse_elf(Bytes(bytes.data(), bytes.size()));
  ASSERT_TRUE(elf);
  auto dynstr = elf->find_index(".dynstr");
  ASSERT_TRUE(dynstr);
  const uint64_t runpath_at = sp_dynamic_value_at(bytes, 29);
  uint64_t runpath;
  std::memcpy(&runpath, bytes.data() + runpath_at, 8);
  const uint32_t inside = static_cast<uint32_t>(runpath + std::string("$ORIGIN/lib:").size());
  for (size_t i = 0; i < elf->sections.size(); ++i) {
    const uint32_t name = i == 1 ? inside : 0;
    std::memcpy(bytes.data() + elf->e_shoff + i * 64, &name, 4);
  }
  const auto shstrndx = static_cast<uint16_t>(*dynstr);
  std::memcpy(bytes.data() + 0x3e, &shstrndx, 2);
  auto named = parse_elf(Bytes(bytes.data(), bytes.size()));
  ASSERT_TRUE(named) << named.error().message;
  EXPECT_EQ(named->sections[1].name, "/opt/tailor/lib");
  const auto before = bytes;
  auto edits = rewrite_search_paths(bytes, sp_keep_origin);
  ASSERT_FALSE(edits);
  EXPECT_NE(edits.error().message.find("shares its bytes with another name"), std::string::npos)
      << edits.error().message;
  EXPECT_EQ(bytes, before);
}
