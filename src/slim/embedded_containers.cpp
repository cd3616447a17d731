// The containers a library keeps in its own allocated sections (found where inspect
// searches), which of them a relocation points inside, and reading one again.
#include <fmt/format.h>

#include <algorithm>

#include "formats/device_sections.h"
#include "slim/elf_surgery.h"
#include "slim/slim_output.h"

namespace tailor::slim::surgery {

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

std::string mark_pointed_into(Bytes file, Plan& p) {
  if (p.embedded.empty()) return "";
  std::vector<size_t> by_addr(p.embedded.size());
  for (size_t i = 0; i < by_addr.size(); ++i) by_addr[i] = i;
  std::sort(by_addr.begin(), by_addr.end(),
            [&](size_t a, size_t b) { return p.embedded[a].addr < p.embedded[b].addr; });
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

Expected<formats::FatbinContainer> read_embedded(Bytes file, const EmbeddedContainer& e) {
  TAILOR_TRY(containers, formats::parse_fatbin_section(file.subspan(e.offset, e.size), e.offset));
  if (containers.size() != 1)
    return make_error(
        fmt::format("internal: the embedded container at {:#x} reads differently", e.offset));
  return std::move(containers.front());
}

}  // namespace tailor::slim::surgery
