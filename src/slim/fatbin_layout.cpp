// Where .nv_fatbin's containers may go: the pointers that name them (registration
// wrappers move with their container; anything else pins it), the cut out of the file and
// the program headers after it.
#include <algorithm>
#include <unordered_map>

#include "slim/elf_surgery.h"
#include "slim/slim_output.h"

namespace tailor::slim::surgery {

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
  const uint32_t relative = p.elf.e_machine == formats::k_em_x86_64 ? formats::k_r_x86_64_relative
                                                                    : formats::k_r_aarch64_relative;

  // Every dynamic relocation: wrapper places are remembered; any other pointer into
  // .nv_fatbin pins the container it names.
  std::unordered_map<uint64_t, std::pair<uint64_t, uint64_t>>
      rela_at;  // place -> (record offset, addend)
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
    if (*read_le<uint32_t>(file, at) != k_wrapper_magic)
      return "a .nvFatBinSegment record without the wrapper magic";
    for (uint64_t field : {uint64_t{8}, uint64_t{16}}) {
      const uint64_t place = seg->addr + w + field;
      const uint64_t word = *read_le<uint64_t>(file, at + field);
      Pointer ptr;
      auto rela = rela_at.find(place);
      if (rela != rela_at.end()) {
        ptr.target = rela->second.second;
        ptr.addend = rela->second.first + formats::k_elf64_r_addend;
        if (word == ptr.target)
          ptr.word = at + field;
        else if (word != 0)
          return "a wrapper's word and its relocation disagree";
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
  uint64_t lo =
      align_up(split ? table + (p.phdrs.size() + 1) * formats::k_elf64_phdr_size : hole_lo, align);
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
  if (p.elf.e_phoff + p.phdrs.size() * formats::k_elf64_phdr_size > lo && p.elf.e_phoff < hi)
    return;
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
        if ((s.flags & formats::k_shf_execinstr) && s.addr + s.size > b.vaddr &&
            s.addr < b.vaddr + b.memsz)
          code = true;
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

}  // namespace tailor::slim::surgery
