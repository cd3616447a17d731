#include "inspect/library_report.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>

#include "cuda/fatbin_code.h"
#include "formats/decompress.h"
#include "formats/device_sections.h"
#include "formats/fatbin.h"
#include "util/mapped_file.h"

namespace tailor::inspect {
namespace {

// Real libraries carry tens of targets (kind x arch x variant); entries that each name a
// new arch are hostile and would make the report as large as the file.
constexpr size_t k_max_targets = 1024;
// Sections searched for embedded containers (formats::embedded_scan_sections): real
// libraries keep them in one or two; each section that holds any gets a row of per-target
// stats, so their count is capped.
constexpr size_t k_max_embedded_sections = 256;
// Pages are handed back in batches: one madvise per container costs more than the walk.
constexpr uint64_t k_release_batch = 4u << 20;

// GNU_PROPERTY_X86_ISA_1_NEEDED bits: 1 baseline, 2 v2, 4 v3, 8 v4 (the highest wins).
std::optional<std::string> isa_level(std::optional<uint32_t> bits) {
  if (!bits) return std::nullopt;
  if (*bits & 8) return "x86-64-v4";
  if (*bits & 4) return "x86-64-v3";
  if (*bits & 2) return "x86-64-v2";
  if (*bits & 1) return "x86-64-baseline";
  return std::nullopt;
}

bool contains(std::string_view hay, std::string_view needle) {
  return !hay.empty() && ::memmem(hay.data(), hay.size(), needle.data(), needle.size()) != nullptr;
}

// The libstdc++ dual ABI shows in mangled names: the new std::string and std::list live in
// std::__cxx11 ("__cxx11" namespace, "B5cxx11" abi tags). Code built for the old ABI
// calls members of the old std::string, which libstdc++ exports as _ZNSs... / _ZNKSs...
// (a plain "Ss" search would also hit user identifiers). Only .dynstr is read (a few MB
// even for libtorch_cuda.so): one memmem for the common case, a per-name scan otherwise.
std::optional<bool> cxx11_abi(Bytes dynstr) {
  auto all = as_chars(dynstr);
  if (contains(all, "__cxx11") || contains(all, "B5cxx11")) return true;
  size_t pos = 0;
  while (pos < all.size()) {
    size_t end = all.find('\0', pos);
    if (end == std::string_view::npos) end = all.size();
    auto name = all.substr(pos, end - pos);
    if (name.starts_with("_ZNSs") || name.starts_with("_ZNKSs")) return false;
    pos = end + 1;
  }
  return std::nullopt;
}

std::string fmt_hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
  return buf;
}

// Called with a file range the analysis is done with; over a private read-only file
// mapping the pages can be dropped and would simply fault back in from the page cache.
using ReleasePages = std::function<void(uint64_t offset, uint64_t size)>;

// Per-target stats, grouped by what the entries hold and kept in its canonical order
// (cuda::FatbinCode's: CC, then variant, then SASS before PTX; LTO IR and codes that are no
// target after the targets).
using StatsByCode = std::map<cuda::FatbinCode, TargetStats>;

// Adds one entry to per-target stats; a new code beyond k_max_targets is an error.
Expected<void> count_entry(StatsByCode& by_target, const formats::FatbinEntry& e) {
  const cuda::FatbinCode code = cuda::fatbin_code(e);
  auto it = by_target.find(code);
  if (it == by_target.end()) {
    if (by_target.size() == k_max_targets)
      return make_error("fatbin entry at 0x" + fmt_hex(e.header_offset) + ": more than " +
                        std::to_string(k_max_targets) + " distinct targets in one library");
    it = by_target.emplace(code, TargetStats{}).first;
    it->second.code = code;
    it->second.name = code.name();
  }
  TargetStats& t = it->second;
  t.entries += 1;
  t.stored_bytes += e.stored_size;
  t.uncompressed_bytes += e.uncompressed_size;
  t.compression.insert(std::string(formats::compression_name(e.compression)));
  return {};
}

std::vector<TargetStats> sorted_targets(StatsByCode&& by_target) {
  std::vector<TargetStats> out;
  out.reserve(by_target.size());
  for (auto& [code, stats] : by_target) out.push_back(std::move(stats));
  return out;
}

Expected<LibraryReport> analyze(Bytes file, std::string path, const LibraryOptions& options,
                                const ReleasePages& release);

}  // namespace

uint64_t LibraryReport::embedded_containers() const {
  uint64_t n = 0;
  for (const EmbeddedFatbins& e : embedded) n += e.containers;
  return n;
}

uint64_t LibraryReport::embedded_bytes() const {
  uint64_t n = 0;
  for (const EmbeddedFatbins& e : embedded) n += e.bytes;
  return n;
}

std::vector<std::string> LibraryReport::target_names() const {
  std::vector<std::string> names;
  names.reserve(targets.size());
  for (const TargetStats& t : targets) names.push_back(t.name);
  return names;
}

Expected<LibraryReport> analyze_library(Bytes file, std::string path,
                                        const LibraryOptions& options) {
  return analyze(file, std::move(path), options, nullptr);
}

Expected<LibraryReport> analyze_library_file(const std::string& path,
                                             const LibraryOptions& options) {
  auto mapped = MappedFile::open(path);
  if (!mapped) return mapped.error();
  Bytes file = mapped->bytes();
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  auto release = [&](uint64_t offset, uint64_t size) {
    // Round outwards: dropping a page we still need only costs a refault.
    uint64_t begin = offset / page * page;
    uint64_t end = std::min<uint64_t>(file.size(), offset + size);
    if (end <= begin) return;
    auto* base = const_cast<std::byte*>(file.data());  // our own MAP_PRIVATE, PROT_READ map
    ::madvise(base + begin, end - begin, MADV_DONTNEED);
  };
  return analyze(file, path, options, release);
}

namespace {

Expected<LibraryReport> analyze(Bytes file, std::string path, const LibraryOptions& options,
                                const ReleasePages& release) {
  auto fail = [&](const Error& e) { return make_error(path + ": " + e.message); };
  auto elf = formats::parse_elf(file);
  if (!elf) return fail(elf.error());
  LibraryReport report;
  report.path = path;  // copied: `fail` above still names it
  report.machine = elf->machine;
  report.file_size = file.size();
  report.needed = elf->needed;
  report.runpath = elf->runpath;
  report.rpath = elf->rpath;
  report.soname = elf->soname;
  report.version_needs = elf->version_needs;
  report.x86_isa_level = isa_level(elf->x86_isa_needed);

  StatsByCode by_target;
  for (const formats::ElfSection& s : elf->sections) {
    if (!formats::is_device_section(s)) continue;
    auto bytes = formats::section_bytes(file, s);
    if (!bytes) return fail(bytes.error());
    report.device_code_bytes += s.size;
    // Many section headers may all point at one large range: walk no more than the file.
    if (report.device_code_bytes > file.size())
      return fail(make_error("section " + s.name + " at 0x" + fmt_hex(s.offset) +
                             ": device code sections overlap (together larger than the file)"));
    uint64_t released_to = s.offset;
    auto walked = formats::for_each_fatbin_container(
        *bytes, s.offset, [&](formats::FatbinContainer&& c) -> Expected<void> {
          for (const formats::FatbinEntry& e : c.entries) {
            if (options.verify_payloads) {
              // Streamed in bounded memory: a declared 1 GiB is never allocated.
              if (auto ok = formats::verify_entry(file, e, options.max_entry_bytes); !ok)
                return ok.error();
            }
            if (auto ok = count_entry(by_target, e); !ok) return ok.error();
          }
          if (release && c.offset + c.size - released_to >= k_release_batch) {
            release(released_to, c.offset + c.size - released_to);
            released_to = c.offset + c.size;
          }
          return {};
        });
    if (!walked) return fail(walked.error());
    if (release) release(released_to, s.offset + s.size - released_to);
  }

  // Containers the library keeps in its own sections. The search reads every allocated
  // byte once (memchr, GB/s once the pages are in memory) and hands pages back behind it.
  for (size_t index : formats::embedded_scan_sections(*elf, file.size())) {
    const formats::ElfSection* s = &elf->sections[index];
    Bytes bytes = file.subspan(s->offset, s->size);
    StatsByCode in_section;
    EmbeddedFatbins found;
    uint64_t released_to = s->offset;
    auto scanned = formats::for_each_embedded_fatbin(
        bytes, s->offset, s->addr,
        [&](formats::FatbinContainer&& c) -> Expected<void> {
          for (const formats::FatbinEntry& e : c.entries) {
            if (options.verify_payloads) {
              if (auto ok = formats::verify_entry(file, e, options.max_entry_bytes); !ok)
                return ok.error();
            }
            if (auto ok = count_entry(by_target, e); !ok) return ok.error();
            if (auto ok = count_entry(in_section, e); !ok) return ok.error();
          }
          found.containers += 1;
          found.bytes += c.size;
          return {};
        },
        [&](uint64_t scanned_to) {
          if (release && scanned_to - released_to >= k_release_batch) {
            release(released_to, scanned_to - released_to);
            released_to = scanned_to;
          }
        });
    if (!scanned) return fail(scanned.error());
    if (release) release(released_to, s->offset + s->size - released_to);
    if (found.containers == 0) continue;
    if (report.embedded.size() == k_max_embedded_sections)
      return fail(make_error("section " + s->name + " at 0x" + fmt_hex(s->offset) + ": more than " +
                             std::to_string(k_max_embedded_sections) +
                             " sections hold fatbin containers"));
    found.section = s->name;
    found.targets = sorted_targets(std::move(in_section));
    report.device_code_bytes += found.bytes;
    report.embedded.push_back(std::move(found));
  }
  report.payloads_verified = options.verify_payloads;
  report.targets = sorted_targets(std::move(by_target));
  report.has_device_code = !report.targets.empty();

  if (const formats::ElfSection* dynstr = elf->find(".dynstr")) {
    auto bytes = formats::section_bytes(file, *dynstr);
    if (!bytes) return fail(bytes.error());
    report.cxx11_abi = cxx11_abi(*bytes);
    if (release) release(dynstr->offset, dynstr->size);
  }
  return report;
}

}  // namespace

}  // namespace tailor::inspect
