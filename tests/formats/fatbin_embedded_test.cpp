// Fatbin containers that libraries keep in their own sections (cuFFT's .data/.ldata,
// cuBLASLt's .cask_resource): the scan finds a real nvcc container among other bytes at the
// file offset where it lies, with the entries the .nv_fatbin walk gives; candidates that do
// not validate (version, header size, size past the section, entries, alignment) are
// skipped, never errors; a magic inside a container is not another one; failed candidates
// cannot make the scan quadratic; the fixture that embeds `nvcc -fatbin` output in
// .rodata, .data and .cask_resource is found section by section.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "formats/elf.h"
#include "formats/fatbin.h"
#include "support/fatbin_writer.h"
#include "support/fixtures.h"
#include "synthetic_elf.h"

using namespace tailor;
using namespace tailor::formats;

namespace {

using test::fixture;
using test::slurp;

// The first container of a real nvcc-made .nv_fatbin (sm_80 SASS, compute_80 PTX).
struct RealContainer {
  std::vector<std::byte> bytes;
  std::vector<FatbinEntry> entries;  // header offsets relative to the container
};

RealContainer real_container() {
  RealContainer out;
  auto file = slurp(fixture("sass_ptx_80"));
  if (file.empty()) return out;
  auto elf = parse_elf(file);
  EXPECT_TRUE(elf) << elf.error().message;
  const ElfSection* s = elf ? elf->find(".nv_fatbin") : nullptr;
  if (!s) return out;
  auto containers = parse_fatbin_section(*section_bytes(file, *s), 0);
  EXPECT_TRUE(containers && !containers->empty());
  if (!containers || containers->empty()) return out;
  const FatbinContainer& c = containers->front();
  out.bytes.assign(file.begin() + s->offset + c.offset,
                   file.begin() + s->offset + c.offset + c.size);
  out.entries = c.entries;
  return out;
}

#define REAL_CONTAINER(var)             \
  RealContainer var = real_container(); \
  if (var.bytes.empty()) GTEST_SKIP() << fixture("sass_ptx_80") << " not built (no nvcc?)"

std::vector<std::byte> filler(size_t n, unsigned char value = 0x11) {
  return test::filled(n, value);
}

void append(std::vector<std::byte>& to, const std::vector<std::byte>& b) {
  to.insert(to.end(), b.begin(), b.end());
}

using test::fatbin_header;
using test::put;

std::vector<FatbinContainer> scan(Bytes section, uint64_t file_offset, uint64_t address) {
  auto r = find_embedded_fatbins(section, file_offset, address);
  EXPECT_TRUE(r) << r.error().message;
  return r ? *r : std::vector<FatbinContainer>{};
}

}  // namespace

TEST(EmbeddedFatbin, FindsARealContainerAmongOtherBytes) {
  REAL_CONTAINER(real);
  std::vector<std::byte> section = filler(40);
  append(section, real.bytes);
  append(section, filler(100));
  const uint64_t file_offset = 0x2000;
  auto found = scan(section, file_offset, 0x402000);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].offset, file_offset + 40);
  EXPECT_EQ(found[0].size, real.bytes.size());
  ASSERT_EQ(found[0].entries.size(), real.entries.size());
  for (size_t i = 0; i < real.entries.size(); ++i) {
    const FatbinEntry& got = found[0].entries[i];
    const FatbinEntry& want = real.entries[i];
    EXPECT_EQ(got.kind, want.kind);
    EXPECT_EQ(got.arch, want.arch);
    EXPECT_EQ(got.arch_specific, want.arch_specific);
    EXPECT_EQ(got.family, want.family);
    EXPECT_EQ(got.header_offset, want.header_offset + file_offset + 40);
    EXPECT_EQ(got.stored_size, want.stored_size);
    EXPECT_EQ(got.uncompressed_size, want.uncompressed_size);
    EXPECT_EQ(got.compression, want.compression);
    EXPECT_EQ(got.identifier, want.identifier);
  }
}

TEST(EmbeddedFatbin, ScanGoesOnAfterEachContainer) {
  REAL_CONTAINER(real);
  std::vector<std::byte> section;
  std::vector<uint64_t> at;
  for (size_t gap : {0, 8, 4096, 24}) {
    append(section, filler(gap));
    while (section.size() % 8) section.push_back(std::byte{0x22});
    at.push_back(section.size());
    append(section, real.bytes);
  }
  auto found = scan(section, 0, 0);
  ASSERT_EQ(found.size(), at.size());
  for (size_t i = 0; i < at.size(); ++i) EXPECT_EQ(found[i].offset, at[i]);
}

TEST(EmbeddedFatbin, AlignmentIsThatOfTheAddress) {
  REAL_CONTAINER(real);
  std::vector<std::byte> section = filler(12);
  append(section, real.bytes);
  // At section offset 12: 8-aligned only where the section's address is 4 modulo 8.
  EXPECT_TRUE(scan(section, 0x1000, 0x1000).empty());
  auto found = scan(section, 0x1000, 0x1004);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].offset, 0x1000u + 12);
}

TEST(EmbeddedFatbin, MagicInsideAContainerIsNotAnotherOne) {
  // A container whose only entry's payload (its identifier bytes) holds a whole valid
  // container: the scan reports the outer one and goes on after its end.
  auto inner = testing_elf::fatbin_container(2, 64, 90);
  auto outer = testing_elf::fatbin_container(1, 256, 80);
  const uint64_t payload_at = 16 + 64;
  std::memcpy(outer.data() + payload_at + 8, inner.data(), inner.size());
  EXPECT_EQ(scan(inner, 0, 0).size(), 1u);
  std::vector<std::byte> section = outer;
  append(section, filler(8));
  auto found = scan(section, 0, 0);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].size, outer.size());
  ASSERT_EQ(found[0].entries.size(), 1u);
  EXPECT_EQ(found[0].entries[0].kind, k_fatbin_kind_cubin);
  EXPECT_EQ(found[0].entries[0].arch, 80u);
}

TEST(EmbeddedFatbin, CandidatesThatDoNotValidateAreSkipped) {
  REAL_CONTAINER(real);
  const uint64_t body = real.bytes.size() - 16;
  std::vector<std::vector<std::byte>> bad;
  bad.push_back(fatbin_header(body, 2));      // version 2
  bad.push_back(fatbin_header(body, 1, 32));  // header size 32
  bad.push_back(fatbin_header(body, 1, 0));   // header size 0
  bad.push_back(fatbin_header(0));            // no entries
  bad.push_back(fatbin_header(1ull << 40));   // size past the section's end
  bad.push_back(fatbin_header(~0ull - 8));    // size that wraps around
  {
    auto broken = real.bytes;  // first entry's header size 0
    put<uint32_t>(broken, 16 + 4, 0);
    bad.push_back(broken);
  }
  {
    auto broken = real.bytes;  // first entry's payload past its container
    put<uint64_t>(broken, 16 + 8, 1ull << 32);
    bad.push_back(broken);
  }
  for (size_t i = 0; i < bad.size(); ++i) {
    SCOPED_TRACE(i);
    // Alone: nothing found, no error.
    EXPECT_TRUE(scan(bad[i], 0, 0).empty());
    // Before a real one: the real one is found.
    std::vector<std::byte> section = bad[i];
    append(section, filler(8 - section.size() % 8, 0));
    const uint64_t real_at = section.size();
    append(section, real.bytes);
    auto found = scan(section, 0, 0);
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found[0].offset, real_at);
  }
}

TEST(EmbeddedFatbin, EmptiedContainersAreSkippedAndTheScanGoesOn) {
  // `tailor slim` empties an embedded container with no code for the kept GPUs to its
  // header where it lies and zeros the rest: the scan skips it (it holds nothing), never an
  // error, and finds the real containers before and after it.
  REAL_CONTAINER(real);
  std::vector<std::byte> section;
  append(section, real.bytes);
  append(section, filler((8 - section.size() % 8) % 8, 0));
  const uint64_t emptied_at = section.size();
  append(section, fatbin_header(0));
  append(section, filler(real.bytes.size() - 16, 0));
  append(section, filler((8 - section.size() % 8) % 8, 0));
  const uint64_t second_at = section.size();
  append(section, real.bytes);
  auto found = scan(section, 0, 0);
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].offset, 0u);
  EXPECT_EQ(found[1].offset, second_at);
  EXPECT_LT(emptied_at, second_at);
  // Only emptied containers: nothing found.
  std::vector<std::byte> only = fatbin_header(0);
  append(only, fatbin_header(0));
  EXPECT_TRUE(scan(only, 0, 0).empty());
}

TEST(EmbeddedFatbin, TruncatedHeaderOrContainerAtTheSectionEnd) {
  REAL_CONTAINER(real);
  for (size_t cut : {size_t{4}, size_t{8}, size_t{15}, size_t{16}, size_t{17}, size_t{80},
                     real.bytes.size() - 1}) {
    SCOPED_TRACE(cut);
    std::vector<std::byte> section = filler(16);
    section.insert(section.end(), real.bytes.begin(),
                   real.bytes.begin() + static_cast<ptrdiff_t>(cut));
    EXPECT_TRUE(scan(section, 0, 0).empty());
  }
  // Every prefix of a section holding one container: found once it is whole, never an error.
  std::vector<std::byte> section = filler(8);
  append(section, real.bytes);
  for (size_t n = 0; n <= section.size(); n += 7) {
    auto found = scan(Bytes(section).first(n), 0, 0);
    EXPECT_EQ(found.size(), n >= 8 + real.bytes.size() ? 1u : 0u);
  }
}

TEST(EmbeddedFatbin, OverlappingCandidates) {
  REAL_CONTAINER(real);
  // A bogus candidate whose declared size spans a real container after it, with entries
  // that do not walk: skipped, and the real container inside its span is found.
  std::vector<std::byte> section = fatbin_header(8 + real.bytes.size() + 8);
  append(section, filler(8, 0xff));
  const uint64_t real_at = section.size();
  append(section, real.bytes);
  append(section, filler(8, 0));
  auto found = scan(section, 0, 0);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].offset, real_at);
  // Two real containers where the first one's declared size is grown to cover the second:
  // its walk reads the second one's header as an entry and fails, so only the second counts.
  std::vector<std::byte> two = real.bytes;
  append(two, filler((8 - two.size() % 8) % 8, 0));
  const uint64_t second_at = two.size();
  append(two, real.bytes);
  put<uint64_t>(two, 8, two.size() - 16);
  found = scan(two, 0, 0);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].offset, second_at);
}

TEST(EmbeddedFatbin, FailedCandidatesCannotMakeTheScanQuadratic) {
  // A run of empty 64-byte entries, each hosting a container header whose entries run to a
  // last bad one (test::candidate_chain): n^2/2 entry reads unless the scan bounds the work
  // that failed candidates cost.
  using test::candidate_chain;
  // A short chain costs little and is just skipped.
  EXPECT_TRUE(scan(candidate_chain(64), 0, 0).empty());
  // A long one is an error, quickly (unbounded, 20000 entries would be 2e8 entry reads).
  const auto start = std::chrono::steady_clock::now();
  auto r = find_embedded_fatbins(candidate_chain(20000), 0x1000, 0);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("fatbin container candidates in the section at 0x1000"),
            std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("damaged or hostile"), std::string::npos);
  EXPECT_LT(ms, 2000);
}

TEST(EmbeddedFatbin, ProgressLetsTheCallerHandPagesBack) {
  REAL_CONTAINER(real);
  std::vector<std::byte> section(10u << 20, std::byte{0});
  std::memcpy(section.data() + (6u << 20), real.bytes.data(), real.bytes.size());
  std::vector<uint64_t> marks;
  size_t visited = 0;
  auto r = for_each_embedded_fatbin(
      section, 0x10000, 0x10000,
      [&](FatbinContainer&&) -> Expected<void> {
        ++visited;
        return {};
      },
      [&](uint64_t at) { marks.push_back(at); });
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(visited, 1u);
  ASSERT_GE(marks.size(), 3u);
  for (size_t i = 1; i < marks.size(); ++i) EXPECT_LE(marks[i - 1], marks[i]);
  EXPECT_EQ(marks.back(), 0x10000u + section.size());
  // The same where the magic's last byte (0xBA) is everywhere but the magic nowhere, as in
  // code: every 4 MiB is reported all the same.
  std::vector<std::byte> code(10u << 20, std::byte{0xBA});
  marks.clear();
  r = for_each_embedded_fatbin(
      code, 0, 0, [](FatbinContainer&&) -> Expected<void> { return {}; },
      [&](uint64_t at) { marks.push_back(at); });
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(marks.size(), 3u);
  EXPECT_EQ(marks[0], 4u << 20);
  EXPECT_EQ(marks[1], 8u << 20);
  EXPECT_EQ(marks[2], code.size());
  // A visit error stops the scan and is returned.
  auto stopped = for_each_embedded_fatbin(
      section, 0, 0, [](FatbinContainer&&) -> Expected<void> { return make_error("stop"); });
  ASSERT_FALSE(stopped);
  EXPECT_EQ(stopped.error().message, "stop");
}

TEST(EmbeddedFatbin, FixtureKeepsNvccOutputInItsOwnSections) {
  const std::string lib = fixture("embedded_fatbin");
  const std::string fatbin =
      (std::filesystem::path(lib).parent_path() / "embedded.fatbin").string();
  if (!std::filesystem::exists(lib)) GTEST_SKIP() << lib << " not built (no nvcc?)";
  auto file = slurp(lib);
  const uint64_t container_size = std::filesystem::file_size(fatbin);
  auto elf = parse_elf(file);
  ASSERT_TRUE(elf) << elf.error().message;
  EXPECT_EQ(elf->find(".nv_fatbin"), nullptr);
  for (const char* name : {".rodata", ".data", ".cask_resource"}) {
    SCOPED_TRACE(name);
    const ElfSection* s = elf->find(name);
    ASSERT_NE(s, nullptr);
    auto found = scan(*section_bytes(file, *s), s->offset, s->addr);
    ASSERT_EQ(found.size(), 1u);
    EXPECT_EQ(found[0].size, container_size);
    // "head" (4 bytes) then padding to 8: the container follows at the next 8-aligned address.
    EXPECT_EQ(std::memcmp(file.data() + found[0].offset - 8, "head", 4), 0);
    std::vector<std::pair<uint16_t, uint32_t>> kinds;  // sm_80, compute_80
    for (const auto& e : found[0].entries) kinds.emplace_back(e.kind, e.arch);
    EXPECT_EQ(kinds, (std::vector<std::pair<uint16_t, uint32_t>>{{k_fatbin_kind_cubin, 80},
                                                                 {k_fatbin_kind_ptx, 80}}));
  }
}
