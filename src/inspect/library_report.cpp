#include "inspect/library_report.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>

#include "cuda/cuda_target.h"
#include "formats/decompress.h"
#include "formats/fatbin.h"
#include "util/mapped_file.h"

namespace tailor::inspect {
namespace {

// Sections that hold fatbin containers: whole-program device code and the relocatable
// device code that -rdc builds keep for the device linker.
constexpr std::string_view k_device_sections[] = {".nv_fatbin", "__nv_relfatbin"};
// Real libraries carry tens of targets (kind x arch x variant); entries that each name a
// new arch are hostile and would make the report as large as the file.
constexpr size_t k_max_targets = 1024;

// Canonical order is tailor::cuda::CudaTarget's (CC, then variant, then SASS before PTX);
// names the CUDA model cannot parse (an unknown entry kind) go last, by name.
bool canonical_less(const TargetStats& a, const TargetStats& b) {
  auto ta = cuda::parse_target_name(a.name);
  auto tb = cuda::parse_target_name(b.name);
  if (ta && tb) return *ta < *tb;
  if (ta || tb) return static_cast<bool>(ta);
  return a.name < b.name;
}

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

Expected<LibraryReport> analyze(Bytes file, std::string path, const LibraryOptions& options,
                                const ReleasePages& release);

}  // namespace

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

  std::map<std::string, TargetStats> by_target;
  for (const formats::ElfSection& s : elf->sections) {
    if (std::find(std::begin(k_device_sections), std::end(k_device_sections), s.name) ==
        std::end(k_device_sections))
      continue;
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
              if (auto ok = formats::verify_entry(file, e, options.max_entry_bytes); !ok) return ok.error();
            }
            std::string name = e.target_name();
            if (by_target.size() == k_max_targets && !by_target.count(name))
              return make_error("fatbin entry at 0x" + fmt_hex(e.header_offset) + ": more than " +
                                std::to_string(k_max_targets) + " distinct targets in one library");
            TargetStats& t = by_target[name];
            if (t.name.empty()) t.name = std::move(name);
            t.entries += 1;
            t.stored_bytes += e.stored_size;
            t.uncompressed_bytes += e.uncompressed_size;
            t.compression.insert(std::string(formats::compression_name(e.compression)));
          }
          // Released in 4 MiB batches: one madvise per container costs more than the walk.
          if (release && c.offset + c.size - released_to >= (4u << 20)) {
            release(released_to, c.offset + c.size - released_to);
            released_to = c.offset + c.size;
          }
          return {};
        });
    if (!walked) return fail(walked.error());
    if (release) release(released_to, s.offset + s.size - released_to);
  }
  report.payloads_verified = options.verify_payloads;
  for (auto& [key, stats] : by_target) report.targets.push_back(std::move(stats));
  std::sort(report.targets.begin(), report.targets.end(), canonical_less);
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
