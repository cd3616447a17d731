// The ELF reader over libraries made at build time by g++/nvcc (tests/fixtures), checked
// against what binutils' readelf says about the same files.
#include "formats/elf.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "formats/decompress.h"
#include "formats/fatbin.h"
#include "support/fixtures.h"
#include "util/process.h"

using namespace tailor;
using namespace tailor::formats;

namespace {

using test::fixture;
using test::slurp;

#define LOAD_FIXTURE(var, name)                                                  \
  if (!std::filesystem::exists(fixture(name)))                                   \
    GTEST_SKIP() << "fixture " << fixture(name) << " not built (no toolchain?)"; \
  auto var = slurp(fixture(name))

// readelf -d: the [NEEDED]/[RUNPATH]/[RPATH]/[SONAME] values, in order.
std::vector<std::string> readelf_dynamic(const std::string& path, const std::string& tag) {
  auto r = run_command({"readelf", "-dW", path});
  std::vector<std::string> out;
  std::regex re("\\(" + tag + "\\)[^\\[]*\\[([^\\]]*)\\]");
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, re)) out.push_back(m[1]);
  }
  return out;
}

// readelf -V: "File: libc.so.6" then "Name: GLIBC_2.2.5" lines.
std::vector<ElfVersionNeed> readelf_version_needs(const std::string& path) {
  auto r = run_command({"readelf", "-VW", path});
  std::vector<ElfVersionNeed> out;
  std::istringstream lines(r.out);
  bool in_needs = false;
  std::regex file_re("File: (\\S+)"), name_re("Name: (\\S+)");
  for (std::string line; std::getline(lines, line);) {
    if (line.find("Version needs section") != std::string::npos)
      in_needs = true;
    else if (line.find("section '") != std::string::npos)
      in_needs = false;
    std::smatch m;
    if (!in_needs) continue;
    if (std::regex_search(line, m, file_re))
      out.push_back({m[1], {}});
    else if (std::regex_search(line, m, name_re) && !out.empty())
      out.back().versions.push_back(m[1]);
  }
  return out;
}

bool have_readelf() { return !find_in_path("readelf").empty(); }

}  // namespace

TEST(Elf, PlainLibraryHeaderAndSections) {
  LOAD_FIXTURE(bytes, "plain_c");
  ASSERT_TRUE(looks_like_elf(bytes));
  auto elf = parse_elf(bytes);
  ASSERT_TRUE(elf) << elf.error().message;
  // The fixture is built by the project's own compiler: the target's machine.
#if defined(__aarch64__)
  EXPECT_EQ(elf->machine, "aarch64");
  EXPECT_EQ(elf->e_machine, 183);
#else
  EXPECT_EQ(elf->machine, "x86_64");
  EXPECT_EQ(elf->e_machine, 62);
#endif
  EXPECT_TRUE(elf->is_64);
  ASSERT_NE(elf->find(".dynstr"), nullptr);
  ASSERT_NE(elf->find(".dynsym"), nullptr);
  EXPECT_EQ(elf->find(".nv_fatbin"), nullptr);
  EXPECT_EQ(elf->find("no such section"), nullptr);
  EXPECT_FALSE(elf->x86_isa_needed.has_value());
  auto dynstr = section_bytes(bytes, *elf->find(".dynstr"));
  ASSERT_TRUE(dynstr);
  EXPECT_NE(as_chars(*dynstr).find("tailor_fixture_add"), std::string_view::npos);
}

TEST(Elf, DynamicSectionMatchesReadelf) {
  if (!have_readelf()) GTEST_SKIP() << "readelf not on PATH";
  for (std::string name : {"plain_c", "glibc_234", "isa_v3", "cxx11_abi", "sass_ptx_80", "rdc"}) {
    SCOPED_TRACE(name);
    LOAD_FIXTURE(bytes, name);
    auto elf = parse_elf(bytes);
    ASSERT_TRUE(elf) << elf.error().message;
    EXPECT_EQ(elf->needed, readelf_dynamic(fixture(name), "NEEDED"));
    auto runpath = readelf_dynamic(fixture(name), "RUNPATH");
    auto rpath = readelf_dynamic(fixture(name), "RPATH");
    auto joined = [](const std::vector<std::string>& v) {
      std::string s;
      for (auto& p : v) s += (s.empty() ? "" : ":") + p;
      return s;
    };
    EXPECT_EQ(joined(elf->runpath), runpath.empty() ? "" : runpath[0]);
    EXPECT_EQ(joined(elf->rpath), rpath.empty() ? "" : rpath[0]);
    auto needs = readelf_version_needs(fixture(name));
    ASSERT_EQ(elf->version_needs.size(), needs.size());
    for (size_t i = 0; i < needs.size(); ++i) {
      EXPECT_EQ(elf->version_needs[i].file, needs[i].file);
      auto a = elf->version_needs[i].versions, b = needs[i].versions;
      std::sort(a.begin(), a.end());
      std::sort(b.begin(), b.end());
      EXPECT_EQ(a, b);
    }
  }
}

TEST(Elf, RunpathAndRpathAreSplit) {
  LOAD_FIXTURE(with_runpath, "glibc_234");
  auto a = parse_elf(with_runpath);
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(a->runpath, (std::vector<std::string>{"$ORIGIN/lib", "/opt/tailor/lib"}));
  EXPECT_TRUE(a->rpath.empty());
  LOAD_FIXTURE(with_rpath, "isa_v3");
  auto b = parse_elf(with_rpath);
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_EQ(b->rpath, (std::vector<std::string>{"/opt/old-style"}));
  EXPECT_TRUE(b->runpath.empty());
}

TEST(Elf, SymbolVersionRaisesGlibcRequirement) {
  LOAD_FIXTURE(bytes, "glibc_234");
  auto elf = parse_elf(bytes);
  ASSERT_TRUE(elf) << elf.error().message;
  auto libc = std::find_if(elf->version_needs.begin(), elf->version_needs.end(),
                           [](auto& n) { return n.file == "libc.so.6"; });
  ASSERT_NE(libc, elf->version_needs.end());
  EXPECT_NE(std::find(libc->versions.begin(), libc->versions.end(), "GLIBC_2.34"),
            libc->versions.end());
  LOAD_FIXTURE(plain, "plain_c");
  auto p = parse_elf(plain);
  ASSERT_TRUE(p);
  for (auto& n : p->version_needs)
    EXPECT_EQ(std::find(n.versions.begin(), n.versions.end(), "GLIBC_2.34"), n.versions.end());
}

TEST(Elf, X86IsaNote) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "the x86 ISA note exists only in x86_64 objects; this build's fixtures are for "
                  "another machine";
#endif
  LOAD_FIXTURE(bytes, "isa_v3");
  auto elf = parse_elf(bytes);
  ASSERT_TRUE(elf) << elf.error().message;
  ASSERT_TRUE(elf->x86_isa_needed.has_value());
  EXPECT_EQ(*elf->x86_isa_needed & 0xf, 4u);  // GNU_PROPERTY_X86_ISA_1_V3
}

TEST(Elf, CubinInsideFatbinIsCudaElf) {
  LOAD_FIXTURE(bytes, "mode_none");
  auto host = parse_elf(bytes);
  ASSERT_TRUE(host);
  const ElfSection* fat = host->find(".nv_fatbin");
  ASSERT_NE(fat, nullptr);
  auto section = section_bytes(bytes, *fat);
  ASSERT_TRUE(section);
  auto containers = parse_fatbin_section(*section, fat->offset);
  ASSERT_TRUE(containers) << containers.error().message;
  int cubins = 0;
  for (auto& c : *containers)
    for (auto& e : c.entries) {
      if (e.kind != k_fatbin_kind_cubin) continue;
      auto payload = decompress_entry(bytes, e, 1 << 20);
      ASSERT_TRUE(payload) << payload.error().message;
      auto cubin = parse_elf(*payload);
      ASSERT_TRUE(cubin) << cubin.error().message;
      EXPECT_EQ(cubin->machine, "cuda");
      EXPECT_EQ(cubin->e_machine, 190);
      EXPECT_NE(cubin->find(".note.nv.tkinfo"), nullptr);  // "-arch sm_80" lives here
      ++cubins;
    }
  EXPECT_EQ(cubins, 2);
}

TEST(Elf, MachineNamesAndIsaNoteOnlyOnX86) {
  // The same library relabelled as aarch64: the machine follows e_machine and the
  // x86 ISA property (a processor-specific number) is no longer read as one.
  LOAD_FIXTURE(bytes, "isa_v3");
  uint16_t aarch64 = 183;
  std::memcpy(bytes.data() + 0x12, &aarch64, 2);
  auto elf = parse_elf(bytes);
  ASSERT_TRUE(elf) << elf.error().message;
  EXPECT_EQ(elf->machine, "aarch64");
  EXPECT_FALSE(elf->x86_isa_needed.has_value());
  uint16_t odd = 0x1234;
  std::memcpy(bytes.data() + 0x12, &odd, 2);
  EXPECT_EQ(parse_elf(bytes)->machine, "em_4660");
}
