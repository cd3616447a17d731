// slim_elf on fatbin containers that a library keeps in its own sections (cuFFT's .data,
// cuBLASLt's .cask_resource, cuSPARSE's .rodata): each is compacted where it is, keeps its
// address and the file its size, the freed bytes are zeros, a re-read finds every
// container with only the kept entries, and the summary accounts for every target left.
// Over synthetic ELFs (tests/formats/synthetic_elf.h) and the nvcc-built fixture
// embedded_fatbin.so (one container in .rodata, .data and .cask_resource); hole punching on
// a real file in a scratch folder.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>

#include "cuda/fatbin_code.h"
#include "formats/elf.h"
#include "formats/fatbin.h"
#include "formats/synthetic_elf.h"
#include "slim/elf_slim.h"
#include "slim/slim_paths.h"
#include "support/fatbin_writer.h"
#include "support/fixtures.h"

namespace tailor::slim {
namespace embedded_slim_test {

using testing_elf::Builder;

using test::concat;
using test::fatbin_container;
using test::text_bytes;

KeepPolicy keep(cuda::ComputeCapability cc, LtoPolicy lto = LtoPolicy::keep) {
  KeepPolicy p;
  p.devices = {cc};
  p.lto = lto;
  return p;
}

std::vector<std::byte> slim_to_memory(const std::vector<std::byte>& in, const KeepPolicy& p,
                                      LibrarySlim& out) {
  int fd = ::memfd_create("slim", 0);
  EXPECT_GE(fd, 0);
  auto r = slim_elf(Bytes(in.data(), in.size()), p, fd);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message);
  if (!r) {
    ::close(fd);
    return {};
  }
  out = *r;
  std::vector<std::byte> bytes(static_cast<size_t>(::lseek(fd, 0, SEEK_END)));
  EXPECT_EQ(::pread(fd, bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
  ::close(fd);
  return bytes;
}

// Per section: the containers found (offset, target names of their entries).
std::map<std::string, std::vector<std::pair<uint64_t, std::vector<std::string>>>> embedded_in(
    const std::vector<std::byte>& file) {
  Bytes b(file.data(), file.size());
  std::map<std::string, std::vector<std::pair<uint64_t, std::vector<std::string>>>> out;
  auto elf = formats::parse_elf(b);
  EXPECT_TRUE(elf.has_value());
  if (!elf) return out;
  for (const auto& s : elf->sections) {
    if (!(s.flags & testing_elf::k_shf_alloc) || s.name == ".nv_fatbin") continue;
    auto found = formats::find_embedded_fatbins(b.subspan(s.offset, s.size), s.offset, s.addr);
    EXPECT_TRUE(found.has_value()) << s.name;
    if (!found) continue;
    for (const auto& c : *found) {
      std::vector<std::string> names;
      for (const auto& e : c.entries) names.push_back(cuda::fatbin_code(e).name());
      out[s.name].push_back({c.offset, names});
    }
  }
  return out;
}

bool all_zero(const std::vector<std::byte>& b, uint64_t from, uint64_t to) {
  return std::all_of(b.begin() + static_cast<ptrdiff_t>(from),
                     b.begin() + static_cast<ptrdiff_t>(to),
                     [](std::byte x) { return x == std::byte{0}; });
}

const TargetLeft* find_left(const LibrarySlim& r, const std::string& target, LeftReason reason) {
  for (const auto& t : r.left)
    if (t.target == target && t.reason == reason) return &t;
  return nullptr;
}

// .data: 8 bytes, then a container with sm_80, sm_90, compute_90 and lto_50 (the address
// skew makes every container 8-aligned in the address space, as in real libraries);
// .cask_resource: a container with only sm_75 (no code for 9.0: emptied to its header).
struct TwoSections {
  std::vector<std::byte> data_c =
      fatbin_container({{2, 80, 4096}, {2, 90, 512}, {1, 90, 128}, {8, 50, 256}});
  std::vector<std::byte> cask_c = fatbin_container({{2, 75, 64}});
  std::vector<std::byte> file = testing_elf::with_sections(
      {".data", ".cask_resource"},
      {concat({text_bytes("headhead"), data_c, text_bytes("tailtail")}), cask_c}, 0x10000);
};

TEST(EmbeddedSlim, ContainerIsCompactedWhereItIsAndTheFileKeepsItsSize) {
  TwoSections in;
  LibrarySlim r;
  auto out = slim_to_memory(in.file, keep({9, 0}), r);
  ASSERT_EQ(r.outcome, SlimOutcome::slimmed) << r.note;
  ASSERT_EQ(out.size(), in.file.size());
  EXPECT_EQ(r.size_after, r.size_before);

  auto before = embedded_in(in.file), after = embedded_in(out);
  ASSERT_EQ(before[".data"].size(), 1u);
  ASSERT_EQ(after[".data"].size(), 1u);
  // Same place; sm_80 gone; sm_90 runs, compute_90 is not needed (SASS runs), LTO IR kept.
  const uint64_t at = before[".data"][0].first;
  EXPECT_EQ(after[".data"][0].first, at);
  EXPECT_EQ(after[".data"][0].second, (std::vector<std::string>{"sm_90", "lto_50"}));
  // .cask_resource's sm_75-only container is its header alone now, at its place, the rest
  // zeros: the scan does not report it (it holds nothing).
  ASSERT_EQ(before[".cask_resource"].size(), 1u);
  EXPECT_TRUE(after[".cask_resource"].empty());
  const uint64_t cask_at = before[".cask_resource"][0].first;
  EXPECT_TRUE(std::equal(out.begin() + static_cast<ptrdiff_t>(cask_at),
                         out.begin() + static_cast<ptrdiff_t>(cask_at + 8),
                         in.file.begin() + static_cast<ptrdiff_t>(cask_at)));
  uint64_t cask_size = 1;
  std::memcpy(&cask_size, out.data() + cask_at + 8, 8);
  EXPECT_EQ(cask_size, 0u);
  EXPECT_TRUE(all_zero(out, cask_at + 16, cask_at + in.cask_c.size()));

  // Header: the new size; the kept entries follow it byte for byte; the rest are zeros up
  // to the old end; everything outside the container is as it was.
  const uint64_t kept = (64 + 512) + (64 + 256);
  uint64_t fat_size = 0;
  std::memcpy(&fat_size, out.data() + at + 8, 8);
  EXPECT_EQ(fat_size, kept);
  const uint64_t sm90_in = at + 16 + 64 + 4096, lto_in = sm90_in + (64 + 512) + (64 + 128);
  EXPECT_TRUE(std::equal(out.begin() + static_cast<ptrdiff_t>(at + 16),
                         out.begin() + static_cast<ptrdiff_t>(at + 16 + 576),
                         in.file.begin() + static_cast<ptrdiff_t>(sm90_in)));
  EXPECT_TRUE(std::equal(out.begin() + static_cast<ptrdiff_t>(at + 16 + 576),
                         out.begin() + static_cast<ptrdiff_t>(at + 16 + kept),
                         in.file.begin() + static_cast<ptrdiff_t>(lto_in)));
  const uint64_t end = at + in.data_c.size();
  EXPECT_TRUE(all_zero(out, at + 16 + kept, end));
  EXPECT_TRUE(
      std::equal(out.begin(), out.begin() + static_cast<ptrdiff_t>(at + 8), in.file.begin()));
  EXPECT_TRUE(std::equal(out.begin() + static_cast<ptrdiff_t>(end),
                         out.begin() + static_cast<ptrdiff_t>(cask_at),
                         in.file.begin() + static_cast<ptrdiff_t>(end)));
  EXPECT_TRUE(std::equal(out.begin() + static_cast<ptrdiff_t>(cask_at + in.cask_c.size()),
                         out.end(),
                         in.file.begin() + static_cast<ptrdiff_t>(cask_at + in.cask_c.size())));

  // The freed run is reported (for punching; the .cask_resource one is below a page) and
  // the zeroed count is exact.
  EXPECT_EQ(r.zeroed_bytes, in.data_c.size() - 16 - kept + (in.cask_c.size() - 16));
  ASSERT_EQ(r.zeroed.size(), 1u);
  EXPECT_EQ(r.zeroed[0].offset, at + 16 + kept);
  EXPECT_EQ(r.zeroed[0].size, end - (at + 16 + kept));

  // Per section, and in the totals.
  ASSERT_EQ(r.embedded.size(), 2u);
  EXPECT_EQ(r.embedded[0].section, ".data");
  EXPECT_EQ(r.embedded[0].containers_changed, 1u);
  EXPECT_EQ(r.embedded[0].containers_emptied, 0u);
  EXPECT_EQ(r.embedded[1].section, ".cask_resource");
  EXPECT_EQ(r.embedded[1].containers_changed, 1u);
  EXPECT_EQ(r.embedded[1].containers_emptied, 1u);
  EXPECT_EQ(r.embedded[1].device_after, 0u);
  EXPECT_EQ(r.embedded_containers(), 2u);
  EXPECT_EQ(r.embedded_emptied(), 1u);
  EXPECT_EQ(r.containers, 0u);  // no .nv_fatbin
  EXPECT_EQ(r.removed_bytes(), (64 + 4096) + (64 + 128) + (64 + 64));

  // A re-read agrees with the plan (what slim_paths checks before renaming): the emptied
  // container is not found.
  auto n = count_device_code(Bytes(out.data(), out.size()));
  ASSERT_TRUE(n.has_value()) << n.error().message;
  EXPECT_EQ(n->embedded_containers, r.embedded_containers() - r.embedded_emptied());
  EXPECT_EQ(n->fatbin_containers, 0u);
  EXPECT_EQ(n->entries, 2u);
  EXPECT_EQ(n->bytes, r.device_after);
}

TEST(EmbeddedSlim, EveryTargetLeftIsNamedLtoIncludedAndEmptiedContainersCounted) {
  TwoSections in;
  LibrarySlim r;
  slim_to_memory(in.file, keep({9, 0}), r);
  ASSERT_EQ(r.outcome, SlimOutcome::slimmed);
  ASSERT_NE(find_left(r, "sm_90", LeftReason::runs), nullptr);
  EXPECT_EQ(find_left(r, "sm_90", LeftReason::runs)->detail, "runs on 9.0");
  ASSERT_NE(find_left(r, "lto_50", LeftReason::link_time_ir), nullptr);
  EXPECT_EQ(find_left(r, "lto_50", LeftReason::link_time_ir)->bytes, 64u + 256);
  std::vector<std::string> left;
  for (const auto& t : r.left) left.push_back(t.target);
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"lto_50", "sm_90"}));
  // sm_75 is gone with its container's only entry; the container is counted as emptied.
  EXPECT_EQ(r.containers_emptied, 1u);
  ASSERT_FALSE(r.warnings.empty());
  EXPECT_NE(r.warnings.back().find(".cask_resource container at"), std::string::npos)
      << r.warnings.back();
  EXPECT_NE(
      r.warnings.back().find("no code for 9.0 before either (it had sm_75): emptied to its header"),
      std::string::npos)
      << r.warnings.back();
  EXPECT_EQ(left_reason_key(LeftReason::link_time_ir), "link_time_ir");
}

TEST(EmbeddedSlim, LtoIrIsKeptUnlessDropped) {
  TwoSections in;
  LibrarySlim r;
  auto out = slim_to_memory(in.file, keep({9, 0}, LtoPolicy::drop), r);
  ASSERT_EQ(r.outcome, SlimOutcome::slimmed);
  auto after = embedded_in(out);
  ASSERT_EQ(after[".data"].size(), 1u);
  EXPECT_EQ(after[".data"][0].second, (std::vector<std::string>{"sm_90"}));
  EXPECT_EQ(find_left(r, "lto_50", LeftReason::link_time_ir), nullptr);

  // A container of LTO IR alone stays as it is by default; dropped, it is emptied to its
  // header, like any container with nothing for the kept GPUs.
  auto lto_only = testing_elf::with_sections(
      {".data"}, {fatbin_container({{8, 50, 128}, {8, 75, 64}})}, 0x10000);
  LibrarySlim kept;
  slim_to_memory(lto_only, keep({9, 0}), kept);
  EXPECT_EQ(kept.outcome, SlimOutcome::unchanged);
  LibrarySlim dropped;
  auto dropped_out = slim_to_memory(lto_only, keep({9, 0}, LtoPolicy::drop), dropped);
  ASSERT_EQ(dropped.outcome, SlimOutcome::slimmed);
  EXPECT_TRUE(embedded_in(dropped_out)[".data"].empty());
  EXPECT_TRUE(dropped.left.empty());
  EXPECT_EQ(dropped.containers_emptied, 1u);
  EXPECT_EQ(dropped.removed_bytes(), (64u + 128) + (64 + 64));
}

TEST(EmbeddedSlim, NothingToRemoveIsUnchanged) {
  TwoSections in;
  LibrarySlim r;
  auto p = keep({8, 0});
  p.devices.push_back({9, 0});
  p.devices.push_back({7, 5});
  p.ptx = PtxPolicy::keep;
  slim_to_memory(in.file, p, r);
  EXPECT_EQ(r.outcome, SlimOutcome::unchanged);
  EXPECT_EQ(r.removed_bytes(), 0u);
  EXPECT_TRUE(r.zeroed.empty());
}

TEST(EmbeddedSlim, DryRunReportsTheSameFreedRanges) {
  TwoSections in;
  LibrarySlim written;
  slim_to_memory(in.file, keep({9, 0}), written);
  auto dry = slim_elf(Bytes(in.file.data(), in.file.size()), keep({9, 0}), -1);
  ASSERT_TRUE(dry.has_value());
  EXPECT_EQ(dry->zeroed_bytes, written.zeroed_bytes);
  EXPECT_EQ(dry->punchable_bytes, written.punchable_bytes);
  ASSERT_EQ(dry->zeroed.size(), written.zeroed.size());
  EXPECT_EQ(dry->zeroed[0].offset, written.zeroed[0].offset);
}

TEST(EmbeddedSlim, RelocationInsideAContainerKeepsItWhole) {
  // A RELATIVE relocation whose addend points 16 bytes into the .data container: something
  // addresses its entries, which must not move. One at a container's start is fine.
  TwoSections in;
  Builder b;
  std::vector<uint32_t> idx;
  const std::string names = testing_elf::string_table({".shstrtab", ".data", ".rela.dyn"}, idx);
  const uint64_t sh_at = b.add(names);
  const auto data = concat({text_bytes("headhead"), in.data_c});
  const uint64_t data_at = b.add(data);
  const uint64_t skew = 0x10000;
  std::vector<std::byte> rela(48);
  Builder::put<uint64_t>(rela, 0, 0x5000);
  Builder::put<uint64_t>(rela, 8, 8);                         // R_X86_64_RELATIVE
  Builder::put<uint64_t>(rela, 16, data_at + skew + 8 + 16);  // inside the container
  Builder::put<uint64_t>(rela, 24, 0x5008);
  Builder::put<uint64_t>(rela, 32, 8);
  Builder::put<uint64_t>(rela, 40, data_at + skew + 8);  // its start
  const uint64_t rela_at = b.add(rela);
  uint32_t shstr = b.section({idx[0], testing_elf::k_strtab, sh_at, names.size()});
  b.section({idx[1], testing_elf::k_progbits, data_at, data.size(), 0, 0, testing_elf::k_shf_alloc,
             data_at + skew});
  b.section({idx[2], 4 /* SHT_RELA */, rela_at, rela.size(), 0, 0, testing_elf::k_shf_alloc,
             rela_at + skew});
  auto file = b.build(shstr);
  LibrarySlim r;
  slim_to_memory(file, keep({9, 0}), r);
  EXPECT_EQ(r.outcome, SlimOutcome::unchanged);
  EXPECT_EQ(r.containers_whole, 1u);
  ASSERT_FALSE(r.warnings.empty());
  EXPECT_NE(r.warnings[0].find("a relocation points inside it"), std::string::npos)
      << r.warnings[0];
  EXPECT_NE(find_left(r, "sm_80", LeftReason::whole), nullptr);

  // Only the start named: compacted.
  Builder::put<uint64_t>(file, rela_at + 16, data_at + skew + 8);
  LibrarySlim moved;
  slim_to_memory(file, keep({9, 0}), moved);
  EXPECT_EQ(moved.outcome, SlimOutcome::slimmed);
}

// The nvcc-built fixture: kernels.cu's fatbin (sm_80 + compute_80) in .rodata, .data and
// .cask_resource.
class EmbeddedFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(test::fixture("embedded_fatbin")))
      GTEST_SKIP() << test::fixture("embedded_fatbin") << " not built (no nvcc)";
    input = test::slurp(test::fixture("embedded_fatbin"));
  }
  std::vector<std::byte> input;
};

TEST_F(EmbeddedFixture, EachSectionKeepsOnlyTheKeptTargets) {
  for (auto [cc, want] : {std::pair{cuda::ComputeCapability{9, 0}, "compute_80"},
                          std::pair{cuda::ComputeCapability{8, 0}, "sm_80"}}) {
    LibrarySlim r;
    auto out = slim_to_memory(input, keep(cc), r);
    ASSERT_EQ(r.outcome, SlimOutcome::slimmed) << r.note;
    EXPECT_EQ(out.size(), input.size());
    auto before = embedded_in(input), after = embedded_in(out);
    ASSERT_EQ(after.size(), 3u);
    for (const char* section : {".rodata", ".data", ".cask_resource"}) {
      ASSERT_EQ(after[section].size(), 1u) << section;
      EXPECT_EQ(after[section][0].first, before[section][0].first) << section;
      EXPECT_EQ(after[section][0].second, (std::vector<std::string>{want})) << section;
    }
    // Freed bytes are zeros; nothing else changed.
    uint64_t zero = 0;
    for (const auto& z : r.zeroed) {
      EXPECT_TRUE(all_zero(out, z.offset, z.offset + z.size));
      zero += z.size;
    }
    size_t differ = 0;
    for (size_t i = 0; i < out.size(); ++i) differ += out[i] != input[i];
    EXPECT_LE(differ, r.zeroed_bytes + 3 * 8)
        << "bytes changed beyond the freed ranges and the three headers' sizes";
    auto n = count_device_code(Bytes(out.data(), out.size()));
    ASSERT_TRUE(n.has_value());
    EXPECT_EQ(n->embedded_containers, 3u);
    EXPECT_EQ(n->entries, 3u);
    EXPECT_EQ(n->bytes, r.device_after);
    ASSERT_EQ(r.left.size(), 1u);
    EXPECT_EQ(r.left[0].target, want);
    EXPECT_EQ(r.left[0].entries, 3u);
  }
}

TEST_F(EmbeddedFixture, NoCodeForTheGpuEmptiesEachContainerWhereItIs) {
  // sm_80 and compute_80 run nowhere on 7.5: each of the three containers becomes its
  // 16-byte header at its address, the rest of it zeros; the file keeps its size.
  LibrarySlim r;
  auto out = slim_to_memory(input, keep({7, 5}), r);
  ASSERT_EQ(r.outcome, SlimOutcome::slimmed) << r.note;
  ASSERT_EQ(out.size(), input.size());
  EXPECT_EQ(r.containers_emptied, 3u);
  EXPECT_EQ(r.embedded_emptied(), 3u);
  EXPECT_EQ(r.device_after, 0u);
  EXPECT_EQ(r.removed_bytes(), r.device_before);
  EXPECT_TRUE(r.left.empty());
  auto before = embedded_in(input);
  ASSERT_EQ(before.size(), 3u);
  EXPECT_TRUE(embedded_in(out).empty());
  for (const auto& [section, found] : before) {
    ASSERT_EQ(found.size(), 1u) << section;
    const uint64_t at = found[0].first;
    uint32_t magic = 0;
    uint16_t version = 0, header = 0;
    uint64_t size = 1, old_size = 0;
    std::memcpy(&magic, out.data() + at, 4);
    std::memcpy(&version, out.data() + at + 4, 2);
    std::memcpy(&header, out.data() + at + 6, 2);
    std::memcpy(&size, out.data() + at + 8, 8);
    std::memcpy(&old_size, input.data() + at + 8, 8);
    EXPECT_EQ(magic, 0xBA55ED50u) << section;
    EXPECT_EQ(version, 1u) << section;
    EXPECT_EQ(header, 16u) << section;
    EXPECT_EQ(size, 0u) << section;
    EXPECT_TRUE(all_zero(out, at + 16, at + 16 + old_size)) << section;
  }
  auto n = count_device_code(Bytes(out.data(), out.size()));
  ASSERT_TRUE(n.has_value()) << n.error().message;
  EXPECT_EQ(n->embedded_containers, 0u);
  EXPECT_EQ(n->entries, 0u);
  // Through slim_paths, whose re-read checks the written file against the plan.
  const auto dir = test::scratch_dir("embedded_emptied");
  const auto path = dir / "libembedded.so";
  std::filesystem::copy_file(test::fixture("embedded_fatbin"), path,
                             std::filesystem::copy_options::overwrite_existing);
  SlimOptions o;
  o.policy = keep({7, 5});
  o.in_place = true;
  o.jobs = 1;
  auto report = slim_paths({path.string()}, o);
  ASSERT_TRUE(report.has_value()) << report.error().message;
  EXPECT_EQ(test::slurp(path.string()), out);
}

// Hole punching on a real file in a scratch folder of this filesystem.
TEST(EmbeddedPunch, ZeroedRangesArePunchedOutOfTheFile) {
  const auto dir = test::scratch_dir("embedded_punch");
  const std::string path = (dir / "holes.bin").string();
  constexpr uint64_t k_size = 4 << 20, k_lo = 1 << 20, k_len = 2 << 20;
  {
    std::vector<std::byte> data(k_size, std::byte{0x5A});
    std::fill(data.begin() + k_lo - 100, data.begin() + k_lo + k_len, std::byte{0});
    int fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, data.data(), data.size()), static_cast<ssize_t>(data.size()));
    ASSERT_EQ(::fsync(fd), 0);
    ::close(fd);
  }
  struct stat before {};
  ASSERT_EQ(::stat(path.c_str(), &before), 0);
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  // Unaligned ends: only the whole blocks inside are punched.
  const std::string note = punch_zeroed_ranges(fd, {{k_lo - 100, k_len + 100}});
  ::fsync(fd);
  ::close(fd);
  if (!note.empty()) GTEST_SKIP() << "this filesystem does not punch holes: " << note;
  struct stat after {};
  ASSERT_EQ(::stat(path.c_str(), &after), 0);
  EXPECT_EQ(after.st_size, before.st_size);
  EXPECT_LE(static_cast<uint64_t>(after.st_blocks) * 512 + k_len - 64 * 1024,
            static_cast<uint64_t>(before.st_blocks) * 512)
      << "st_blocks " << before.st_blocks << " -> " << after.st_blocks;
  auto back = test::slurp(path);
  ASSERT_EQ(back.size(), k_size);
  EXPECT_EQ(back[k_lo - 101], std::byte{0x5A});
  EXPECT_TRUE(all_zero(back, k_lo - 100, k_lo + k_len));
  EXPECT_EQ(back[k_lo + k_len], std::byte{0x5A});
}

TEST(EmbeddedPunch, SlimInPlaceShrinksTheDiskUsageNotTheSize) {
  // A library whose .data container holds 1 MiB of sm_80 and 64 KiB of sm_90: kept for 9.0,
  // 1 MiB is zeroed and punched out.
  const auto dir = test::scratch_dir("embedded_punch_slim");
  const std::string path = (dir / "libbig.so").string();
  auto file = testing_elf::with_sections(
      {".data"}, {fatbin_container({{2, 80, 1 << 20}, {2, 90, 64 << 10}})}, 0x10000);
  {
    int fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0755);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, file.data(), file.size()), static_cast<ssize_t>(file.size()));
    ::close(fd);
  }
  SlimOptions o;
  o.policy = keep({9, 0});
  o.in_place = true;
  o.jobs = 1;
  auto report = slim_paths({path}, o);
  ASSERT_TRUE(report.has_value()) << report.error().message;
  ASSERT_EQ(report->inputs.size(), 1u);
  const auto& in = report->inputs[0];
  ASSERT_EQ(in.files.size(), 1u);
  const auto& lib = in.files[0].lib;
  EXPECT_EQ(lib.outcome, SlimOutcome::slimmed);
  EXPECT_EQ(lib.size_after, file.size());
  EXPECT_EQ(std::filesystem::file_size(path), file.size());
  EXPECT_GE(lib.punchable_bytes, (1u << 20) - 8192);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(lib.disk_after, static_cast<uint64_t>(st.st_blocks) * 512);
  EXPECT_GT(lib.disk_before, 0u);
  if (!lib.punch_note.empty())
    GTEST_SKIP() << "this filesystem does not punch holes: " << lib.punch_note;
  EXPECT_GE(lib.punched_bytes, (1u << 20) - 8192);
  EXPECT_LE(lib.disk_after + (1u << 20) - 64 * 1024, lib.disk_before)
      << lib.disk_before << " -> " << lib.disk_after;
  EXPECT_EQ(in.disk_after, lib.disk_after);
  // The file reads back as planned: only sm_90 in its container, at the same place.
  auto out = test::slurp(path);
  auto after = embedded_in(out);
  ASSERT_EQ(after[".data"].size(), 1u);
  EXPECT_EQ(after[".data"][0].second, (std::vector<std::string>{"sm_90"}));
}

}  // namespace embedded_slim_test
}  // namespace tailor::slim
