// Where CUDA device code lies in an ELF file: the sections nvcc gives it, and the other
// sections a library may keep fatbin containers in. One rule for inspect (what it counts)
// and slim (what it chooses from), so that what one reports is what the other cuts.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "formats/elf.h"

namespace tailor::formats {

/// Whole-program device code (what the CUDA runtime registers) and the relocatable device
/// code that -rdc builds keep for the device linker.
inline constexpr std::string_view k_nv_fatbin_section = ".nv_fatbin";
inline constexpr std::string_view k_nv_relfatbin_section = "__nv_relfatbin";

/// Whether a section is one of nvcc's device code sections (by its name).
bool is_device_section(std::string_view name);
inline bool is_device_section(const ElfSection& s) { return is_device_section(s.name); }

/// The sections searched for embedded fatbin containers (for_each_embedded_fatbin), as
/// indices into elf.sections in file order: allocated (SHF_ALLOC), with file bytes
/// (not SHT_NOBITS, size > 0, inside `file_size`), not a device section, and overlapping
/// neither a device section nor an earlier searched one, so that many headers naming one
/// range cannot multiply the search and no container is counted twice. A section past the
/// file's end is skipped, not an error. At most one index per section header; what the
/// callers keep of the scan is theirs to bound.
std::vector<size_t> embedded_scan_sections(const ElfFile& elf, uint64_t file_size);

}  // namespace tailor::formats
