// ELF reader for host libraries (x86_64, aarch64) and cubins (EM_CUDA): section headers,
// the dynamic section (DT_NEEDED, RUNPATH, RPATH, SONAME), version needs (.gnu.version_r)
// and the x86 ISA property note. Headers only: section contents other than the small
// string and version tables are never read, so a 456 MB library costs a few pages.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/byte_reader.h"
#include "util/expected.h"

namespace tailor::formats {

struct ElfSection {
  std::string name;
  uint32_t type = 0;
  uint64_t flags = 0, offset = 0, size = 0, addr = 0;
  uint32_t link = 0, info = 0;  // sh_link (e.g. the string table), sh_info
};

/// One Verneed record: the versions a library needs from one file.
struct ElfVersionNeed {
  std::string file;                   // "libc.so.6"
  std::vector<std::string> versions;  // "GLIBC_2.17", in file order
};

struct ElfFile {
  std::string machine;  // "x86_64", "aarch64", "cuda", or "em_<n>" for others
  uint16_t e_machine = 0;
  bool is_64 = true;
  std::vector<ElfSection> sections;
  std::vector<std::string> needed;
  std::vector<std::string> runpath, rpath;  // split on ':'
  std::string soname;
  std::vector<ElfVersionNeed> version_needs;
  std::optional<uint32_t> x86_isa_needed;  // GNU_PROPERTY_X86_ISA_1_NEEDED bits

  /// The first section with this name, or nullptr.
  const ElfSection* find(std::string_view name) const;
};

/// Parses an ELF file (32- or 64-bit, little-endian). Every offset and size is checked
/// against the file; errors name the field and offset, e.g. "section header table at
/// 0x... runs past end of file (size 0x...)".
Expected<ElfFile> parse_elf(Bytes file);

/// True when the bytes start with the ELF magic.
bool looks_like_elf(Bytes file);

/// The section's bytes inside the file (empty for SHT_NOBITS), or an error naming it.
Expected<Bytes> section_bytes(Bytes file, const ElfSection& section);

}  // namespace tailor::formats
