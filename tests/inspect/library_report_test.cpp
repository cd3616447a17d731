// analyze_library over nvcc/g++-made fixtures: exact target lists in canonical order,
// counts and bytes per target, compression sets, system needs, C++ ABI and ISA level;
// and the counts agree with cuobjdump --list-elf / --list-ptx on the same files.
#include "inspect/library_report.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "formats/elf.h"
#include "support/fixtures.h"
#include "util/process.h"

using namespace tailor;
using namespace tailor::inspect;
namespace fs = std::filesystem;
using tailor::test::fixture;
using tailor::test::slurp;

namespace {

#define REPORT(var, name)                                                                   \
  if (!fs::exists(fixture(name))) GTEST_SKIP() << fixture(name) << " not built (no nvcc?)"; \
  auto var##_r = analyze_library_file(fixture(name));                                       \
  ASSERT_TRUE(var##_r) << var##_r.error().message;                                          \
  const LibraryReport& var = *var##_r

const TargetStats* target(const LibraryReport& r, const std::string& name) {
  for (auto& t : r.targets)
    if (t.name == name) return &t;
  return nullptr;
}

std::string find_cuobjdump() {
  if (const char* env = std::getenv("TAILOR_CUOBJDUMP")) return env;
  if (auto p = find_in_path("cuobjdump"); !p.empty()) return p;
  auto r = run_command({"python3", "-c",
                        "import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], 'cu13', "
                        "'bin', 'cuobjdump'))"});
  std::string path = r.out.substr(0, r.out.find('\n'));
  return r.ok() && fs::exists(path) ? path : "";
}

}  // namespace

TEST(LibraryReport, TargetListsInCanonicalOrder) {
  const std::map<std::string, std::vector<std::string>> want = {
      {"sass_75_80", {"sm_75", "sm_80"}},
      {"sass_ptx_80", {"sm_80", "compute_80"}},
      {"sm_90a", {"sm_90a", "compute_90a"}},
      {"family_120f", {"sm_120f"}},
      {"compress_all", {"sm_80", "compute_80"}},
      {"rdc", {"sm_80"}},
      {"plain_c", {}},
  };
  for (auto& [name, targets] : want) {
    SCOPED_TRACE(name);
    REPORT(r, name);
    EXPECT_EQ(r.target_names(), targets);
    EXPECT_EQ(r.has_device_code, !targets.empty());
    // nvcc's libraries are of its host; plain_c is the C compiler's, the target's.
    EXPECT_EQ(r.machine, name == "plain_c" ? tailor::test::cxx_fixture_machine()
                                           : tailor::test::nvcc_fixture_machine());
    EXPECT_EQ(r.file_size, fs::file_size(fixture(name)));
  }
}

TEST(LibraryReport, CountsBytesAndCompressionPerTarget) {
  REPORT(r, "sass_ptx_80");
  const TargetStats* sm80 = target(r, "sm_80");
  const TargetStats* ptx = target(r, "compute_80");
  ASSERT_TRUE(sm80 && ptx);
  EXPECT_EQ(sm80->entries, 2u);
  EXPECT_EQ(sm80->compression, std::set<std::string>{"none"});
  EXPECT_EQ(sm80->stored_bytes, sm80->uncompressed_bytes);
  EXPECT_EQ(ptx->entries, 1u);
  EXPECT_EQ(ptx->compression, std::set<std::string>{"zstd"});
  EXPECT_LT(ptx->stored_bytes, ptx->uncompressed_bytes);

  REPORT(none, "mode_none");
  REPORT(size, "mode_size");
  REPORT(speed, "mode_speed");
  // Same code, three modes: the uncompressed bytes agree, the stored ones do not.
  for (const char* t : {"sm_80", "compute_80"}) {
    SCOPED_TRACE(t);
    ASSERT_TRUE(target(none, t) && target(size, t) && target(speed, t));
    EXPECT_EQ(target(size, t)->uncompressed_bytes, target(speed, t)->uncompressed_bytes);
    EXPECT_LT(target(size, t)->stored_bytes, target(none, t)->stored_bytes);
  }
  EXPECT_EQ(target(speed, "compute_80")->compression, std::set<std::string>{"lz4"});
  EXPECT_EQ(target(size, "sm_80")->compression, std::set<std::string>{"zstd"});
  EXPECT_EQ(target(none, "compute_80")->compression, std::set<std::string>{"none"});
}

TEST(LibraryReport, RelocatableDeviceCodeCounts) {
  REPORT(r, "rdc");
  auto elf_bytes = fs::file_size(fixture("rdc"));
  (void)elf_bytes;
  const TargetStats* sm80 = target(r, "sm_80");
  ASSERT_NE(sm80, nullptr);
  EXPECT_EQ(sm80->entries, 2u);  // one in .nv_fatbin, one in __nv_relfatbin
  EXPECT_EQ(sm80->compression, (std::set<std::string>{"none", "zstd"}));
}

TEST(LibraryReport, DeviceCodeBytesAreTheFatbinSections) {
  REPORT(r, "rdc");
  std::ifstream in(fixture("rdc"), std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Bytes bytes(reinterpret_cast<const std::byte*>(chars.data()), chars.size());
  auto elf = formats::parse_elf(bytes);
  ASSERT_TRUE(elf);
  EXPECT_EQ(r.device_code_bytes, elf->find(".nv_fatbin")->size + elf->find("__nv_relfatbin")->size);
  // The in-memory and the mapped-file paths agree.
  auto again = analyze_library(bytes, fixture("rdc"));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->target_names(), r.target_names());
  EXPECT_EQ(again->device_code_bytes, r.device_code_bytes);
  EXPECT_EQ(again->targets[0].stored_bytes, r.targets[0].stored_bytes);
}

TEST(LibraryReport, NoDeviceCode) {
  REPORT(r, "plain_c");
  EXPECT_FALSE(r.has_device_code);
  EXPECT_EQ(r.device_code_bytes, 0u);
  EXPECT_TRUE(r.targets.empty());
  EXPECT_FALSE(r.cxx11_abi.has_value());  // no C++ at all
  EXPECT_FALSE(r.x86_isa_level.has_value());
}

TEST(LibraryReport, SystemNeeds) {
  REPORT(r, "glibc_234");
  bool glibc234 = false;
  for (auto& n : r.version_needs)
    for (auto& v : n.versions) glibc234 |= (n.file == "libc.so.6" && v == "GLIBC_2.34");
  EXPECT_TRUE(glibc234);
  EXPECT_EQ(r.runpath, (std::vector<std::string>{"$ORIGIN/lib", "/opt/tailor/lib"}));
  EXPECT_NE(std::find(r.needed.begin(), r.needed.end(), "libc.so.6"), r.needed.end());
  REPORT(isa, "isa_v3");
  // -z x86-64-v3 marks an x86_64 library; other machines' linkers write no such note.
  if (tailor::test::cxx_fixture_machine() == "x86_64")
    EXPECT_EQ(isa.x86_isa_level, "x86-64-v3");
  else
    EXPECT_FALSE(isa.x86_isa_level.has_value()) << *isa.x86_isa_level;
  EXPECT_EQ(isa.rpath, (std::vector<std::string>{"/opt/old-style"}));
}

TEST(LibraryReport, CxxAbi) {
  REPORT(old_abi, "cxx_old_abi");
  REPORT(new_abi, "cxx11_abi");
  ASSERT_TRUE(old_abi.cxx11_abi.has_value());
  EXPECT_FALSE(*old_abi.cxx11_abi);
  ASSERT_TRUE(new_abi.cxx11_abi.has_value());
  EXPECT_TRUE(*new_abi.cxx11_abi);
  REPORT(neither, "cxx_no_string");
  EXPECT_FALSE(neither.cxx11_abi.has_value());
}

TEST(LibraryReport, VerifyPayloads) {
  for (std::string name : {"sass_ptx_80", "mode_speed", "compress_all", "rdc", "sm_90a"}) {
    SCOPED_TRACE(name);
    if (!fs::exists(fixture(name))) GTEST_SKIP() << fixture(name) << " not built";
    auto r = analyze_library_file(fixture(name), {.verify_payloads = true});
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_TRUE(r->payloads_verified);
    auto too_small =
        analyze_library_file(fixture(name), {.verify_payloads = true, .max_entry_bytes = 64});
    ASSERT_FALSE(too_small);
    EXPECT_NE(too_small.error().message.find("exceeds the limit"), std::string::npos);
  }
}

TEST(LibraryReport, MissingFile) {
  auto r = analyze_library_file("/nonexistent/libnothing.so");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("/nonexistent/libnothing.so"), std::string::npos);
}

// cuobjdump names files <lib>.<n>.sm_XY[a].cubin|ptx; it prints family targets without
// their 'f' and PTX under its sm_ name, so ours are mapped the same way before comparing.
TEST(LibraryReport, CountsAgreeWithCuobjdump) {
  std::string cuobjdump = find_cuobjdump();
  if (cuobjdump.empty()) GTEST_SKIP() << "cuobjdump not found (pip install nvidia-cuda-cuobjdump)";
  for (std::string name : {"sass_75_80", "sass_ptx_80", "sm_90a", "family_120f", "compress_all",
                           "mode_speed", "mode_none", "rdc", "plain_c"}) {
    SCOPED_TRACE(name);
    REPORT(r, name);
    std::map<std::string, uint64_t> theirs, ours;
    for (const char* list : {"--list-elf", "--list-ptx"}) {
      auto out = run_command({cuobjdump, "-all", list, fixture(name)}, std::chrono::seconds(60));
      std::regex re("\\.(sm_[0-9]+a?)\\.(cubin|ptx)");
      std::istringstream lines(out.out);
      for (std::string line; std::getline(lines, line);) {
        std::smatch m;
        if (std::regex_search(line, m, re))
          theirs[std::string(m[1]) + "." + std::string(m[2])] += 1;
      }
    }
    for (auto& t : r.targets) {
      bool ptx = t.name.rfind("compute_", 0) == 0;
      std::string n = "sm_" + t.name.substr(t.name.find('_') + 1);
      if (n.back() == 'f') n.pop_back();
      ours[n + (ptx ? ".ptx" : ".cubin")] += t.entries;
    }
    EXPECT_EQ(ours, theirs);
  }
}
