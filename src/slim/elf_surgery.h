// Internal to src/slim: the plan of elf_slim's surgery on one file (what it found, what may
// move, where the cut goes) and the steps that fill it in: the embedded containers
// (embedded_containers.cpp), the pointers into .nv_fatbin, the cut and the new program
// headers (fatbin_layout.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "formats/elf.h"
#include "formats/fatbin.h"
#include "slim/elf_slim.h"
#include "slim/keep_policy.h"
#include "util/byte_reader.h"
#include "util/expected.h"

namespace tailor::slim::surgery {

using formats::ElfSegment;

// The CUDA runtime's registration wrapper (__fatBinC_Wrapper_t): magic, version, then the
// container's address at +8 and a second pointer at +16.
constexpr uint32_t k_wrapper_magic = 0x466243B1;
constexpr uint64_t k_wrapper_size = 24;
constexpr size_t k_max_warnings = 20;

// A pointer into .nv_fatbin that moves with its container: a word in the file and/or a
// RELA addend.
struct Pointer {
  uint64_t target = 0;             // the container start it names (vaddr)
  std::optional<uint64_t> word;    // file offset of the in-place word, when it holds the target
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
  bool fat_changed = false;                 // .nv_fatbin is rewritten (entries removed from it)
  std::vector<EmbeddedContainer> embedded;  // in file order
  uint64_t delta() const { return cut_hi - cut_lo; }
  uint64_t out(uint64_t in) const { return in >= cut_hi ? in - delta() : in; }
};

// The 8-byte word at a virtual address, when a PT_LOAD maps it from inside the file.
inline std::optional<uint64_t> word_at_address(Bytes file, const Plan& p, uint64_t vaddr) {
  auto at = formats::file_offset_of(p.phdrs, vaddr, 8);
  return at ? read_le<uint64_t>(file, *at) : std::nullopt;
}

// ---- embedded_containers.cpp ------------------------------------------------------------
// Finds the embedded containers (their places only) in the sections inspect searches
// (formats::embedded_scan_sections), so that what inspect counts is what slim chooses from.
// Sets `too_many` and stops when a file has more than k_max_embedded_containers; errors are
// the scan's (hostile input).
Expected<void> find_embedded(Bytes file, Plan& p, LibrarySlim& r, bool release, bool& too_many);
// Marks the embedded containers that a dynamic relocation points inside (not at their
// start): something addresses their bytes, so they are kept whole. A pointer at a start
// is the library handing the container to the driver, which stays valid. Returns a reason
// when the relocations cannot be read (every container is then kept whole).
std::string mark_pointed_into(Bytes file, Plan& p);
// One embedded container, read again from the file.
Expected<formats::FatbinContainer> read_embedded(Bytes file, const EmbeddedContainer& e);

// ---- fatbin_layout.cpp ------------------------------------------------------------------
// Which containers may move. A container moves when registration wrappers in
// .nvFatBinSegment name it (their pointers are collected in p.pointers and move with it)
// and nothing else does. A container that no wrapper names, or that another relocated
// pointer names, is pinned: it keeps its address (code may refer to it PC-relatively) and
// is only compacted in place. A pointer into the middle of a container pins it whole.
// An empty string means the analysis holds; otherwise the reason nothing may move.
std::string find_pointers(Bytes file, Plan& p);
// Places the cut and the split, or leaves cut_lo == cut_hi (no cut) when the layout does
// not allow one.
void place_cut(Bytes file, Plan& p);
/// The program headers after the cut: the load segment split in two, later offsets moved.
std::vector<ElfSegment> new_phdrs(const Plan& p);

}  // namespace tailor::slim::surgery
