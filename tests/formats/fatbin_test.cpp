// The fatbin walk over nvcc-made libraries: exact targets, entry counts and compression
// per nvcc option (fatbin-format.md's table), and payloads byte-identical to what
// cuobjdump extracts from the same file.
#include "formats/fatbin.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "formats/decompress.h"
#include "formats/elf.h"
#include "support/fixtures.h"
#include "util/process.h"

using namespace tailor;
using namespace tailor::formats;
namespace fs = std::filesystem;
using tailor::test::fixture;
using tailor::test::slurp;

namespace {

// Every entry of .nv_fatbin and __nv_relfatbin, in file order.
std::vector<FatbinEntry> entries_of(Bytes file) {
  std::vector<FatbinEntry> out;
  auto elf = parse_elf(file);
  EXPECT_TRUE(elf) << elf.error().message;
  if (!elf) return out;
  for (const char* name : {".nv_fatbin", "__nv_relfatbin"}) {
    const ElfSection* s = elf->find(name);
    if (!s) continue;
    auto bytes = section_bytes(file, *s);
    EXPECT_TRUE(bytes);
    auto containers = parse_fatbin_section(*bytes, s->offset);
    EXPECT_TRUE(containers) << containers.error().message;
    if (!containers) continue;
    for (auto& c : *containers) {
      EXPECT_GE(c.offset, s->offset);
      EXPECT_LE(c.offset + c.size, s->offset + s->size);
      for (auto& e : c.entries) out.push_back(e);
    }
  }
  return out;
}

// An entry's raw header fields as the expectations spell them: "cubin 80", "ptx 90a",
// "cubin 120f". formats names no targets: that is cuda::FatbinCode's (tests/cuda).
std::string fields(const FatbinEntry& e) {
  const std::string kind = e.kind == k_fatbin_kind_cubin ? "cubin"
                           : e.kind == k_fatbin_kind_ptx ? "ptx"
                                                         : "kind " + std::to_string(e.kind);
  return kind + " " + std::to_string(e.arch) + (e.arch_specific ? "a" : "") + (e.family ? "f" : "");
}

std::vector<std::string> target_and_compression(const std::vector<FatbinEntry>& entries) {
  std::vector<std::string> out;
  for (auto& e : entries)
    out.push_back(fields(e) + ":" + std::string(compression_name(e.compression)));
  std::sort(out.begin(), out.end());
  return out;
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

struct Expectation {
  const char* fixture;
  std::vector<std::string> entries;  // "fields:compression" (fields(e)), sorted
};

class FatbinFixture : public testing::TestWithParam<Expectation> {};

TEST_P(FatbinFixture, TargetsCountsAndCompression) {
  const Expectation& want = GetParam();
  if (!fs::exists(fixture(want.fixture)))
    GTEST_SKIP() << fixture(want.fixture) << " not built (no nvcc)";
  auto file = slurp(fixture(want.fixture));
  auto entries = entries_of(file);
  auto sorted = want.entries;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(target_and_compression(entries), sorted);
  for (auto& e : entries) {
    SCOPED_TRACE(fields(e));
    EXPECT_GE(e.header_size, 64u);
    EXPECT_EQ(e.stored_size % 8, 0u);
    if (e.compression == FatbinCompression::none) {
      EXPECT_EQ(e.compressed_size, 0u);
      EXPECT_EQ(e.uncompressed_size, e.stored_size);
    } else {
      EXPECT_GT(e.compressed_size, 0u);
      EXPECT_LE(e.compressed_size, e.stored_size);
      EXPECT_LT(e.stored_size - e.compressed_size, 8u);  // padding only
      EXPECT_GT(e.uncompressed_size, e.compressed_size);
    }
    auto payload = decompress_entry(file, e, 16 << 20);
    ASSERT_TRUE(payload) << payload.error().message;
    EXPECT_EQ(payload->size(), e.uncompressed_size);
    if (e.kind == k_fatbin_kind_cubin) {
      EXPECT_TRUE(looks_like_elf(*payload));
    }
    if (e.kind == k_fatbin_kind_ptx) {
      EXPECT_NE(as_chars(*payload).find(".target sm_"), std::string_view::npos);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Nvcc13, FatbinFixture,
    testing::Values(
        Expectation{"sass_75_80",
                    {"cubin 75:none", "cubin 75:none", "cubin 80:none", "cubin 80:none"}},
        Expectation{"sass_ptx_80", {"cubin 80:none", "cubin 80:none", "ptx 80:zstd"}},
        Expectation{"sm_90a", {"cubin 90a:none", "cubin 90a:none", "ptx 90a:zstd"}},
        Expectation{"family_120f", {"cubin 120f:none", "cubin 120f:none"}},
        Expectation{"compress_all", {"cubin 80:zstd", "cubin 80:zstd", "ptx 80:zstd"}},
        Expectation{"mode_size", {"cubin 80:zstd", "cubin 80:zstd", "ptx 80:zstd"}},
        Expectation{"mode_speed", {"cubin 80:none", "cubin 80:none", "ptx 80:lz4"}},
        Expectation{"mode_none", {"cubin 80:none", "cubin 80:none", "ptx 80:none"}},
        Expectation{"rdc", {"cubin 80:none", "cubin 80:zstd"}}, Expectation{"plain_c", {}}),
    [](const testing::TestParamInfo<Expectation>& info) {
      return std::string(info.param.fixture);
    });

// cuobjdump -all -xelf/-xptx write every cubin and PTX to files; their bytes must be exactly
// our decompressed payloads (PTX without the NUL terminator the fatbin stores), and their
// names must agree with ours (cuobjdump drops the 'f' of family targets and names PTX sm_XY).
TEST(FatbinVsCuobjdump, PayloadsAndNamesAgree) {
  std::string cuobjdump = find_cuobjdump();
  if (cuobjdump.empty()) GTEST_SKIP() << "cuobjdump not found (pip install nvidia-cuda-cuobjdump)";
  int compared = 0;
  for (std::string name : {"sass_75_80", "sass_ptx_80", "sm_90a", "family_120f", "compress_all",
                           "mode_size", "mode_speed", "mode_none", "rdc"}) {
    SCOPED_TRACE(name);
    if (!fs::exists(fixture(name))) GTEST_SKIP() << fixture(name) << " not built";
    auto file = slurp(fixture(name));
    fs::path dir =
        fs::temp_directory_path() / ("tailor_cuobjdump_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    CommandSpec spec;
    spec.cwd = dir.string();
    spec.timeout = std::chrono::seconds(60);
    SystemCommandRunner runner;
    spec.argv = {cuobjdump, "-all", "-xelf", "all", fixture(name)};
    auto r1 = runner.run(spec);
    ASSERT_TRUE(r1.ok()) << r1.err;
    spec.argv = {cuobjdump, "-all", "-xptx", "all", fixture(name)};
    runner.run(spec);  // exits non-zero when there is no PTX
    std::multiset<std::string> theirs_cubin, theirs_ptx, their_names;
    for (auto& f : fs::directory_iterator(dir)) {
      auto bytes = slurp(f.path().string());
      std::string text(as_chars(bytes));
      std::string fname = f.path().filename().string();
      // <lib>.<n>.<sm_XY[a]>.<cubin|ptx>
      auto ext = fname.substr(fname.rfind('.') + 1);
      auto stem = fname.substr(0, fname.rfind('.'));
      auto target = stem.substr(stem.rfind('.') + 1);
      their_names.insert(target + "." + ext);
      (ext == "cubin" ? theirs_cubin : theirs_ptx).insert(text);
    }
    std::multiset<std::string> ours_cubin, ours_ptx, our_names;
    for (auto& e : entries_of(file)) {
      auto payload = decompress_entry(file, e, 16 << 20);
      ASSERT_TRUE(payload) << payload.error().message;
      std::string text(as_chars(*payload));
      std::string target = "sm_" + std::to_string(e.arch) + (e.arch_specific ? "a" : "");
      if (e.kind == k_fatbin_kind_cubin) {
        ours_cubin.insert(text);
        our_names.insert(target + ".cubin");
      } else {
        ours_ptx.insert(text.substr(0, text.find('\0')));
        our_names.insert(target + ".ptx");
      }
    }
    EXPECT_EQ(our_names, their_names);
    EXPECT_TRUE(ours_cubin == theirs_cubin) << "cubin bytes differ from cuobjdump -xelf";
    EXPECT_TRUE(ours_ptx == theirs_ptx) << "PTX text differs from cuobjdump -xptx";
    compared += static_cast<int>(their_names.size());
    fs::remove_all(dir);
  }
  EXPECT_GT(compared, 20);
}
