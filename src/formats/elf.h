// ELF reader for host libraries (x86_64, aarch64) and cubins (EM_CUDA), the one reader of
// ELF in tailor (inspect, probe and slim use it):
//  - parse_elf: the header, section headers, the dynamic section (DT_NEEDED, RUNPATH, RPATH,
//    SONAME), version needs (.gnu.version_r) and the x86 ISA property note. Section contents
//    other than the small string and version tables are never read, so a 456 MB library
//    costs a few pages;
//  - on request, over a parsed ELF64 file: the program headers (read_segments), relocation
//    tables (rela_table, relr_table) and symbol tables (symbol_table). The tables are views
//    over the file's bytes, checked once when made and read record by record, so a table
//    of millions of records costs no memory and its count is bounded by the file's size.
// The ELF constants tailor uses live here too, and the ELF64 layout facts that a rewriter
// (slim) needs to patch a file: record sizes, field offsets, encode_segments.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "util/byte_reader.h"
#include "util/expected.h"

namespace tailor::formats {

// ELF constants (the ELF specification, the x86_64 and aarch64 psABIs).
inline constexpr uint16_t k_et_exec = 2;  // e_type of a fixed-address executable
inline constexpr uint16_t k_em_x86_64 = 62, k_em_aarch64 = 183, k_em_cuda = 190;
inline constexpr uint32_t k_pt_load = 1, k_pt_phdr = 6;
inline constexpr uint32_t k_pf_x = 1;
inline constexpr uint32_t k_sht_progbits = 1, k_sht_symtab = 2, k_sht_strtab = 3, k_sht_rela = 4,
                          k_sht_dynamic = 6, k_sht_note = 7, k_sht_nobits = 8, k_sht_dynsym = 11,
                          k_sht_relr = 19, k_sht_gnu_verneed = 0x6ffffffe,
                          k_sht_gnu_verdef = 0x6ffffffd;
inline constexpr uint32_t k_pt_dynamic = 2;
// Dynamic tags (the ELF specification, the GNU extensions).
inline constexpr int64_t k_dt_null = 0, k_dt_needed = 1, k_dt_strtab = 5, k_dt_soname = 14,
                         k_dt_rpath = 15, k_dt_runpath = 29, k_dt_config = 0x6ffffefa,
                         k_dt_depaudit = 0x6ffffefb, k_dt_audit = 0x6ffffefc,
                         k_dt_auxiliary = 0x7ffffffd, k_dt_filter = 0x7fffffff;
inline constexpr uint64_t k_shf_write = 1, k_shf_alloc = 2, k_shf_execinstr = 4;
inline constexpr uint32_t k_r_x86_64_relative = 8, k_r_aarch64_relative = 1027;
// ELF64 record sizes, and the fields a rewriter patches (offsets inside their record).
inline constexpr uint64_t k_elf64_dyn_size = 16;
inline constexpr uint64_t k_elf64_phdr_size = 56, k_elf64_shdr_size = 64, k_elf64_rela_size = 24,
                          k_elf64_sym_size = 24, k_elf64_relr_size = 8;
inline constexpr uint64_t k_elf64_e_phoff = 0x20, k_elf64_e_shoff = 0x28, k_elf64_e_phnum = 0x38;
inline constexpr uint64_t k_elf64_sh_offset = 24, k_elf64_sh_size = 32;
inline constexpr uint64_t k_elf64_st_value = 8, k_elf64_st_size = 16;
inline constexpr uint64_t k_elf64_r_addend = 16;

struct ElfSection {
  std::string name;
  uint32_t type = 0;
  uint64_t flags = 0, offset = 0, size = 0, addr = 0;
  uint32_t link = 0, info = 0;  // sh_link (e.g. the string table), sh_info
  uint64_t addralign = 0, entsize = 0;
};

/// One Verneed record: the versions a library needs from one file.
struct ElfVersionNeed {
  std::string file;                   // "libc.so.6"
  std::vector<std::string> versions;  // "GLIBC_2.17", in file order
};

struct ElfFile {
  std::string machine;  // "x86_64", "aarch64", "cuda", or "em_<n>" for others
  uint16_t e_machine = 0;
  uint16_t e_type = 0;   // ET_DYN, ET_EXEC ...
  uint32_t e_flags = 0;  // processor-specific; a cubin's SM number (device_file.h reads it)
  uint8_t os_abi = 0, abi_version = 0;  // e_ident[EI_OSABI], e_ident[EI_ABIVERSION]
  bool is_64 = true;
  // Where the program and section header tables are (as the header says; read_segments
  // checks the program header table).
  uint64_t e_phoff = 0, e_shoff = 0;
  uint16_t e_phentsize = 0, e_phnum = 0;
  uint64_t shstrndx = 0;  // the section names' string table (SHN_XINDEX resolved); 0: none
  std::vector<ElfSection> sections;
  std::vector<std::string> needed;
  std::vector<std::string> runpath, rpath;  // split on ':'
  std::string soname;
  std::vector<ElfVersionNeed> version_needs;
  std::optional<uint32_t> x86_isa_needed;  // GNU_PROPERTY_X86_ISA_1_NEEDED bits

  /// The first section with this name, or nullptr.
  const ElfSection* find(std::string_view name) const;
  /// The index of the first section with this name.
  std::optional<size_t> find_index(std::string_view name) const;
};

/// Parses an ELF file (32- or 64-bit, little-endian). Every offset and size is checked
/// against the file; errors name the field and offset, e.g. "section header table at
/// 0x... runs past end of file (size 0x...)".
Expected<ElfFile> parse_elf(Bytes file);

/// True when the bytes start with the ELF magic.
bool looks_like_elf(Bytes file);

/// The section's bytes inside the file (empty for SHT_NOBITS), or an error naming it.
Expected<Bytes> section_bytes(Bytes file, const ElfSection& section);

// ---- Program headers (ELF64) ----

struct ElfSegment {
  uint32_t type = 0, flags = 0;  // p_type (PT_LOAD ...), p_flags (PF_X ...)
  uint64_t offset = 0, vaddr = 0, paddr = 0, filesz = 0, memsz = 0, align = 0;
  bool operator==(const ElfSegment&) const = default;
};

/// The program header table of a parsed ELF64 file, in file order; empty when e_phnum is 0.
/// Errors: an ELF32 file, an e_phentsize other than 56, extended numbering (PN_XNUM), a
/// table that runs past the end of the file. The segments themselves are not checked
/// against the file (a rewriter copies them as they are); file_offset_of looks through them.
Expected<std::vector<ElfSegment>> read_segments(Bytes file, const ElfFile& elf);

/// The segments as an ELF64 program header table (56 bytes each): what read_segments read.
std::vector<std::byte> encode_segments(std::span<const ElfSegment> segments);

/// The file offset of [vaddr, vaddr + size), through the first PT_LOAD that maps all of it
/// from the file (inside its p_filesz); nullopt when none does. The offset may still lie
/// past the end of a damaged file: read it with read_le.
std::optional<uint64_t> file_offset_of(std::span<const ElfSegment> segments, uint64_t vaddr,
                                       uint64_t size);

// ---- Relocation tables (ELF64) ----

/// One Elf64_Rela record.
struct ElfRela {
  uint64_t at = 0;      // the record's file offset (r_addend is at at + k_elf64_r_addend)
  uint64_t place = 0;   // r_offset: the address relocated
  uint64_t info = 0;    // r_info: symbol << 32 | type
  uint64_t addend = 0;  // r_addend's bits (signed in the ELF spec; for RELATIVE, an address)
  uint32_t type() const { return static_cast<uint32_t>(info); }
  uint32_t symbol() const { return static_cast<uint32_t>(info >> 32); }
};

/// An SHT_RELA section's records, read one at a time.
class ElfRelaTable {
 public:
  uint64_t size() const { return m_records.size() / k_elf64_rela_size; }
  ElfRela operator[](uint64_t i) const;  // i < size()

 private:
  friend Expected<ElfRelaTable> rela_table(Bytes file, const ElfFile& elf,
                                           const ElfSection& section);
  ElfRelaTable(Bytes records, uint64_t offset) : m_records(records), m_offset(offset) {}
  Bytes m_records;    // whole records, inside the file
  uint64_t m_offset;  // their file offset
};

/// The records of an SHT_RELA section of a parsed ELF64 file. Errors: not ELF64, not
/// SHT_RELA, past the end of the file, a size that is not whole 24-byte records.
Expected<ElfRelaTable> rela_table(Bytes file, const ElfFile& elf, const ElfSection& section);

/// An SHT_RELR section (packed relative relocations): an address word (even), then bitmap
/// words (odd) for the next 63 words each.
class ElfRelrTable {
 public:
  uint64_t words() const { return m_words.size() / k_elf64_relr_size; }
  /// Calls note(address) for every word the table relocates, in table order: at most 63
  /// calls per word of the table.
  template <typename F>
  void for_each_place(F&& note) const {
    uint64_t where = 0;
    for (uint64_t at = 0; at < m_words.size(); at += k_elf64_relr_size) {
      const uint64_t w = *read_le<uint64_t>(m_words, at);
      if ((w & 1) == 0) {
        note(w);
        where = w + 8;
      } else {
        uint64_t bits = w >> 1;
        for (uint64_t i = 0; bits != 0; ++i, bits >>= 1)
          if (bits & 1) note(where + i * 8);
        where += 63 * 8;
      }
    }
  }

 private:
  friend Expected<ElfRelrTable> relr_table(Bytes file, const ElfFile& elf,
                                           const ElfSection& section);
  explicit ElfRelrTable(Bytes words) : m_words(words) {}
  Bytes m_words;  // whole words, inside the file
};

/// The words of an SHT_RELR section of a parsed ELF64 file. Errors: not ELF64, not
/// SHT_RELR, past the end of the file, a size that is not whole 8-byte words.
Expected<ElfRelrTable> relr_table(Bytes file, const ElfFile& elf, const ElfSection& section);

// ---- Symbol tables (ELF64) ----

/// One Elf64_Sym record.
struct ElfSymbol {
  uint64_t at = 0;    // the record's file offset (st_value at at + k_elf64_st_value ...)
  uint32_t name = 0;  // st_name: offset into the linked string table
  uint8_t info = 0, other = 0;
  uint16_t shndx = 0;  // st_shndx: the section it is defined in (or SHN_UNDEF, SHN_ABS ...)
  uint64_t value = 0, size = 0;
};

/// An SHT_SYMTAB or SHT_DYNSYM section's records, read one at a time; names are looked up
/// in the linked string table only when asked for.
class ElfSymbolTable {
 public:
  uint64_t size() const { return m_records.size() / k_elf64_sym_size; }
  ElfSymbol operator[](uint64_t i) const;  // i < size()
  /// The symbol's name (a view into the file, at most 4 KiB). Errors: the table's sh_link
  /// names no string table inside the file, the offset lies outside it, the name is not
  /// NUL-terminated inside it or is longer than 4 KiB.
  Expected<std::string_view> name(const ElfSymbol& symbol) const;

 private:
  friend Expected<ElfSymbolTable> symbol_table(Bytes file, const ElfFile& elf,
                                               const ElfSection& section);
  ElfSymbolTable(Bytes file, Bytes records, uint64_t offset, std::string section,
                 std::optional<ElfSection> strings, uint32_t link)
      : m_file(file),
        m_records(records),
        m_offset(offset),
        m_section(std::move(section)),
        m_strings(std::move(strings)),
        m_link(link) {}
  Bytes m_file;
  Bytes m_records;  // whole records, inside the file
  uint64_t m_offset;
  std::string m_section;                // for errors
  std::optional<ElfSection> m_strings;  // the section sh_link names, when it exists
  uint32_t m_link;
};

// ---- The dynamic array and what names a string table (ELF64) ----

/// One entry of the dynamic array: its place, d_tag and d_val.
struct ElfDynamicEntry {
  uint64_t index = 0;
  int64_t tag = 0;
  uint64_t value = 0;
};
/// The entries of an ELF64 SHT_DYNAMIC section's bytes up to DT_NULL, and where DT_NULL is
/// (nullopt: none).
std::vector<ElfDynamicEntry> dynamic_entries(Bytes dynamic, std::optional<uint64_t>& null_at);
/// Whether a dynamic tag's value is an offset into the dynamic string table.
bool dynamic_tag_names_a_string(int64_t tag);

/// The offsets into string table `strtab_index` that the symbol and version (GNU verneed,
/// verdef) tables linked to it name; the walk over version records is bounded by the
/// section's size. An error for a linked section of another type, whose names are not read.
Expected<std::vector<uint64_t>> string_table_references(Bytes file, const ElfFile& elf,
                                                        uint32_t strtab_index);

/// The records of an SHT_SYMTAB/SHT_DYNSYM section of a parsed ELF64 file. Errors: not
/// ELF64, another section type, past the end of the file, a size that is not whole 24-byte
/// records. The string table is checked by name(), so a table whose names are damaged still
/// gives its records.
Expected<ElfSymbolTable> symbol_table(Bytes file, const ElfFile& elf, const ElfSection& section);

}  // namespace tailor::formats
