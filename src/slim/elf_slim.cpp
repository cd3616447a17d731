#include "slim/elf_slim.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "cuda/cuda_target.h"
#include "cuda/fatbin_code.h"
#include "formats/device_sections.h"
#include "formats/elf.h"
#include "formats/fatbin.h"
#include "util/interrupt.h"
#include "util/strings.h"

namespace tailor::slim {
namespace {

// The ELF reading (constants, program headers, relocation and symbol tables) is
// formats/elf.h's; what follows is the surgery.
using formats::ElfSegment;

// The CUDA runtime's registration wrapper (__fatBinC_Wrapper_t): magic, version, then the
// container's address at +8 and a second pointer at +16.
constexpr uint32_t k_wrapper_magic = 0x466243B1;
constexpr uint64_t k_wrapper_size = 24;
constexpr size_t k_max_warnings = 20;

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }
uint64_t align_down(uint64_t v, uint64_t a) { return v / a * a; }

// One change to the output, at an output offset.
struct Patch {
  uint64_t offset = 0;
  std::vector<std::byte> bytes;
};

template <typename T>
Patch patch_of(uint64_t offset, T value) {
  Patch p{offset, std::vector<std::byte>(sizeof(T))};
  std::memcpy(p.bytes.data(), &value, sizeof(T));
  return p;
}

// Sequential writes through a 1 MiB buffer. With fd -1 nothing is written, only counted
// (a dry run learns the same zero runs as a real one).
class Writer {
public:
  Writer(int fd, bool release_pages) : m_fd(fd), m_release(release_pages) {
    if (m_fd >= 0) m_buf.reserve(1 << 20);
  }
  Expected<void> bytes(Bytes b) {
    if (m_fd < 0) {
      m_written += b.size();
      return {};
    }
    if (m_buf.size() + b.size() > m_buf.capacity()) TAILOR_TRY_VOID(flush());
    if (b.size() >= m_buf.capacity()) return raw(b);
    m_buf.insert(m_buf.end(), b.begin(), b.end());
    return {};
  }
  // A large span of the input map: written in 16 MiB steps, each step's pages handed back
  // to the kernel afterwards, so a 1 GB library does not stay resident.
  Expected<void> copy_from_map(Bytes b) {
    if (m_fd < 0) return bytes(b);
    constexpr size_t k_step = size_t{16} << 20;
    const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    for (size_t at = 0; at < b.size(); at += k_step) {
      if (int sig = interrupt_signal()) return make_error("interrupted by signal " + std::to_string(sig));
      Bytes part = b.subspan(at, std::min(k_step, b.size() - at));
      TAILOR_TRY_VOID(bytes(part));
      uintptr_t lo = (reinterpret_cast<uintptr_t>(part.data()) + page - 1) / page * page;
      uintptr_t hi = (reinterpret_cast<uintptr_t>(part.data()) + part.size()) / page * page;
      if (m_release && hi > lo) ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
    }
    return {};
  }
  // Freed bytes: zeros, and the run remembered (ByteRange) when it is at least a page.
  Expected<void> zeros(uint64_t n) {
    if (n == 0) return {};
    m_zero_bytes += n;
    if (n >= k_min_zero_run) {
      if (!m_zero_runs.empty() && m_zero_runs.back().offset + m_zero_runs.back().size == written())
        m_zero_runs.back().size += n;
      else
        m_zero_runs.push_back({written(), n});
    }
    static const std::vector<std::byte> k_zero(1 << 16);
    while (n) {
      uint64_t k = std::min<uint64_t>(n, k_zero.size());
      TAILOR_TRY_VOID(bytes(Bytes(k_zero.data(), k)));
      n -= k;
    }
    return {};
  }
  Expected<void> flush() {
    if (int sig = interrupt_signal()) return make_error("interrupted by signal " + std::to_string(sig));
    if (m_fd < 0) return {};
    auto r = raw(Bytes(m_buf.data(), m_buf.size()));
    m_buf.clear();
    return r;
  }
  uint64_t written() const { return m_written + m_buf.size(); }
  std::vector<ByteRange>& zero_runs() { return m_zero_runs; }
  uint64_t zero_bytes() const { return m_zero_bytes; }
  static constexpr uint64_t k_min_zero_run = 4096;

private:
  Expected<void> raw(Bytes b) {
    const std::byte* p = b.data();
    size_t left = b.size();
    while (left) {
      ssize_t n = ::write(m_fd, p, std::min<size_t>(left, size_t{1} << 30));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return make_error(std::string("writing the slimmed file: ") + std::strerror(errno));
      p += n;
      left -= static_cast<size_t>(n);
      m_written += static_cast<uint64_t>(n);
    }
    return {};
  }
  int m_fd;
  bool m_release;
  std::vector<std::byte> m_buf;
  uint64_t m_written = 0;
  std::vector<ByteRange> m_zero_runs;
  uint64_t m_zero_bytes = 0;
};

Expected<void> pwrite_all(int fd, const Patch& p) {
  size_t done = 0;
  while (done < p.bytes.size()) {
    ssize_t n = ::pwrite(fd, p.bytes.data() + done, p.bytes.size() - done, static_cast<off_t>(p.offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return make_error(std::string("writing the slimmed file: ") + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
  return {};
}

// A pointer into .nv_fatbin that moves with its container: a word in the file and/or a
// RELA addend.
struct Pointer {
  uint64_t target = 0;           // the container start it names (vaddr)
  std::optional<uint64_t> word;  // file offset of the in-place word, when it holds the target
  std::optional<uint64_t> addend;  // file offset of the RELA record's r_addend
};

// A container found outside .nv_fatbin/__nv_relfatbin. Only its place is kept: its entries
// are read again when needed (the choice is a pure function of the bytes and the policy),
// so a library with tens of thousands of containers costs 40 bytes each.
struct EmbeddedContainer {
  uint64_t offset = 0, size = 0, addr = 0;  // file offset, 16 + fatSize, address
  uint32_t section = 0;                     // index into Plan::elf.sections
  uint32_t scan = 0;                        // index into LibrarySlim::embedded
  bool pointed_into = false;                // a relocation names a place inside it: kept whole
  bool changed = false;                     // entries are removed: rewritten in place
  uint64_t new_size = 0;                    // header and kept entries
};

// Embedded containers one file may make this tool remember (cuFFT 12: ~22,000).
constexpr size_t k_max_embedded_containers = 1'000'000;

struct Plan {
  formats::ElfFile elf;
  const formats::ElfSection* fat = nullptr;
  size_t fat_index = 0;
  std::vector<ElfSegment> phdrs;
  std::vector<formats::FatbinContainer> containers;
  std::vector<ContainerChoice> choices;
  std::vector<uint64_t> new_size;  // container bytes after compaction
  std::vector<uint64_t> new_pos;   // section-relative position in the output
  uint64_t packed_end = 0;         // section-relative end of the last container
  std::vector<Pointer> pointers;
  std::vector<bool> pinned;        // keeps its address (see find_pointers)
  std::vector<bool> pinned_whole;  // keeps its address and every entry
  // The cut: [cut_lo, cut_hi) of the input file disappears (delta = cut_hi - cut_lo).
  uint64_t cut_lo = 0, cut_hi = 0;
  bool split = false;
  size_t load_index = 0;  // the PT_LOAD holding .nv_fatbin
  uint64_t new_phoff = 0;
  bool fat_changed = false;  // .nv_fatbin is rewritten (entries removed from it)
  std::vector<EmbeddedContainer> embedded;  // in file order
  uint64_t delta() const { return cut_hi - cut_lo; }
  uint64_t out(uint64_t in) const { return in >= cut_hi ? in - delta() : in; }
};

// The 8-byte word at a virtual address, when a PT_LOAD maps it from inside the file.
std::optional<uint64_t> word_at_address(Bytes file, const Plan& p, uint64_t vaddr) {
  auto at = formats::file_offset_of(p.phdrs, vaddr, 8);
  return at ? read_le<uint64_t>(file, *at) : std::nullopt;
}

// Hands the pages of [offset, offset + size) of a read-only file map back to the kernel.
void release_map(Bytes file, uint64_t offset, uint64_t size) {
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t begin = offset / page * page, end = std::min<uint64_t>(file.size(), offset + size);
  if (end <= begin) return;
  ::madvise(const_cast<std::byte*>(file.data()) + begin, end - begin, MADV_DONTNEED);
}

// Finds the embedded containers (their places only) in the sections inspect searches
// (formats::embedded_scan_sections), so that what inspect counts is what slim chooses from.
// Sets `too_many` and stops when a file has more than k_max_embedded_containers; errors are
// the scan's (hostile input).
Expected<void> find_embedded(Bytes file, Plan& p, LibrarySlim& r, bool release, bool& too_many) {
  for (size_t si : formats::embedded_scan_sections(p.elf, file.size())) {
    const auto& s = p.elf.sections[si];
    EmbeddedSection found;
    found.section = s.name;
    const auto scan = static_cast<uint32_t>(r.embedded.size());
    uint64_t released_to = s.offset;
    auto scanned = formats::for_each_embedded_fatbin(
        file.subspan(s.offset, s.size), s.offset, s.addr,
        [&](formats::FatbinContainer&& c) -> Expected<void> {
          if (p.embedded.size() >= k_max_embedded_containers) {
            too_many = true;
            return make_error("too many");
          }
          EmbeddedContainer e;
          e.offset = c.offset;
          e.size = c.size;
          e.addr = s.addr + (c.offset - s.offset);
          e.section = static_cast<uint32_t>(si);
          e.scan = scan;
          p.embedded.push_back(e);
          ++found.containers;
          return {};
        },
        [&](uint64_t scanned_to) {
          if (release && scanned_to - released_to >= (uint64_t{4} << 20)) {
            release_map(file, released_to, scanned_to - released_to);
            released_to = scanned_to;
          }
        });
    if (too_many) return {};
    if (!scanned) return scanned.error();
    if (release) release_map(file, released_to, s.offset + s.size - released_to);
    if (found.containers) r.embedded.push_back(std::move(found));
  }
  return {};
}

// Marks the embedded containers that a dynamic relocation points inside (not at their
// start): something addresses their bytes, so they are kept whole. A pointer at a start
// is the library handing the container to the driver, which stays valid. Returns a reason
// when the relocations cannot be read (every container is then kept whole).
std::string mark_pointed_into(Bytes file, Plan& p) {
  if (p.embedded.empty()) return "";
  std::vector<size_t> by_addr(p.embedded.size());
  for (size_t i = 0; i < by_addr.size(); ++i) by_addr[i] = i;
  std::sort(by_addr.begin(), by_addr.end(), [&](size_t a, size_t b) { return p.embedded[a].addr < p.embedded[b].addr; });
  auto check = [&](uint64_t target) {
    auto it = std::upper_bound(by_addr.begin(), by_addr.end(), target,
                               [&](uint64_t v, size_t i) { return v < p.embedded[i].addr; });
    if (it == by_addr.begin()) return;
    auto& e = p.embedded[*(it - 1)];
    if (target > e.addr && target < e.addr + e.size) e.pointed_into = true;
  };
  for (const auto& s : p.elf.sections) {
    if (!(s.flags & formats::k_shf_alloc)) continue;
    if (s.type == formats::k_sht_rela) {
      auto rela = formats::rela_table(file, p.elf, s);
      if (!rela) return rela.error().message;
      for (uint64_t i = 0; i < rela->size(); ++i) check((*rela)[i].addend);
    } else if (s.type == formats::k_sht_relr) {
      auto relr = formats::relr_table(file, p.elf, s);
      if (!relr) return relr.error().message;
      relr->for_each_place([&](uint64_t place) {
        if (auto word = word_at_address(file, p, place)) check(*word);
      });
    }
  }
  return "";
}

uint64_t container_header_size(const formats::FatbinContainer& c) {
  return c.entries.empty() ? c.size : c.entries.front().header_offset - c.offset;
}

// The entries of one container to keep, and its size after compaction. `whole_reason`
// (not empty) keeps it whole; so do entries whose sizes are not multiples of 8 (moving
// them would misalign the next).
ContainerChoice decide(const formats::FatbinContainer& c, const KeepPolicy& policy, const std::string& whole_reason,
                       uint64_t& new_size) {
  auto choice = choose_entries(c, policy);
  auto keep_whole = [&](const std::string& note) {
    choice = ContainerChoice{};
    choice.keep.assign(c.entries.size(), true);
    choice.whole = true;
    choice.note = note;
  };
  if (!whole_reason.empty()) keep_whole(whole_reason);
  const uint64_t header = container_header_size(c);
  bool aligned = header % 8 == 0;
  for (const auto& entry : c.entries) aligned = aligned && (entry.header_size + entry.stored_size) % 8 == 0;
  if (!aligned && !choice.whole) keep_whole("its entries are not 8-byte aligned");
  new_size = header;
  for (size_t e = 0; e < c.entries.size(); ++e)
    if (choice.keep[e]) new_size += c.entries[e].header_size + c.entries[e].stored_size;
  return choice;
}

// One embedded container, read again from the file.
Expected<formats::FatbinContainer> read_embedded(Bytes file, const EmbeddedContainer& e) {
  TAILOR_TRY(containers, formats::parse_fatbin_section(file.subspan(e.offset, e.size), e.offset));
  if (containers.size() != 1) return make_error(fmt::format("internal: the embedded container at {:#x} reads differently", e.offset));
  return std::move(containers.front());
}

// Which containers may move. A container moves when registration wrappers in
// .nvFatBinSegment name it (their pointers are collected in p.pointers and move with it)
// and nothing else does. A container that no wrapper names, or that another relocated
// pointer names, is pinned: it keeps its address (code may refer to it PC-relatively) and
// is only compacted in place. A pointer into the middle of a container pins it whole.
// An empty string means the analysis holds; otherwise the reason nothing may move.
std::string find_pointers(Bytes file, Plan& p) {
  p.pinned.assign(p.containers.size(), false);
  p.pinned_whole.assign(p.containers.size(), false);
  const auto* seg = p.elf.find(".nvFatBinSegment");
  if (!seg) return "no .nvFatBinSegment registration wrappers";
  if (seg->type == formats::k_sht_nobits || seg->size % k_wrapper_size != 0 ||
      !strict_substr(file, seg->offset, seg->size))
    return ".nvFatBinSegment is not an array of 24-byte wrappers";
  const uint64_t fat_lo = p.fat->addr, fat_hi = p.fat->addr + p.fat->size;
  std::vector<uint64_t> starts;  // container vaddrs, ascending
  for (const auto& c : p.containers) starts.push_back(p.fat->addr + (c.offset - p.fat->offset));
  // The container holding a vaddr, and whether the vaddr is its start.
  auto container_of = [&](uint64_t vaddr) -> std::optional<std::pair<size_t, bool>> {
    if (vaddr < fat_lo || vaddr >= fat_hi || starts.empty()) return std::nullopt;
    auto it = std::upper_bound(starts.begin(), starts.end(), vaddr);
    if (it == starts.begin()) return std::nullopt;
    size_t i = static_cast<size_t>(it - starts.begin()) - 1;
    if (vaddr >= starts[i] + p.containers[i].size) return std::nullopt;
    return std::pair{i, vaddr == starts[i]};
  };
  auto pin = [&](uint64_t target) {
    if (auto c = container_of(target)) {
      p.pinned[c->first] = true;
      if (!c->second) p.pinned_whole[c->first] = true;
    }
  };
  const uint32_t relative =
      p.elf.e_machine == formats::k_em_x86_64 ? formats::k_r_x86_64_relative : formats::k_r_aarch64_relative;

  // Every dynamic relocation: wrapper places are remembered; any other pointer into
  // .nv_fatbin pins the container it names.
  std::unordered_map<uint64_t, std::pair<uint64_t, uint64_t>> rela_at;  // place -> (record offset, addend)
  std::unordered_map<uint64_t, bool> relr_at;
  const uint64_t seg_lo = seg->addr, seg_hi = seg->addr + seg->size;
  for (const auto& s : p.elf.sections) {
    if (!(s.flags & formats::k_shf_alloc)) continue;
    if (s.type == formats::k_sht_rela) {
      auto rela = formats::rela_table(file, p.elf, s);
      if (!rela) return rela.error().message;
      for (uint64_t i = 0; i < rela->size(); ++i) {
        const formats::ElfRela r = (*rela)[i];
        if (r.place >= seg_lo && r.place < seg_hi) {
          if (r.type() != relative && (r.place - seg_lo) % k_wrapper_size >= 8)
            return "a wrapper pointer has a relocation of type " + std::to_string(r.type());
          rela_at[r.place] = {r.at, r.addend};
        } else {
          pin(r.addend);
        }
      }
    } else if (s.type == formats::k_sht_relr) {
      auto relr = formats::relr_table(file, p.elf, s);
      if (!relr) return relr.error().message;
      relr->for_each_place([&](uint64_t place) {
        if (place >= seg_lo && place < seg_hi) {
          relr_at[place] = true;
          return;
        }
        if (auto word = word_at_address(file, p, place)) pin(*word);
      });
    }
  }

  std::vector<bool> named(p.containers.size(), false);
  for (uint64_t w = 0; w < seg->size; w += k_wrapper_size) {
    const uint64_t at = seg->offset + w;
    if (*read_le<uint32_t>(file, at) != k_wrapper_magic) return "a .nvFatBinSegment record without the wrapper magic";
    for (uint64_t field : {uint64_t{8}, uint64_t{16}}) {
      const uint64_t place = seg->addr + w + field;
      const uint64_t word = *read_le<uint64_t>(file, at + field);
      Pointer ptr;
      auto rela = rela_at.find(place);
      if (rela != rela_at.end()) {
        ptr.target = rela->second.second;
        ptr.addend = rela->second.first + formats::k_elf64_r_addend;
        if (word == ptr.target) ptr.word = at + field;
        else if (word != 0) return "a wrapper's word and its relocation disagree";
      } else {
        if (p.elf.e_type != formats::k_et_exec && !relr_at.count(place) && word != 0 && field == 8)
          return "a wrapper pointer without a relocation in a position-independent file";
        ptr.target = word;
        ptr.word = at + field;
      }
      // Wrappers of -rdc objects point into __nv_relfatbin, which stays as it is.
      auto c = container_of(ptr.target);
      if (!c) continue;
      if (!c->second) {
        pin(ptr.target);
        continue;
      }
      named[c->first] = true;
      p.pointers.push_back(ptr);
    }
  }
  for (size_t i = 0; i < named.size(); ++i)
    if (!named[i]) p.pinned[i] = true;
  return {};
}

// Places the cut and the split, or leaves cut_lo == cut_hi (no cut) when the layout does
// not allow one.
void place_cut(Bytes file, Plan& p) {
  const uint64_t hole_lo = p.fat->offset + p.packed_end, hole_hi = p.fat->offset + p.fat->size;
  p.cut_lo = p.cut_hi = hole_hi;
  uint64_t align = 0x1000;
  std::optional<size_t> load;
  for (size_t i = 0; i < p.phdrs.size(); ++i) {
    const auto& h = p.phdrs[i];
    if (h.type != formats::k_pt_load) continue;
    if (h.align > 1 && (h.align & (h.align - 1))) return;  // not a power of two
    align = std::max(align, h.align);
    if (h.offset <= p.fat->offset && hole_hi <= h.offset + h.filesz) load = i;
  }
  if (!load) return;
  const ElfSegment& L = p.phdrs[*load];
  const uint64_t load_end = L.offset + L.filesz;
  uint64_t hi = align_down(hole_hi, align);
  bool split = hi < load_end;
  uint64_t table = align_up(hole_lo, 8);
  uint64_t lo = align_up(split ? table + (p.phdrs.size() + 1) * formats::k_elf64_phdr_size : hole_lo, align);
  if (lo >= hi) return;
  if (!split && L.memsz != L.filesz) return;
  // Nothing but .nv_fatbin may lie in the cut: no other section or segment, nor the
  // section header table.
  for (size_t i = 0; i < p.elf.sections.size(); ++i) {
    const auto& s = p.elf.sections[i];
    if (i == p.fat_index || s.type == 0) continue;
    uint64_t end = s.offset + (s.type == formats::k_sht_nobits ? 0 : s.size);
    if (s.offset < hi && end > lo) return;
    if (s.type == formats::k_sht_nobits && s.offset > lo && s.offset < hi) return;
  }
  for (size_t i = 0; i < p.phdrs.size(); ++i) {
    const auto& h = p.phdrs[i];
    if (i == *load || h.filesz == 0) continue;
    if (h.offset < hi && h.offset + h.filesz > lo) return;
  }
  if (p.elf.e_shoff > lo && p.elf.e_shoff < hi) return;
  if (p.elf.e_phoff + p.phdrs.size() * formats::k_elf64_phdr_size > lo && p.elf.e_phoff < hi) return;
  (void)file;
  p.cut_lo = lo;
  p.cut_hi = hi;
  p.split = split;
  p.load_index = *load;
  p.new_phoff = table;
}

std::vector<ElfSegment> new_phdrs(const Plan& p) {
  std::vector<ElfSegment> out;
  for (size_t i = 0; i < p.phdrs.size(); ++i) {
    ElfSegment h = p.phdrs[i];
    if (p.delta() && i == p.load_index) {
      const uint64_t a_size = p.cut_lo - h.offset;
      ElfSegment b = h;
      b.offset = p.cut_lo;
      b.vaddr = h.vaddr + (p.cut_hi - h.offset);
      b.paddr = h.paddr + (p.cut_hi - h.offset);
      b.filesz = h.filesz - (p.cut_hi - h.offset);
      b.memsz = h.memsz - (p.cut_hi - h.offset);
      h.filesz = h.memsz = a_size;
      // The second half keeps execute permission only if a code section lies in it (the
      // first half keeps .text when the linker put code and read-only data together).
      bool code = false;
      for (const auto& s : p.elf.sections)
        if ((s.flags & formats::k_shf_execinstr) && s.addr + s.size > b.vaddr && s.addr < b.vaddr + b.memsz) code = true;
      if (!code) b.flags &= ~formats::k_pf_x;
      out.push_back(h);
      if (p.split) out.push_back(b);
      continue;
    }
    if (h.offset >= p.cut_hi) h.offset -= p.delta();
    out.push_back(h);
  }
  if (p.split) {
    const ElfSegment& L = p.phdrs[p.load_index];
    for (auto& h : out)
      if (h.type == formats::k_pt_phdr) {
        h.offset = p.new_phoff;
        h.vaddr = L.vaddr + (p.new_phoff - L.offset);
        h.paddr = L.paddr + (p.new_phoff - L.offset);
        h.filesz = h.memsz = out.size() * formats::k_elf64_phdr_size;
      }
  }
  return out;
}

// The zero runs minus the bytes patches overwrite (the program header table moves into
// .nv_fatbin's freed range), runs shorter than a page dropped.
std::vector<ByteRange> zero_runs_minus(std::vector<ByteRange> runs, std::vector<Patch> patches) {
  std::sort(patches.begin(), patches.end(), [](const Patch& a, const Patch& b) { return a.offset < b.offset; });
  std::vector<ByteRange> out;
  size_t first = 0;
  for (const auto& run : runs) {
    uint64_t at = run.offset;
    const uint64_t end = run.offset + run.size;
    while (first < patches.size() && patches[first].offset + patches[first].bytes.size() <= run.offset) ++first;
    for (size_t i = first; i < patches.size() && patches[i].offset < end; ++i) {
      const uint64_t lo = patches[i].offset, hi = lo + patches[i].bytes.size();
      if (hi <= at) continue;
      if (lo > at) out.push_back({at, lo - at});
      at = std::max(at, hi);
    }
    if (end > at) out.push_back({at, end - at});
  }
  std::erase_if(out, [](const ByteRange& r) { return r.size < Writer::k_min_zero_run; });
  return out;
}

// Writes the result to `fd` (or, with fd -1, only counts it: a dry run) and records the
// freed bytes left as zeros in `r`.
Expected<void> write_output(Bytes file, const Plan& p, const KeepPolicy& policy, int fd, bool release_pages,
                            LibrarySlim& r) {
  if (fd >= 0 && (::lseek(fd, 0, SEEK_SET) < 0 || ::ftruncate(fd, 0) != 0))
    return make_error(std::string("preparing the slimmed file: ") + std::strerror(errno));
  Writer w(fd, release_pages);
  uint64_t at = 0;  // the input is written up to here
  size_t next = 0;  // the next embedded container
  // The changed embedded containers that start before `limit`: header (new size), kept
  // entries, zeros up to the old end. Each stays where it was.
  auto embedded_before = [&](uint64_t limit) -> Expected<void> {
    for (; next < p.embedded.size() && p.embedded[next].offset < limit; ++next) {
      const auto& e = p.embedded[next];
      if (!e.changed) continue;
      TAILOR_TRY_VOID(w.copy_from_map(file.subspan(at, e.offset - at)));
      if (w.written() != p.out(e.offset)) return make_error("internal: an embedded container would move");
      TAILOR_TRY(c, read_embedded(file, e));
      uint64_t size = 0;
      auto choice = decide(c, policy, "", size);
      if (size != e.new_size) return make_error("internal: an embedded container's choice changed between passes");
      const uint64_t header = container_header_size(c);
      std::vector<std::byte> head(file.begin() + c.offset, file.begin() + c.offset + header);
      const uint64_t fat_size = size - header;
      std::memcpy(head.data() + 8, &fat_size, 8);
      TAILOR_TRY_VOID(w.bytes(head));
      for (size_t i = 0; i < c.entries.size(); ++i)
        if (choice.keep[i]) TAILOR_TRY_VOID(w.bytes(file.subspan(c.entries[i].header_offset, c.entries[i].header_size + c.entries[i].stored_size)));
      TAILOR_TRY_VOID(w.zeros(e.size - size));
      at = e.offset + e.size;
    }
    return {};
  };
  std::vector<Patch> patches;
  if (p.fat_changed) {
    const uint64_t fat_off = p.fat->offset, fat_end = p.fat->offset + p.fat->size;
    TAILOR_TRY_VOID(embedded_before(fat_off));
    TAILOR_TRY_VOID(w.copy_from_map(file.subspan(at, fat_off - at)));
    for (size_t i = 0; i < p.containers.size(); ++i) {
      const auto& c = p.containers[i];
      TAILOR_TRY_VOID(w.zeros(fat_off + p.new_pos[i] - w.written()));
      const uint64_t header = container_header_size(c);
      std::vector<std::byte> head(file.begin() + c.offset, file.begin() + c.offset + header);
      uint64_t fat_size = p.new_size[i] - header;
      std::memcpy(head.data() + 8, &fat_size, 8);
      TAILOR_TRY_VOID(w.bytes(head));
      for (size_t e = 0; e < c.entries.size(); ++e) {
        if (!p.choices[i].keep[e]) continue;
        const auto& entry = c.entries[e];
        TAILOR_TRY_VOID(w.bytes(file.subspan(entry.header_offset, entry.header_size + entry.stored_size)));
      }
    }
    if (fat_end - p.delta() < w.written()) return make_error("internal: slimmed containers overran their section");
    TAILOR_TRY_VOID(w.zeros(fat_end - p.delta() - w.written()));
    at = fat_end;
  }
  TAILOR_TRY_VOID(embedded_before(file.size()));
  TAILOR_TRY_VOID(w.copy_from_map(file.subspan(at)));
  TAILOR_TRY_VOID(w.flush());

  if (p.fat_changed) {
    const uint64_t fat_off = p.fat->offset;
    // Program headers: in the freed range when a segment was split, else where they were.
    auto phdrs = new_phdrs(p);
    patches.push_back({p.split ? p.new_phoff : p.elf.e_phoff, formats::encode_segments(phdrs)});
    if (p.split) {
      patches.push_back(patch_of<uint64_t>(formats::k_elf64_e_phoff, p.new_phoff));
      patches.push_back(patch_of<uint16_t>(formats::k_elf64_e_phnum, static_cast<uint16_t>(phdrs.size())));
    }
    // Section headers: later offsets move down; .nv_fatbin ends at the last container.
    const uint64_t shoff_out = p.out(p.elf.e_shoff);
    if (shoff_out != p.elf.e_shoff) patches.push_back(patch_of<uint64_t>(formats::k_elf64_e_shoff, shoff_out));
    for (size_t i = 0; i < p.elf.sections.size(); ++i) {
      const auto& s = p.elf.sections[i];
      const uint64_t sh = shoff_out + i * formats::k_elf64_shdr_size;
      if (i > 0 && s.offset >= p.cut_hi && p.delta())
        patches.push_back(patch_of<uint64_t>(sh + formats::k_elf64_sh_offset, s.offset - p.delta()));
      if (i == p.fat_index && p.packed_end != p.fat->size)
        patches.push_back(patch_of<uint64_t>(sh + formats::k_elf64_sh_size, p.packed_end));
    }
    // Wrapper pointers and the symbols naming containers.
    std::unordered_map<uint64_t, size_t> moved;  // old vaddr -> container
    for (size_t i = 0; i < p.containers.size(); ++i)
      moved[p.fat->addr + (p.containers[i].offset - fat_off)] = i;
    auto new_addr = [&](size_t i) { return p.fat->addr + p.new_pos[i]; };
    for (const auto& ptr : p.pointers) {
      uint64_t to = new_addr(moved.at(ptr.target));
      if (ptr.word) patches.push_back(patch_of<uint64_t>(p.out(*ptr.word), to));
      if (ptr.addend) patches.push_back(patch_of<uint64_t>(p.out(*ptr.addend), to));
    }
    for (const auto& s : p.elf.sections) {
      if (s.type != formats::k_sht_symtab && s.type != formats::k_sht_dynsym) continue;
      auto symbols = formats::symbol_table(file, p.elf, s);
      if (!symbols) continue;  // a table that does not read names nothing here
      for (uint64_t i = 0; i < symbols->size(); ++i) {
        const formats::ElfSymbol sym = (*symbols)[i];
        if (sym.shndx != p.fat_index) continue;
        auto c = moved.find(sym.value);
        if (c == moved.end()) continue;
        patches.push_back(patch_of<uint64_t>(p.out(sym.at + formats::k_elf64_st_value), new_addr(c->second)));
        if (sym.size == p.containers[c->second].size)
          patches.push_back(patch_of<uint64_t>(p.out(sym.at + formats::k_elf64_st_size), p.new_size[c->second]));
      }
    }
    if (fd >= 0)
      for (const auto& patch : patches) TAILOR_TRY_VOID(pwrite_all(fd, patch));
  }
  r.zeroed_bytes = w.zero_bytes();
  r.zeroed = zero_runs_minus(std::move(w.zero_runs()), std::move(patches));
  r.punchable_bytes = 0;
  for (const auto& z : r.zeroed) {
    const uint64_t lo = align_up(z.offset, Writer::k_min_zero_run), hi = align_down(z.offset + z.size, Writer::k_min_zero_run);
    if (hi > lo) r.punchable_bytes += hi - lo;
  }
  return {};
}

}  // namespace

std::string_view left_reason_key(LeftReason reason) {
  switch (reason) {
    case LeftReason::runs: return "runs_on_kept_gpu";
    case LeftReason::whole: return "container_kept_whole";
    case LeftReason::link_time_ir: return "link_time_ir";
    case LeftReason::relocatable: break;
  }
  return "relocatable_device_code";
}

void add_left(std::vector<TargetLeft>& rows, const TargetLeft& row) {
  auto less = [](const TargetLeft& a, const TargetLeft& b) {
    if (a.reason != b.reason) return a.reason < b.reason;
    if (a.detail != b.detail) return a.detail < b.detail;
    return a.code < b.code;
  };
  auto at = std::lower_bound(rows.begin(), rows.end(), row, less);
  if (at != rows.end() && at->code == row.code && at->reason == row.reason && at->detail == row.detail) {
    at->bytes += row.bytes;
    at->entries += row.entries;
    return;
  }
  rows.insert(at, row);
}

std::string_view outcome_key(SlimOutcome outcome) {
  switch (outcome) {
    case SlimOutcome::slimmed: return "slimmed";
    case SlimOutcome::unchanged: return "unchanged";
    case SlimOutcome::no_device_code: return "no_device_code";
    case SlimOutcome::left_untouched: break;
  }
  return "left_untouched";
}

Expected<LibrarySlim> slim_elf(Bytes file, const KeepPolicy& policy, int out_fd, bool file_is_mapped) {
  LibrarySlim r;
  r.size_before = r.size_after = file.size();
  Plan p;
  TAILOR_TRY(elf, formats::parse_elf(file));
  p.elf = std::move(elf);
  if (!p.elf.is_64 || (p.elf.e_machine != formats::k_em_x86_64 && p.elf.e_machine != formats::k_em_aarch64)) {
    const bool has_fat = p.elf.find(formats::k_nv_fatbin_section) != nullptr;
    r.outcome = has_fat ? SlimOutcome::left_untouched : SlimOutcome::no_device_code;
    if (has_fat) r.note = "a " + p.elf.machine + (p.elf.is_64 ? "" : " 32-bit") + " file; only 64-bit x86_64 and aarch64 are rewritten";
    return r;
  }
  if (const auto* rel = p.elf.find(formats::k_nv_relfatbin_section)) {
    // Read only by a later device link, never slimmed: its targets stay, and are named.
    r.relocatable_bytes = rel->size;
    TAILOR_TRY(rel_section, formats::section_bytes(file, *rel));
    TAILOR_TRY(rel_containers, formats::parse_fatbin_section(rel_section, rel->offset));
    for (const auto& c : rel_containers)
      for (const auto& e : c.entries)
        add_left(r.left, {cuda::fatbin_code(e).name(), LeftReason::relocatable, "", e.header_size + e.stored_size, 1,
                          cuda::fatbin_code(e)});
  }
  if (auto fat = p.elf.find_index(formats::k_nv_fatbin_section)) {
    p.fat_index = *fat;
    p.fat = &p.elf.sections[*fat];
  }
  if (p.fat && (p.fat->type == formats::k_sht_nobits || !(p.fat->flags & formats::k_shf_alloc) || p.fat->size == 0)) {
    r.outcome = SlimOutcome::left_untouched;
    r.note = ".nv_fatbin is not an allocated section with contents";
    return r;
  }
  bool too_many = false;
  TAILOR_TRY_VOID(find_embedded(file, p, r, file_is_mapped, too_many));
  if (!p.fat && p.embedded.empty() && !too_many) {
    r.outcome = r.relocatable_bytes ? SlimOutcome::unchanged : SlimOutcome::no_device_code;
    if (r.relocatable_bytes) r.note = "only relocatable device code (-rdc, __nv_relfatbin), left as is";
    return r;
  }
  auto untouched = [&](std::string note) {
    LibrarySlim u;
    u.size_before = u.size_after = file.size();
    u.relocatable_bytes = r.relocatable_bytes;
    u.outcome = SlimOutcome::left_untouched;
    u.note = std::move(note);
    return u;
  };
  if (too_many)
    return untouched("more than " + std::to_string(k_max_embedded_containers) + " fatbin containers outside .nv_fatbin");
  auto segments = formats::read_segments(file, p.elf);
  if (!segments) return untouched(segments.error().message);
  p.phdrs = std::move(*segments);

  std::map<cuda::FatbinCode, TargetBytes> per_target;  // canonical order, not the names' text
  const std::string lto_detail =
      "LTO IR: the library links it itself at run time (nvJitLink); the driver never loads it (--drop-lto removes it)";
  // Counts one container's entries into the result; returns the bytes removed.
  auto account = [&](const formats::FatbinContainer& c, const ContainerChoice& choice, const std::function<std::string()>& where) {
    uint64_t removed = 0;
    for (size_t e = 0; e < c.entries.size(); ++e) {
      const auto& entry = c.entries[e];
      const uint64_t bytes = entry.header_size + entry.stored_size;
      const cuda::FatbinCode code = cuda::fatbin_code(entry);
      const std::string name = code.name();
      auto& t = per_target[code];
      t.target = name;
      t.code = code;
      r.device_before += bytes;
      if (!choice.keep[e]) {
        t.removed_bytes += bytes;
        ++t.removed;
        removed += bytes;
        continue;
      }
      t.kept_bytes += bytes;
      ++t.kept;
      r.device_after += bytes;
      TargetLeft row{name, LeftReason::runs, "", bytes, 1, code};
      if (choice.whole) {
        row.reason = LeftReason::whole;
        row.detail = choice.note;
      } else if (code.is_lto_ir()) {
        row.reason = LeftReason::link_time_ir;
        row.detail = lto_detail;
      } else {
        auto target = code.target();
        row.detail = target ? why_kept(*target, policy) : "named in --keep";
      }
      add_left(r.left, row);
    }
    if (choice.ptx_only) ++r.containers_ptx_only;
    if (choice.whole || choice.no_code_for_kept) {
      ++(choice.whole ? r.containers_whole : r.containers_emptied);
      if (r.warnings.size() < k_max_warnings) {
        std::string who = where();
        r.warnings.push_back((who.empty() ? "" : who + ": ") + (choice.whole ? "kept whole: " : "") + choice.note);
      }
    }
    return removed;
  };

  uint64_t fat_removed = 0, embedded_removed = 0;
  std::string why;  // non-empty: .nv_fatbin's containers may not move
  if (p.fat) {
    TAILOR_TRY(section, formats::section_bytes(file, *p.fat));
    TAILOR_TRY(containers, formats::parse_fatbin_section(section, p.fat->offset));
    p.containers = std::move(containers);
    r.containers = p.containers.size();
    // Which containers may move, before choosing entries: a pointer into the middle of a
    // container keeps all of it.
    why = find_pointers(file, p);
    if (!why.empty()) {
      p.pointers.clear();
      p.pinned.assign(p.containers.size(), true);
      p.pinned_whole.assign(p.containers.size(), false);
    }
    for (size_t ci = 0; ci < p.containers.size(); ++ci) {
      const auto& c = p.containers[ci];
      uint64_t size = 0;
      auto choice = decide(c, policy, p.pinned_whole[ci] ? "a pointer other than a registration wrapper points inside it" : "", size);
      fat_removed += account(c, choice, [&] { return c.entries.empty() ? std::string() : c.entries.front().identifier; });
      p.new_size.push_back(size);
      p.choices.push_back(std::move(choice));
    }
  }
  // Embedded containers: the same choice; they keep their address and are compacted in
  // place (their entries read again, one container at a time).
  const std::string unreadable = mark_pointed_into(file, p);
  for (auto& e : p.embedded) {
    TAILOR_TRY(c, read_embedded(file, e));
    const std::string whole = !unreadable.empty() ? "relocations unreadable (" + unreadable + ")"
                              : e.pointed_into    ? "a relocation points inside it, not at its start"
                                                  : "";
    auto choice = decide(c, policy, whole, e.new_size);
    auto& stats = r.embedded[e.scan];
    const uint64_t before = r.device_before, after = r.device_after;
    const uint64_t removed = account(c, choice, [&] {
      return p.elf.sections[e.section].name + fmt::format(" container at {:#x}", e.offset);
    });
    stats.device_before += r.device_before - before;
    stats.device_after += r.device_after - after;
    if (choice.whole) ++stats.containers_whole;
    e.changed = removed > 0;
    if (e.changed) ++stats.containers_changed;
    if (choice.no_code_for_kept) ++stats.containers_emptied;
    embedded_removed += removed;
  }
  for (auto& [name, t] : per_target) r.targets.push_back(t);
  if (fat_removed + embedded_removed == 0) {
    r.outcome = SlimOutcome::unchanged;
    return r;
  }
  r.outcome = SlimOutcome::slimmed;

  if (fat_removed) {
    p.fat_changed = true;
    // Layout: movable containers packed toward the start; a pinned one keeps its place.
    // Every container ends at or before where it ended, so none overlaps a pinned one.
    const uint64_t align = std::max<uint64_t>(8, p.fat->addralign);
    uint64_t pos = 0;
    for (size_t i = 0; i < p.containers.size(); ++i) {
      const uint64_t old_pos = p.containers[i].offset - p.fat->offset;
      pos = p.pinned[i] ? old_pos : align_up(pos, align);
      p.new_pos.push_back(pos);
      pos += p.new_size[i];
      if (p.pinned[i]) ++r.containers_pinned;
    }
    p.packed_end = why.empty() ? pos : p.fat->size;
    r.packed = why.empty() && r.containers_pinned < p.containers.size();
    if (why.empty()) {
      place_cut(file, p);
      r.split = p.split;
      if (!p.delta()) r.note = "the freed bytes do not span a whole aligned page range; zeroed, not cut";
      else if (r.containers_pinned)
        r.note = std::to_string(r.containers_pinned) + " container" + (r.containers_pinned == 1 ? "" : "s") +
                 " kept " + (r.containers_pinned == 1 ? "its" : "their") +
                 " address (named by code, not only by a registration wrapper): compacted in place, the rest packed";
    } else {
      r.note = "not shrunk on disk (" + why + "): entries compacted inside their containers, the rest zeroed";
    }
  }
  r.size_after = file.size() - p.delta();
  TAILOR_TRY_VOID(write_output(file, p, policy, out_fd, file_is_mapped, r));
  return r;
}

Expected<DeviceCount> count_device_code(Bytes file, bool file_is_mapped) {
  TAILOR_TRY(elf, formats::parse_elf(file));
  DeviceCount n;
  auto count = [&](const formats::FatbinContainer& c) {
    for (const auto& e : c.entries) {
      ++n.entries;
      n.bytes += e.header_size + e.stored_size;
    }
  };
  if (const auto* fat = elf.find(formats::k_nv_fatbin_section)) {
    TAILOR_TRY(section, formats::section_bytes(file, *fat));
    TAILOR_TRY(containers, formats::parse_fatbin_section(section, fat->offset));
    n.fatbin_containers = containers.size();
    for (const auto& c : containers) count(c);
  }
  for (size_t si : formats::embedded_scan_sections(elf, file.size())) {
    const auto& s = elf.sections[si];
    uint64_t released_to = s.offset;
    TAILOR_TRY_VOID(formats::for_each_embedded_fatbin(
        file.subspan(s.offset, s.size), s.offset, s.addr,
        [&](formats::FatbinContainer&& c) -> Expected<void> {
          ++n.embedded_containers;
          count(c);
          return {};
        },
        [&](uint64_t scanned_to) {
          if (file_is_mapped && scanned_to - released_to >= (uint64_t{4} << 20)) {
            release_map(file, released_to, scanned_to - released_to);
            released_to = scanned_to;
          }
        }));
  }
  return n;
}

}  // namespace tailor::slim
