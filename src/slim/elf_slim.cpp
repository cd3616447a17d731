// slim_elf: chooses the entries to keep in every container of one ELF file, accounts for
// what is left and why, and writes the result in one streaming pass plus small patches.
#include "slim/elf_slim.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <map>
#include <unordered_map>

#include "cuda/cuda_target.h"
#include "cuda/fatbin_code.h"
#include "formats/device_sections.h"
#include "formats/elf.h"
#include "formats/fatbin.h"
#include "slim/elf_surgery.h"
#include "slim/slim_output.h"
#include "util/strings.h"

namespace tailor::slim {
// The ELF reading (constants, program headers, relocation and symbol tables) is
// formats/elf.h's; the surgery's plan and output are elf_surgery.h's and slim_output.h's.
using namespace surgery;

namespace {

uint64_t container_header_size(const formats::FatbinContainer& c) {
  return c.entries.empty() ? c.size : c.entries.front().header_offset - c.offset;
}

// The entries of one container to keep, and its size after compaction. `whole_reason`
// (not empty) keeps it whole; so do entries whose sizes are not multiples of 8 (moving
// them would misalign the next).
ContainerChoice decide(const formats::FatbinContainer& c, const KeepPolicy& policy,
                       const std::string& whole_reason, uint64_t& new_size) {
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
  for (const auto& entry : c.entries)
    aligned = aligned && (entry.header_size + entry.stored_size) % 8 == 0;
  if (!aligned && !choice.whole) keep_whole("its entries are not 8-byte aligned");
  new_size = header;
  for (size_t e = 0; e < c.entries.size(); ++e)
    if (choice.keep[e]) new_size += c.entries[e].header_size + c.entries[e].stored_size;
  return choice;
}

// The patches over the written file once .nv_fatbin changed: the program headers (moved
// into the freed range when a segment was split), the section headers' offsets and
// .nv_fatbin's size, the wrapper pointers and the symbols that name moved containers.
std::vector<Patch> layout_patches(Bytes file, const Plan& p) {
  std::vector<Patch> patches;
  const uint64_t fat_off = p.fat->offset;
  // Program headers: in the freed range when a segment was split, else where they were.
  auto phdrs = new_phdrs(p);
  patches.push_back({p.split ? p.new_phoff : p.elf.e_phoff, formats::encode_segments(phdrs)});
  if (p.split) {
    patches.push_back(patch_of<uint64_t>(formats::k_elf64_e_phoff, p.new_phoff));
    patches.push_back(
        patch_of<uint16_t>(formats::k_elf64_e_phnum, static_cast<uint16_t>(phdrs.size())));
  }
  // Section headers: later offsets move down; .nv_fatbin ends at the last container.
  const uint64_t shoff_out = p.out(p.elf.e_shoff);
  if (shoff_out != p.elf.e_shoff)
    patches.push_back(patch_of<uint64_t>(formats::k_elf64_e_shoff, shoff_out));
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
      patches.push_back(
          patch_of<uint64_t>(p.out(sym.at + formats::k_elf64_st_value), new_addr(c->second)));
      if (sym.size == p.containers[c->second].size)
        patches.push_back(
            patch_of<uint64_t>(p.out(sym.at + formats::k_elf64_st_size), p.new_size[c->second]));
    }
  }
  return patches;
}

// Writes the result to `fd` (or, with fd -1, only counts it: a dry run) and records the
// freed bytes left as zeros in `r`.
Expected<void> write_output(Bytes file, const Plan& p, const KeepPolicy& policy, int fd,
                            bool release_pages, LibrarySlim& r) {
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
      if (w.written() != p.out(e.offset))
        return make_error("internal: an embedded container would move");
      TAILOR_TRY(c, read_embedded(file, e));
      uint64_t size = 0;
      auto choice = decide(c, policy, "", size);
      if (size != e.new_size)
        return make_error("internal: an embedded container's choice changed between passes");
      const uint64_t header = container_header_size(c);
      std::vector<std::byte> head(file.begin() + c.offset, file.begin() + c.offset + header);
      const uint64_t fat_size = size - header;
      std::memcpy(head.data() + 8, &fat_size, 8);
      TAILOR_TRY_VOID(w.bytes(head));
      for (size_t i = 0; i < c.entries.size(); ++i)
        if (choice.keep[i])
          TAILOR_TRY_VOID(w.bytes(file.subspan(
              c.entries[i].header_offset, c.entries[i].header_size + c.entries[i].stored_size)));
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
        TAILOR_TRY_VOID(
            w.bytes(file.subspan(entry.header_offset, entry.header_size + entry.stored_size)));
      }
    }
    if (fat_end - p.delta() < w.written())
      return make_error("internal: slimmed containers overran their section");
    TAILOR_TRY_VOID(w.zeros(fat_end - p.delta() - w.written()));
    at = fat_end;
  }
  TAILOR_TRY_VOID(embedded_before(file.size()));
  TAILOR_TRY_VOID(w.copy_from_map(file.subspan(at)));
  TAILOR_TRY_VOID(w.flush());

  if (p.fat_changed) {
    patches = layout_patches(file, p);
    if (fd >= 0)
      for (const auto& patch : patches) TAILOR_TRY_VOID(pwrite_all(fd, patch));
  }
  r.zeroed_bytes = w.zero_bytes();
  r.zeroed = zero_runs_minus(std::move(w.zero_runs()), std::move(patches));
  r.punchable_bytes = 0;
  for (const auto& z : r.zeroed) {
    const uint64_t lo = align_up(z.offset, Writer::k_min_zero_run),
                   hi = align_down(z.offset + z.size, Writer::k_min_zero_run);
    if (hi > lo) r.punchable_bytes += hi - lo;
  }
  return {};
}

}  // namespace

std::string_view left_reason_key(LeftReason reason) {
  switch (reason) {
    case LeftReason::runs:
      return "runs_on_kept_gpu";
    case LeftReason::whole:
      return "container_kept_whole";
    case LeftReason::link_time_ir:
      return "link_time_ir";
    case LeftReason::relocatable:
      break;
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
  if (at != rows.end() && at->code == row.code && at->reason == row.reason &&
      at->detail == row.detail) {
    at->bytes += row.bytes;
    at->entries += row.entries;
    return;
  }
  rows.insert(at, row);
}

std::string_view outcome_key(SlimOutcome outcome) {
  switch (outcome) {
    case SlimOutcome::slimmed:
      return "slimmed";
    case SlimOutcome::unchanged:
      return "unchanged";
    case SlimOutcome::no_device_code:
      return "no_device_code";
    case SlimOutcome::left_untouched:
      break;
  }
  return "left_untouched";
}

namespace {

// Counts containers' entries into a result: bytes per target before and after, each kept
// entry's row in `left` with its reason, the containers kept whole or emptied, warnings.
class SlimAccount {
 public:
  SlimAccount(LibrarySlim& r, const KeepPolicy& policy) : m_r(r), m_policy(policy) {}

  // One container's entries; returns the bytes removed. `where` names the container in a
  // warning (called only when one is written).
  uint64_t add(const formats::FatbinContainer& c, const ContainerChoice& choice,
               const std::function<std::string()>& where) {
    uint64_t removed = 0;
    for (size_t e = 0; e < c.entries.size(); ++e) {
      const auto& entry = c.entries[e];
      const uint64_t bytes = entry.header_size + entry.stored_size;
      const cuda::FatbinCode code = cuda::fatbin_code(entry);
      const std::string name = code.name();
      auto& t = m_per_target[code];
      t.target = name;
      t.code = code;
      m_r.device_before += bytes;
      if (!choice.keep[e]) {
        t.removed_bytes += bytes;
        ++t.removed;
        removed += bytes;
        continue;
      }
      t.kept_bytes += bytes;
      ++t.kept;
      m_r.device_after += bytes;
      add_left(m_r.left, kept_row(code, bytes, choice));
    }
    if (choice.ptx_only) ++m_r.containers_ptx_only;
    if (choice.whole || choice.no_code_for_kept) {
      ++(choice.whole ? m_r.containers_whole : m_r.containers_emptied);
      if (m_r.warnings.size() < k_max_warnings) {
        std::string who = where();
        m_r.warnings.push_back((who.empty() ? "" : who + ": ") +
                               (choice.whole ? "kept whole: " : "") + choice.note);
      }
    }
    return removed;
  }

  // The result's per-target bytes, in the canonical order of cuda::FatbinCode.
  void finish() {
    for (auto& [code, t] : m_per_target) m_r.targets.push_back(t);
  }

 private:
  TargetLeft kept_row(const cuda::FatbinCode& code, uint64_t bytes,
                      const ContainerChoice& choice) const {
    TargetLeft row{code.name(), LeftReason::runs, "", bytes, 1, code};
    if (choice.whole) {
      row.reason = LeftReason::whole;
      row.detail = choice.note;
    } else if (code.is_lto_ir()) {
      row.reason = LeftReason::link_time_ir;
      row.detail =
          "LTO IR: the library links it itself at run time (nvJitLink); the driver never loads it "
          "(--drop-lto "
          "removes it)";
    } else {
      auto target = code.target();
      row.detail = target ? why_kept(*target, m_policy) : "named in --keep";
    }
    return row;
  }

  LibrarySlim& m_r;
  const KeepPolicy& m_policy;
  std::map<cuda::FatbinCode, TargetBytes> m_per_target;  // canonical order, not the names' text
};

// The result for a file this tool does not rewrite (another machine, a 32-bit file), or
// nullopt for a 64-bit x86_64 or aarch64 one.
std::optional<LibrarySlim> other_machine(const formats::ElfFile& elf, uint64_t size) {
  if (elf.is_64 &&
      (elf.e_machine == formats::k_em_x86_64 || elf.e_machine == formats::k_em_aarch64))
    return std::nullopt;
  LibrarySlim r;
  r.size_before = r.size_after = size;
  const bool has_fat = elf.find(formats::k_nv_fatbin_section) != nullptr;
  r.outcome = has_fat ? SlimOutcome::left_untouched : SlimOutcome::no_device_code;
  if (has_fat)
    r.note = "a " + elf.machine + (elf.is_64 ? "" : " 32-bit") +
             " file; only 64-bit x86_64 and aarch64 are rewritten";
  return r;
}

// __nv_relfatbin: read only by a later device link, never slimmed; its targets stay, and
// are named.
Expected<void> account_relocatable(Bytes file, const formats::ElfFile& elf, LibrarySlim& r) {
  const auto* rel = elf.find(formats::k_nv_relfatbin_section);
  if (!rel) return {};
  r.relocatable_bytes = rel->size;
  TAILOR_TRY(rel_section, formats::section_bytes(file, *rel));
  TAILOR_TRY(rel_containers, formats::parse_fatbin_section(rel_section, rel->offset));
  for (const auto& c : rel_containers)
    for (const auto& e : c.entries)
      add_left(r.left, {cuda::fatbin_code(e).name(), LeftReason::relocatable, "",
                        e.header_size + e.stored_size, 1, cuda::fatbin_code(e)});
  return {};
}

// Chooses the entries of every .nv_fatbin container; returns the bytes removed. `why` gets
// the reason the containers may not move (empty when they may).
Expected<uint64_t> choose_in_fatbin(Bytes file, Plan& p, const KeepPolicy& policy,
                                    SlimAccount& account, LibrarySlim& r, std::string& why) {
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
  uint64_t removed = 0;
  for (size_t ci = 0; ci < p.containers.size(); ++ci) {
    const auto& c = p.containers[ci];
    uint64_t size = 0;
    auto choice = decide(
        c, policy,
        p.pinned_whole[ci] ? "a pointer other than a registration wrapper points inside it" : "",
        size);
    removed += account.add(c, choice, [&] {
      return c.entries.empty() ? std::string() : c.entries.front().identifier;
    });
    p.new_size.push_back(size);
    p.choices.push_back(std::move(choice));
  }
  return removed;
}

// Embedded containers: the same choice; they keep their address and are compacted in
// place (their entries read again, one container at a time). Returns the bytes removed.
Expected<uint64_t> choose_embedded(Bytes file, Plan& p, const KeepPolicy& policy,
                                   SlimAccount& account, LibrarySlim& r) {
  const std::string unreadable = mark_pointed_into(file, p);
  uint64_t removed_all = 0;
  for (auto& e : p.embedded) {
    TAILOR_TRY(c, read_embedded(file, e));
    const std::string whole = !unreadable.empty() ? "relocations unreadable (" + unreadable + ")"
                              : e.pointed_into ? "a relocation points inside it, not at its start"
                                               : "";
    auto choice = decide(c, policy, whole, e.new_size);
    auto& stats = r.embedded[e.scan];
    const uint64_t before = r.device_before, after = r.device_after;
    const uint64_t removed = account.add(c, choice, [&] {
      return p.elf.sections[e.section].name + fmt::format(" container at {:#x}", e.offset);
    });
    stats.device_before += r.device_before - before;
    stats.device_after += r.device_after - after;
    if (choice.whole) ++stats.containers_whole;
    e.changed = removed > 0;
    if (e.changed) ++stats.containers_changed;
    if (choice.no_code_for_kept) ++stats.containers_emptied;
    removed_all += removed;
  }
  return removed_all;
}

// Lays .nv_fatbin out again once entries left it: movable containers packed toward the
// start, a pinned one in its place (every container ends at or before where it ended, so
// none overlaps a pinned one), and the cut placed when the containers may move.
void lay_out_fatbin(Bytes file, Plan& p, const std::string& why, LibrarySlim& r) {
  p.fat_changed = true;
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
  if (!why.empty()) {
    r.note = "not shrunk on disk (" + why +
             "): entries compacted inside their containers, the rest zeroed";
    return;
  }
  place_cut(file, p);
  r.split = p.split;
  if (!p.delta())
    r.note = "the freed bytes do not span a whole aligned page range; zeroed, not cut";
  else if (r.containers_pinned)
    r.note = std::to_string(r.containers_pinned) + " container" +
             (r.containers_pinned == 1 ? "" : "s") + " kept " +
             (r.containers_pinned == 1 ? "its" : "their") +
             " address (named by code, not only by a registration wrapper): compacted in place, "
             "the rest packed";
}

}  // namespace

Expected<LibrarySlim> slim_elf(Bytes file, const KeepPolicy& policy, int out_fd,
                               bool file_is_mapped) {
  LibrarySlim r;
  r.size_before = r.size_after = file.size();
  Plan p;
  TAILOR_TRY(elf, formats::parse_elf(file));
  p.elf = std::move(elf);
  if (auto other = other_machine(p.elf, file.size())) return std::move(*other);
  TAILOR_TRY_VOID(account_relocatable(file, p.elf, r));
  if (auto fat = p.elf.find_index(formats::k_nv_fatbin_section)) {
    p.fat_index = *fat;
    p.fat = &p.elf.sections[*fat];
  }
  if (p.fat && (p.fat->type == formats::k_sht_nobits || !(p.fat->flags & formats::k_shf_alloc) ||
                p.fat->size == 0)) {
    r.outcome = SlimOutcome::left_untouched;
    r.note = ".nv_fatbin is not an allocated section with contents";
    return r;
  }
  bool too_many = false;
  TAILOR_TRY_VOID(find_embedded(file, p, r, file_is_mapped, too_many));
  if (!p.fat && p.embedded.empty() && !too_many) {
    r.outcome = r.relocatable_bytes ? SlimOutcome::unchanged : SlimOutcome::no_device_code;
    if (r.relocatable_bytes)
      r.note = "only relocatable device code (-rdc, __nv_relfatbin), left as is";
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
    return untouched("more than " + std::to_string(k_max_embedded_containers) +
                     " fatbin containers outside .nv_fatbin");
  auto segments = formats::read_segments(file, p.elf);
  if (!segments) return untouched(segments.error().message);
  p.phdrs = std::move(*segments);

  SlimAccount account(r, policy);
  uint64_t fat_removed = 0;
  std::string why;  // non-empty: .nv_fatbin's containers may not move
  if (p.fat) {
    TAILOR_TRY(removed, choose_in_fatbin(file, p, policy, account, r, why));
    fat_removed = removed;
  }
  TAILOR_TRY(embedded_removed, choose_embedded(file, p, policy, account, r));
  account.finish();
  if (fat_removed + embedded_removed == 0) {
    r.outcome = SlimOutcome::unchanged;
    return r;
  }
  r.outcome = SlimOutcome::slimmed;
  if (fat_removed) lay_out_fatbin(file, p, why, r);
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
