// Device code that libraries keep outside .nv_fatbin (cuFFT's .data/.ldata, cuBLASLt's
// .cask_resource): the per-library report counts the containers per section and in the
// library's targets, the text says where they are, JSON carries them, GPU verdicts count
// them (LTO IR, which only the library links, covers no GPU); sections that are not
// allocated, have no file bytes or overlap device code or each other are not searched
// (twice); the mapped-file path that hands pages back agrees with the in-memory one; and
// ordinary libraries keep the report they had.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../formats/synthetic_elf.h"
#include "inspect/inspect_report.h"
#include "inspect/library_report.h"
#include "inspect/render.h"
#include "inspect/verdicts.h"
#include "support/fatbin_writer.h"
#include "support/fixtures.h"
#include "target_codes.h"

using namespace tailor;
using namespace tailor::inspect;
namespace te = tailor::testing_elf;
namespace fs = std::filesystem;
using tailor::test::fixture;

namespace {

using tailor::test::concat;
using tailor::test::filled;

std::string write_scratch(const std::string& name, const std::vector<std::byte>& bytes) {
  fs::path p = tailor::test::scratch_dir("embedded_fatbin") / name;
  std::ofstream(p, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  return p.string();
}

std::vector<std::string> names(const std::vector<TargetStats>& targets) {
  std::vector<std::string> out;
  for (const auto& t : targets) out.push_back(t.name);
  return out;
}

const TargetStats* target(const std::vector<TargetStats>& targets, const std::string& name) {
  for (const auto& t : targets)
    if (t.name == name) return &t;
  return nullptr;
}

InspectReport one_library(const LibraryReport& lib) {
  InspectedLibrary l;
  static_cast<LibraryReport&>(l) = lib;
  InspectReport r;
  r.libraries.push_back(std::move(l));
  return r;
}

}  // namespace

TEST(EmbeddedFatbins, FixtureCountsInTheLibrarysTargets) {
  const std::string lib = fixture("embedded_fatbin");
  if (!fs::exists(lib)) GTEST_SKIP() << lib << " not built (no nvcc?)";
  const uint64_t container = fs::file_size(fs::path(lib).parent_path() / "embedded.fatbin");
  auto r = analyze_library_file(lib, {.verify_payloads = true});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->has_device_code);
  EXPECT_TRUE(r->payloads_verified);
  EXPECT_EQ(r->target_names(), (std::vector<std::string>{"sm_80", "compute_80"}));
  EXPECT_EQ(target(r->targets, "sm_80")->entries, 3u);
  EXPECT_EQ(target(r->targets, "compute_80")->entries, 3u);
  EXPECT_EQ(r->device_code_bytes, 3 * container);
  EXPECT_EQ(r->embedded_containers(), 3u);
  EXPECT_EQ(r->embedded_bytes(), 3 * container);
  std::vector<std::string> sections;
  for (const auto& e : r->embedded) {
    sections.push_back(e.section);
    EXPECT_EQ(e.containers, 1u);
    EXPECT_EQ(e.bytes, container);
    EXPECT_EQ(names(e.targets), (std::vector<std::string>{"sm_80", "compute_80"}));
  }
  std::sort(sections.begin(), sections.end());
  EXPECT_EQ(sections, (std::vector<std::string>{".cask_resource", ".data", ".rodata"}));
  // The in-memory path (wheel members) gives the same report.
  auto again = analyze_library(tailor::test::slurp(lib), lib);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(again->target_names(), r->target_names());
  EXPECT_EQ(again->device_code_bytes, r->device_code_bytes);
  ASSERT_EQ(again->embedded.size(), r->embedded.size());
  for (size_t i = 0; i < r->embedded.size(); ++i)
    EXPECT_EQ(again->embedded[i].section, r->embedded[i].section);
}

TEST(EmbeddedFatbins, TextJsonAndVerdicts) {
  const std::string lib = fixture("embedded_fatbin");
  if (!fs::exists(lib)) GTEST_SKIP() << lib << " not built (no nvcc?)";
  auto report = inspect_paths({lib});
  ASSERT_TRUE(report) << report.error().message;
  const std::string text = render_text(*report);
  EXPECT_EQ(text.find("no CUDA device code"), std::string::npos) << text;
  EXPECT_NE(text.find("    embedded fatbins: 3 containers, "), std::string::npos) << text;
  EXPECT_NE(text.find("      .rodata: 1 container, "), std::string::npos) << text;
  EXPECT_NE(text.find("; entries sm_80 1, compute_80 1\n"), std::string::npos) << text;
  auto j = to_json(*report);
  const auto& embedded = j["libraries"][0]["embedded_fatbins"];
  ASSERT_EQ(embedded.size(), 3u) << j.dump();
  EXPECT_EQ(embedded[0]["containers"], 1);
  EXPECT_EQ(embedded[0]["target_stats"][0]["name"], "sm_80");
  EXPECT_EQ(embedded[0]["target_stats"][0]["entries"], 1);
  EXPECT_EQ(j["libraries"][0]["has_device_code"], true);
  VerdictSpecs specs;
  specs.gpu = {"8.0,12.0"};
  auto v = evaluate(*report, specs);
  ASSERT_TRUE(v) << v.error().message;
  ASSERT_EQ(v->items.size(), 2u);
  EXPECT_EQ(v->items[0].mode, "native");
  EXPECT_EQ(v->items[1].mode, "ptx_jit");
}

TEST(EmbeddedFatbins, SyntheticSectionsSaySectionByWhere) {
  // Containers of empty cubin entries (tests/formats/synthetic_elf.h) in .data and .ldata,
  // after other bytes; nothing in .nv_fatbin.
  auto c75 = te::fatbin_container(3, 0, 75), c90 = te::fatbin_container(1, 0, 90);
  auto lib = te::with_sections({".data", ".ldata"},
                               {concat({filled(24, 0x5a), c75, filled(8, 0), c75}), c90}, 0x200000);
  auto r = analyze_library(lib, "libfft.so");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->target_names(), (std::vector<std::string>{"sm_75", "sm_90"}));
  EXPECT_EQ(target(r->targets, "sm_75")->entries, 6u);
  ASSERT_EQ(r->embedded.size(), 2u);
  EXPECT_EQ(r->embedded[0].section, ".data");
  EXPECT_EQ(r->embedded[0].containers, 2u);
  EXPECT_EQ(r->embedded[0].bytes, 2 * c75.size());
  EXPECT_EQ(r->embedded[1].section, ".ldata");
  EXPECT_EQ(r->embedded[1].bytes, c90.size());
  EXPECT_EQ(r->device_code_bytes, 2 * c75.size() + c90.size());
  const std::string text = render_text(one_library(*r));
  EXPECT_NE(text.find("libfft.so  (x86_64, "), std::string::npos) << text;
  EXPECT_NE(text.find("device code 496 B in 2 targets\n"), std::string::npos) << text;
  EXPECT_NE(text.find("    embedded fatbins: 3 containers, 496 B in .data, .ldata\n"
                      "      .data: 2 containers, 416 B; entries sm_75 6\n"
                      "      .ldata: 1 container, 80 B; entries sm_90 1\n"),
            std::string::npos)
      << text;
}

TEST(EmbeddedFatbins, OnlyAllocatedSectionsWithFileBytes) {
  auto c = te::fatbin_container(2, 0, 80);
  // Not SHF_ALLOC (.comment, debug info): not searched.
  auto r = analyze_library(te::with_sections({".comment"}, {c}, 0, 0), "a.so");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(r->has_device_code);
  EXPECT_TRUE(r->embedded.empty());
  EXPECT_NE(render_text(one_library(*r)).find("no CUDA device code"), std::string::npos);
  // SHT_NOBITS (.bss) whose offset happens to point at a container: not searched.
  te::Builder b;
  std::vector<uint32_t> idx;
  const std::string shnames = te::string_table({".shstrtab", ".bss"}, idx);
  const uint64_t sh_at = b.add(shnames), at = b.add(c);
  uint32_t shstr = b.section({idx[0], te::k_strtab, sh_at, shnames.size()});
  b.section({idx[1], te::k_nobits, at, c.size(), 0, 0, te::k_shf_alloc | te::k_shf_write, at});
  r = analyze_library(b.build(shstr), "b.so");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(r->has_device_code);
  // A section past the end of the file is skipped, not an error.
  auto lib = te::with_sections({".rodata"}, {c});
  auto truncated = std::vector<std::byte>(lib.begin(), lib.end());
  uint64_t shoff;
  std::memcpy(&shoff, truncated.data() + 0x28, 8);
  const uint64_t huge = 1ull << 40;
  std::memcpy(truncated.data() + shoff + 2 * 64 + 32, &huge, 8);  // section 2's sh_size
  r = analyze_library(truncated, "c.so");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->embedded.empty());
}

TEST(EmbeddedFatbins, OverlappingSectionsAreSearchedOnce) {
  auto c = te::fatbin_container(2, 0, 80);
  // .nv_fatbin and an allocated section over the same bytes: counted once, as .nv_fatbin.
  {
    te::Builder b;
    std::vector<uint32_t> idx;
    const std::string shnames = te::string_table({".shstrtab", ".nv_fatbin", ".rodata"}, idx);
    const uint64_t sh_at = b.add(shnames), at = b.add(concat({filled(64, 0x33), c}));
    uint32_t shstr = b.section({idx[0], te::k_strtab, sh_at, shnames.size()});
    b.section({idx[1], te::k_progbits, at + 64, c.size(), 0, 0, te::k_shf_alloc, at + 64});
    b.section({idx[2], te::k_progbits, at, 64 + c.size(), 0, 0, te::k_shf_alloc, at});
    auto r = analyze_library(b.build(shstr), "x.so");
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(target(r->targets, "sm_80")->entries, 2u);
    EXPECT_TRUE(r->embedded.empty());
    EXPECT_EQ(r->device_code_bytes, c.size());
  }
  // 20000 section headers naming one 64 KiB range: searched once, counted once.
  {
    auto big = te::fatbin_container(1000, 0, 80);
    te::Builder b;
    std::vector<uint32_t> idx;
    const std::string shnames = te::string_table({".shstrtab", ".rodata"}, idx);
    const uint64_t sh_at = b.add(shnames), at = b.add(big);
    uint32_t shstr = b.section({idx[0], te::k_strtab, sh_at, shnames.size()});
    for (int i = 0; i < 20000; ++i)
      b.section({idx[1], te::k_progbits, at, big.size(), 0, 0, te::k_shf_alloc, at});
    const auto start = std::chrono::steady_clock::now();
    auto r = analyze_library(b.build(shstr), "y.so");
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - start)
                        .count();
    ASSERT_TRUE(r) << r.error().message;
    ASSERT_EQ(r->embedded.size(), 1u);
    EXPECT_EQ(r->embedded[0].containers, 1u);
    EXPECT_EQ(target(r->targets, "sm_80")->entries, 1000u);
    EXPECT_LT(ms, 2000);
  }
}

TEST(EmbeddedFatbins, HandingPagesBackGivesTheSameReport) {
  // 24 MiB of .ldata with a container every 1 MiB among zeros and other bytes: the mapped
  // path releases pages as the scan passes them and must count the same.
  std::vector<std::byte> section(24u << 20, std::byte{0});
  auto c = te::fatbin_container(4, 100, 86);
  for (size_t i = 0; i < 24; ++i) {
    std::memset(section.data() + (i << 20), 0x77, 4096);
    std::memcpy(section.data() + (i << 20) + 4096, c.data(), c.size());
  }
  auto lib = te::with_sections({".ldata"}, {section});
  auto in_memory = analyze_library(lib, "l.so");
  ASSERT_TRUE(in_memory) << in_memory.error().message;
  auto mapped = analyze_library_file(write_scratch("libbig.so", lib));
  ASSERT_TRUE(mapped) << mapped.error().message;
  for (const auto* r : {&*in_memory, &*mapped}) {
    ASSERT_EQ(r->embedded.size(), 1u);
    EXPECT_EQ(r->embedded[0].containers, 24u);
    EXPECT_EQ(r->embedded[0].bytes, 24 * c.size());
    EXPECT_EQ(target(r->targets, "sm_86")->entries, 96u);
  }
}

TEST(EmbeddedFatbins, HostileCandidatesNameThePath) {
  // Empty entries that each host a container header whose entries run to a last bad one
  // (test::candidate_chain): an error, not minutes of work.
  auto r = analyze_library(te::with_sections({".rodata"}, {tailor::test::candidate_chain(20000)}),
                           "evil.so");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message.rfind("evil.so: fatbin container candidates in the section at 0x", 0),
            0u)
      << r.error().message;
}

TEST(EmbeddedFatbins, OrdinaryLibrariesKeepTheirReport) {
  for (const char* name : {"sass_ptx_80", "rdc", "slim_multi", "plain_c", "cxx11_abi"}) {
    SCOPED_TRACE(name);
    if (!fs::exists(fixture(name))) continue;
    auto r = analyze_library_file(fixture(name));
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_TRUE(r->embedded.empty());
    EXPECT_EQ(render_text(one_library(*r)).find("embedded"), std::string::npos);
    EXPECT_EQ(to_json(one_library(*r))["libraries"][0]["embedded_fatbins"].size(), 0u);
  }
}

TEST(EmbeddedFatbins, LtoIrCoversNoGpu) {
  // cuFFT's lto_<arch> entries are linked by the library (nvJitLink); the driver loads none.
  InspectedLibrary lib;
  lib.path = "nvidia/cufft/lib/libcufft.so.11";
  lib.machine = "x86_64";
  lib.has_device_code = true;
  lib.targets = with_codes({{"sm_80", 357, 1, 1, {"lz4"}}, {"lto_50", 10046, 1, 1, {"lz4"}}});
  InspectReport report;
  report.libraries.push_back(lib);
  VerdictSpecs specs;
  specs.gpu = {"8.0"};
  auto v = evaluate(report, specs);
  ASSERT_TRUE(v) << v.error().message;
  ASSERT_EQ(v->items.size(), 1u);
  EXPECT_TRUE(v->items[0].pass);
  EXPECT_EQ(v->items[0].via, "sm_80");
  report.libraries[0].targets = with_codes({{"lto_50", 10046, 1, 1, {"lz4"}}});
  v = evaluate(report, specs);
  ASSERT_TRUE(v) << v.error().message;
  ASSERT_EQ(v->items.size(), 1u);
  EXPECT_FALSE(v->items[0].pass);
  EXPECT_EQ(v->items[0].mode, "none");
}
