#include "formats/device_sections.h"

#include <algorithm>
#include <utility>

namespace tailor::formats {

bool is_device_section(std::string_view name) {
  return name == k_nv_fatbin_section || name == k_nv_relfatbin_section;
}

std::vector<size_t> embedded_scan_sections(const ElfFile& elf, uint64_t file_size) {
  std::vector<std::pair<uint64_t, uint64_t>> device;  // [start, end), by start
  std::vector<size_t> candidates;
  for (size_t i = 0; i < elf.sections.size(); ++i) {
    const ElfSection& s = elf.sections[i];
    if (s.size == 0 || s.offset > file_size || s.size > file_size - s.offset) continue;
    if (is_device_section(s))
      device.emplace_back(s.offset, s.offset + s.size);
    else if ((s.flags & k_shf_alloc) && s.type != k_sht_nobits)
      candidates.push_back(i);
  }
  std::sort(device.begin(), device.end());
  std::vector<uint64_t> max_end(device.size());  // the largest end among device[0..i]
  for (size_t i = 0; i < device.size(); ++i)
    max_end[i] = std::max(device[i].second, i ? max_end[i - 1] : 0);
  auto overlaps_device = [&](uint64_t begin, uint64_t end) {
    auto after =
        std::lower_bound(device.begin(), device.end(), std::pair<uint64_t, uint64_t>{end, 0});
    return after != device.begin() &&
           max_end[static_cast<size_t>(after - device.begin()) - 1] > begin;
  };
  std::stable_sort(candidates.begin(), candidates.end(), [&](size_t a, size_t b) {
    return elf.sections[a].offset < elf.sections[b].offset;
  });
  std::vector<size_t> out;
  uint64_t covered_to = 0;
  for (size_t i : candidates) {
    const ElfSection& s = elf.sections[i];
    const uint64_t end = s.offset + s.size;
    if (s.offset < covered_to || overlaps_device(s.offset, end)) continue;
    covered_to = end;
    out.push_back(i);
  }
  return out;
}

}  // namespace tailor::formats
