#include "formats/elf_search_path.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "formats/elf.h"
#include "util/byte_reader.h"

namespace tailor::formats {
namespace {

// A search path string longer than this is no real library's.
constexpr uint64_t k_max_search_path = 64 * 1024;

std::vector<std::string> split_entries(std::string_view s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t colon = s.find(':', start);
    if (colon == std::string_view::npos) colon = s.size();
    out.emplace_back(s.substr(start, colon - start));
    start = colon + 1;
  }
  return out;
}

std::string tag_name(int64_t tag) { return tag == k_dt_runpath ? "RUNPATH" : "RPATH"; }

// What each search path keeps: the edits (only those that change something) and the
// dynamic entries they edit, in the same order.
struct PlannedEdits {
  std::vector<SearchPathEdit> edits;
  std::vector<ElfDynamicEntry> edited;
  bool runpath_removed = false, rpath_kept = false;
};

Expected<PlannedEdits> plan_edits(const std::vector<ElfDynamicEntry>& entries, Bytes strs,
                                  const ElfSection& strtab,
                                  const std::function<bool(std::string_view)>& keep) {
  PlannedEdits p;
  for (const auto& e : entries) {
    if (e.tag != k_dt_runpath && e.tag != k_dt_rpath) continue;
    if (e.value >= strs.size())
      return make_error(
          fmt::format("DT_{} names an offset outside {}", tag_name(e.tag), strtab.name));
    auto rest = as_chars(strs.subspan(e.value));
    auto end = rest.substr(0, k_max_search_path + 1).find('\0');
    if (end == std::string_view::npos)
      return make_error(fmt::format("DT_{} is not NUL-terminated within {} bytes", tag_name(e.tag),
                                    k_max_search_path));
    SearchPathEdit edit;
    edit.tag = tag_name(e.tag);
    edit.before = std::string(rest.substr(0, end));
    std::vector<std::string> kept;
    bool empty_entry = false;
    for (auto& entry : split_entries(edit.before)) {
      if (entry.empty())
        empty_entry = true;
      else if (keep(entry))
        kept.push_back(entry);
      else
        edit.removed.push_back(entry);
    }
    for (size_t i = 0; i < kept.size(); ++i) edit.after += (i ? ":" : "") + kept[i];
    if (e.tag == k_dt_runpath && kept.empty()) p.runpath_removed = true;
    if (e.tag == k_dt_rpath && !kept.empty()) p.rpath_kept = true;
    if (edit.removed.empty() && !empty_entry) continue;
    p.edits.push_back(std::move(edit));
    p.edited.push_back(e);
  }
  return p;
}

// Which edited strings are written: every other name of the string table (the version
// records', the dynamic entries', the section names' when the table is also e_shstrndx)
// must lie outside a string that is rewritten. A shared string that would keep entries is
// an error; one whose entry goes keeps its bytes for the other name.
Expected<std::vector<bool>> strings_to_write(Bytes view, const ElfFile& elf, uint32_t strtab_index,
                                             Bytes strs,
                                             const std::vector<ElfDynamicEntry>& entries,
                                             const PlannedEdits& p) {
  TAILOR_TRY(refs, string_table_references(view, elf, strtab_index));
  if (elf.shstrndx == strtab_index)
    for (size_t i = 0; i < elf.sections.size(); ++i) {
      auto name = read_le<uint32_t>(view, elf.e_shoff + i * k_elf64_shdr_size);
      if (!name) return make_error("the section header table runs past the end of the file");
      refs.push_back(*name);
    }
  std::vector<uint64_t> edited_values;
  for (const auto& e : p.edited) edited_values.push_back(e.value);
  for (const auto& e : entries)
    if (dynamic_tag_names_a_string(e.tag) &&
        std::find(edited_values.begin(), edited_values.end(), e.value) == edited_values.end())
      refs.push_back(e.value);
  std::vector<bool> write_string(p.edits.size(), true);
  for (size_t i = 0; i < p.edits.size(); ++i) {
    const uint64_t begin = p.edited[i].value, end = begin + p.edits[i].before.size();
    // Two edited entries naming one string (RPATH and RUNPATH both, as old linkers wrote
    // them) get the same text; one inside the other is a shared string.
    // A string that does not follow a NUL is the tail of a longer one.
    bool shared =
        (begin > 0 && strs[begin - 1] != std::byte{0}) ||
        std::any_of(refs.begin(), refs.end(), [&](uint64_t r) { return r >= begin && r < end; }) ||
        std::any_of(p.edited.begin(), p.edited.end(), [&](const ElfDynamicEntry& o) {
          return o.value != begin && o.value >= begin && o.value < end;
        });
    if (!shared) continue;
    if (!p.edits[i].after.empty())
      return make_error(fmt::format(
          "the DT_{} string shares its bytes with another name of {}: not rewritten in place",
          p.edits[i].tag, elf.sections[strtab_index].name));
    write_string[i] = false;  // the entry goes; the bytes stay for the other name
  }
  return write_string;
}

// Writes the strings, then the dynamic array without the removed entries (DT_NULL moved up).
void write_edits(std::span<std::byte> file, const ElfSection& strtab, const ElfSection& dyn,
                 const std::vector<ElfDynamicEntry>& entries, uint64_t null_at,
                 const PlannedEdits& p, const std::vector<bool>& write_string) {
  for (size_t i = 0; i < p.edits.size(); ++i) {
    if (!write_string[i]) continue;
    std::byte* at = file.data() + strtab.offset + p.edited[i].value;
    std::memset(at, 0, p.edits[i].before.size());
    std::memcpy(at, p.edits[i].after.data(), p.edits[i].after.size());
  }
  std::vector<ElfDynamicEntry> remaining;
  for (const auto& e : entries) {
    bool removed = false;
    for (size_t i = 0; i < p.edits.size(); ++i)
      if (p.edited[i].index == e.index && p.edits[i].after.empty()) removed = true;
    if (!removed) remaining.push_back(e);
  }
  if (remaining.size() == entries.size()) return;
  std::byte* base = file.data() + dyn.offset;
  for (uint64_t i = 0; i <= null_at; ++i) {
    int64_t tag = i < remaining.size() ? remaining[i].tag : k_dt_null;
    uint64_t value = i < remaining.size() ? remaining[i].value : 0;
    std::memcpy(base + i * k_elf64_dyn_size, &tag, sizeof tag);
    std::memcpy(base + i * k_elf64_dyn_size + 8, &value, sizeof value);
  }
}

}  // namespace

Expected<std::vector<SearchPathEdit>> rewrite_search_paths(
    std::span<std::byte> file, const std::function<bool(std::string_view)>& keep) {
  const Bytes view(file.data(), file.size());
  TAILOR_TRY(elf, parse_elf(view));
  if (elf.runpath.empty() && elf.rpath.empty()) return std::vector<SearchPathEdit>{};
  auto dyn_it = std::find_if(elf.sections.begin(), elf.sections.end(),
                             [](const ElfSection& s) { return s.type == k_sht_dynamic; });
  if (dyn_it == elf.sections.end()) return std::vector<SearchPathEdit>{};
  const ElfSection& dyn = *dyn_it;
  auto dyn_bytes = strict_substr(view, dyn.offset, dyn.size);
  if (!dyn_bytes || dyn.link >= elf.sections.size())
    return make_error("section " + dyn.name + " or its string table lies outside the file");
  const uint32_t strtab_index = dyn.link;
  const ElfSection& strtab = elf.sections[strtab_index];
  auto strs = strict_substr(view, strtab.offset, strtab.size);
  if (!strs || strtab.type == k_sht_nobits)
    return make_error("section " + strtab.name + " lies outside the file");

  std::optional<uint64_t> null_at;
  const std::vector<ElfDynamicEntry> entries = dynamic_entries(*dyn_bytes, null_at);
  TAILOR_TRY(planned, plan_edits(entries, *strs, strtab, keep));
  if (planned.edits.empty()) return std::move(planned.edits);

  // Checks before the first byte is written.
  if (!elf.is_64) return make_error("an ELF32 file: its search path is not rewritten");
  if (!null_at) return make_error("section " + dyn.name + " has no DT_NULL at its end");
  if (planned.runpath_removed && planned.rpath_kept)
    return make_error(
        "removing DT_RUNPATH would make the loader read DT_RPATH, which keeps other folders");
  if (auto strtab_tag = std::find_if(entries.begin(), entries.end(),
                                     [](const ElfDynamicEntry& e) { return e.tag == k_dt_strtab; });
      strtab_tag == entries.end() || strtab_tag->value != strtab.addr)
    return make_error("DT_STRTAB does not name section " + strtab.name +
                      ": the loader reads another string table");
  TAILOR_TRY(segments, read_segments(view, elf));
  auto pt_dynamic = std::find_if(segments.begin(), segments.end(),
                                 [](const ElfSegment& s) { return s.type == k_pt_dynamic; });
  if (pt_dynamic == segments.end() || pt_dynamic->offset != dyn.offset)
    return make_error("PT_DYNAMIC does not name section " + dyn.name +
                      ": the loader reads another dynamic array");
  TAILOR_TRY(write_string, strings_to_write(view, elf, strtab_index, *strs, entries, planned));
  write_edits(file, strtab, dyn, entries, *null_at, planned, write_string);
  return std::move(planned.edits);
}

}  // namespace tailor::formats
