#include "formats/elf.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <initializer_list>
#include <optional>

#include "util/strings.h"

namespace tailor::formats {
namespace {

constexpr uint16_t k_shn_xindex = 0xffff;
constexpr uint32_t k_nt_gnu_property_type_0 = 5;
constexpr uint32_t k_gnu_property_x86_isa_1_needed = 0xc0008002;
// A version-needs table or note larger than this is hostile, not a real library.
constexpr uint64_t k_max_small_table = 64ull << 20;
// Bounds on what one file may make us keep, so that many records naming one long string
// cannot turn a small file into gigabytes. Real libraries (libtorch_cuda.so included) use
// a few KiB of names, tens of sections and tens of DT_NEEDED entries.
//  - a name (DT_NEEDED, SONAME, one RUNPATH/RPATH entry, a version or its file) longer
//    than k_max_name is an error; a section name longer than that is cut to k_max_name
//    (section names are only compared with short known names and echoed in errors);
//  - a whole RUNPATH/RPATH string is at most k_max_path_list;
//  - at most k_max_sections sections, k_max_needed DT_NEEDED entries, k_max_version_files
//    version-need files and k_max_versions versions in all: beyond, an error;
//  - every kept string costs its length plus k_string_overhead against k_max_string_bytes
//    per file: beyond, an error.
constexpr uint64_t k_max_name = 4096;
constexpr uint64_t k_max_path_list = 64 * 1024;
constexpr uint64_t k_max_sections = 65536;
constexpr uint64_t k_max_needed = 4096;
constexpr uint64_t k_max_version_files = 4096;
constexpr uint64_t k_max_versions = 65536;
constexpr uint64_t k_string_overhead = 32;
constexpr uint64_t k_max_string_bytes = 4ull << 20;

std::string machine_name(uint16_t m) {
  // ELF format constants (the ELF specification's e_machine values), not policy.
  switch (m) {
    case k_em_x86_64:
      return "x86_64";
    case k_em_aarch64:
      return "aarch64";
    case k_em_cuda:
      return "cuda";
    case 3:
      return "i386";
    case 40:
      return "arm";
    case 21:
      return "ppc64";
    case 22:
      return "s390x";
    case 243:
      return "riscv";
    default:
      return "em_" + std::to_string(m);
  }
}

// The per-file allowance of kept string bytes (see k_max_string_bytes).
class StringBudget {
 public:
  Expected<void> charge(uint64_t length, const std::string& what, uint64_t offset) {
    m_used += length + k_string_overhead;
    if (m_used <= k_max_string_bytes) return {};
    return make_error(what + " at " + hex_number(offset) +
                      ": the names this file lists (sections, needed libraries, " +
                      "version needs) exceed " + std::to_string(k_max_string_bytes >> 20) +
                      " MiB, far beyond any real library");
  }

 private:
  uint64_t m_used = 0;
};

enum class LongName { error, truncate };

// Field reader over the whole file that turns a short read into an error naming the field.
class Reader {
 public:
  Reader(Bytes file, bool is_64) : m_file(file), m_64(is_64) {}
  template <typename T>
  Expected<T> get(uint64_t offset, const char* field) const {
    auto v = read_le<T>(m_file, offset);
    if (!v) return past_end(field, offset, sizeof(T));
    return *v;
  }
  // A 4-byte field in ELF32 or an 8-byte one in ELF64 (addresses, offsets, sizes).
  Expected<uint64_t> word(uint64_t offset, const char* field) const {
    if (m_64) return get<uint64_t>(offset, field);
    auto v = get<uint32_t>(offset, field);
    if (!v) return v.error();
    return uint64_t{*v};
  }
  Error past_end(const std::string& what, uint64_t offset, uint64_t size) const {
    return make_error(what + " at " + hex_number(offset) + " (" + hex_number(size) +
                      " bytes) runs past end of file (size " + hex_number(m_file.size()) + ")");
  }
  bool is_64() const { return m_64; }
  Bytes file() const { return m_file; }

 private:
  Bytes m_file;
  bool m_64;
};

// A NUL-terminated string at offset inside a string table, as a view into the table.
// At most max_length bytes are looked at: a longer name is an error or is cut (`long_name`).
Expected<std::string_view> table_string_view(Bytes table, uint64_t table_offset, uint64_t index,
                                             std::string_view what,
                                             uint64_t max_length = k_max_name,
                                             LongName long_name = LongName::error) {
  if (index >= table.size())
    return make_error(std::string(what) + " name offset " + hex_number(index) +
                      " lies outside its string table at " + hex_number(table_offset) + " (size " +
                      hex_number(table.size()) + ")");
  auto rest = as_chars(table.subspan(index));
  auto window = rest.substr(0, max_length + 1);
  auto end = window.find('\0');
  if (end == std::string_view::npos && window.size() > max_length) {
    if (long_name == LongName::truncate) return window.substr(0, max_length);
    return make_error(std::string(what) + " name at " + hex_number(table_offset + index) +
                      " is longer than " + std::to_string(max_length) + " bytes");
  }
  if (end == std::string_view::npos)
    return make_error(std::string(what) + " name at " + hex_number(table_offset + index) +
                      " is not NUL-terminated inside its string table");
  return rest.substr(0, end);
}

Expected<std::string> table_string(Bytes table, uint64_t table_offset, uint64_t index,
                                   std::string_view what, uint64_t max_length = k_max_name,
                                   LongName long_name = LongName::error) {
  TAILOR_TRY(view, table_string_view(table, table_offset, index, what, max_length, long_name));
  return std::string(view);
}

Expected<std::vector<ElfSection>> read_sections(const Reader& r, std::string& error_ctx,
                                                StringBudget& budget, uint64_t& shstrndx_out) {
  const bool b64 = r.is_64();
  TAILOR_TRY(shoff, r.word(b64 ? 0x28 : 0x20, "e_shoff"));
  TAILOR_TRY(shentsize, r.get<uint16_t>(b64 ? 0x3a : 0x2e, "e_shentsize"));
  TAILOR_TRY(shnum16, r.get<uint16_t>(b64 ? 0x3c : 0x30, "e_shnum"));
  TAILOR_TRY(shstrndx16, r.get<uint16_t>(b64 ? 0x3e : 0x32, "e_shstrndx"));
  std::vector<ElfSection> sections;
  if (shoff == 0) return sections;  // no section header table (allowed by the spec)
  const uint64_t want_entsize = b64 ? 64 : 40;
  if (shentsize != want_entsize)
    return make_error("e_shentsize at " + hex_number(b64 ? 0x3a : 0x2e) + " is " +
                      hex_number(shentsize) + ", expected " + hex_number(want_entsize));
  // Section 0 carries the real count and string index when they do not fit 16 bits.
  uint64_t shnum = shnum16;
  uint64_t shstrndx = shstrndx16;
  if (shnum == 0 || shstrndx == k_shn_xindex) {
    TAILOR_TRY(size0, r.word(shoff + (b64 ? 32 : 20), "section 0 sh_size"));
    TAILOR_TRY(link0, r.get<uint32_t>(shoff + (b64 ? 40 : 24), "section 0 sh_link"));
    if (shnum == 0) shnum = size0;
    if (shstrndx == k_shn_xindex) shstrndx = link0;
  }
  if (shnum > r.file().size() / want_entsize ||
      !strict_substr(r.file(), shoff, shnum * want_entsize))
    return r.past_end("section header table", shoff, shnum * want_entsize);
  if (shnum > k_max_sections)
    return make_error("section header table at " + hex_number(shoff) + ": " +
                      std::to_string(shnum) + " sections, more than the " +
                      std::to_string(k_max_sections) + " tailor reads");
  sections.reserve(shnum);
  std::vector<uint32_t> name_index(shnum);
  for (uint64_t i = 0; i < shnum; ++i) {
    const uint64_t h = shoff + i * want_entsize;
    ElfSection s;
    name_index[i] = *read_le<uint32_t>(r.file(), h);
    s.type = *read_le<uint32_t>(r.file(), h + 4);
    if (b64) {
      s.flags = *read_le<uint64_t>(r.file(), h + 8);
      s.addr = *read_le<uint64_t>(r.file(), h + 16);
      s.offset = *read_le<uint64_t>(r.file(), h + 24);
      s.size = *read_le<uint64_t>(r.file(), h + 32);
      s.link = *read_le<uint32_t>(r.file(), h + 40);
      s.info = *read_le<uint32_t>(r.file(), h + 44);
      s.addralign = *read_le<uint64_t>(r.file(), h + 48);
      s.entsize = *read_le<uint64_t>(r.file(), h + 56);
    } else {
      s.flags = *read_le<uint32_t>(r.file(), h + 8);
      s.addr = *read_le<uint32_t>(r.file(), h + 12);
      s.offset = *read_le<uint32_t>(r.file(), h + 16);
      s.size = *read_le<uint32_t>(r.file(), h + 20);
      s.link = *read_le<uint32_t>(r.file(), h + 24);
      s.info = *read_le<uint32_t>(r.file(), h + 28);
      s.addralign = *read_le<uint32_t>(r.file(), h + 32);
      s.entsize = *read_le<uint32_t>(r.file(), h + 36);
    }
    sections.push_back(std::move(s));
  }
  shstrndx_out = shstrndx;
  if (shstrndx != 0) {
    if (shstrndx >= shnum)
      return make_error("e_shstrndx " + std::to_string(shstrndx) + " is not below the " +
                        std::to_string(shnum) + " sections");
    const ElfSection& strtab = sections[shstrndx];
    auto bytes = strict_substr(r.file(), strtab.offset, strtab.size);
    if (!bytes || strtab.type == k_sht_nobits)
      return r.past_end("section name table", strtab.offset, strtab.size);
    for (uint64_t i = 0; i < shnum; ++i) {
      error_ctx = "section " + std::to_string(i);
      TAILOR_TRY(name, table_string(*bytes, strtab.offset, name_index[i], error_ctx.c_str(),
                                    k_max_name, LongName::truncate));
      if (auto b = budget.charge(name.size(), error_ctx + " name", strtab.offset + name_index[i]);
          !b)
        return b.error();
      sections[i].name = std::move(name);
    }
  }
  return sections;
}

// DT_NEEDED, DT_SONAME, DT_RPATH, DT_RUNPATH from the SHT_DYNAMIC section.
Expected<void> read_dynamic(const Reader& r, ElfFile& elf, StringBudget& budget) {
  for (const ElfSection& dyn : elf.sections) {
    if (dyn.type != k_sht_dynamic) continue;
    auto bytes = strict_substr(r.file(), dyn.offset, dyn.size);
    if (!bytes) return r.past_end("section " + dyn.name, dyn.offset, dyn.size);
    if (dyn.link >= elf.sections.size())
      return make_error("section " + dyn.name + " links to string table " +
                        std::to_string(dyn.link) + " which does not exist");
    const ElfSection& strtab = elf.sections[dyn.link];
    auto strs = strict_substr(r.file(), strtab.offset, strtab.size);
    if (!strs || strtab.type == k_sht_nobits)
      return r.past_end("section " + strtab.name, strtab.offset, strtab.size);
    const uint64_t ent = r.is_64() ? 16 : 8;
    for (uint64_t p = 0; p + ent <= bytes->size(); p += ent) {
      int64_t tag = r.is_64() ? *read_le<int64_t>(*bytes, p) : *read_le<int32_t>(*bytes, p);
      uint64_t val =
          r.is_64() ? *read_le<uint64_t>(*bytes, p + 8) : *read_le<uint32_t>(*bytes, p + 4);
      if (tag == k_dt_null) break;
      if (tag != k_dt_needed && tag != k_dt_soname && tag != k_dt_rpath && tag != k_dt_runpath)
        continue;
      const bool path_list = tag == k_dt_rpath || tag == k_dt_runpath;
      const char* what = tag == k_dt_needed   ? "DT_NEEDED"
                         : tag == k_dt_soname ? "DT_SONAME"
                         : tag == k_dt_rpath  ? "DT_RPATH"
                                              : "DT_RUNPATH";
      TAILOR_TRY(s, table_string(*strs, strtab.offset, val, what,
                                 path_list ? k_max_path_list : k_max_name));
      if (auto b = budget.charge(s.size(), std::string(what) + " entry", dyn.offset + p); !b)
        return b.error();
      if (tag == k_dt_needed && elf.needed.size() == k_max_needed)
        return make_error("section " + dyn.name + " at " + hex_number(dyn.offset) + ": more than " +
                          std::to_string(k_max_needed) + " DT_NEEDED entries");
      if (tag == k_dt_needed)
        elf.needed.push_back(std::move(s));
      else if (tag == k_dt_soname)
        elf.soname = std::move(s);
      else {
        auto& list = tag == k_dt_rpath ? elf.rpath : elf.runpath;
        size_t start = 0;
        while (start <= s.size()) {
          size_t colon = s.find(':', start);
          if (colon == std::string::npos) colon = s.size();
          if (colon - start > k_max_name)
            return make_error(std::string(what) + " at " + hex_number(dyn.offset + p) +
                              ": an entry is longer than " + std::to_string(k_max_name) + " bytes");
          if (colon > start) {
            if (auto b = budget.charge(0, std::string(what) + " entry", dyn.offset + p); !b)
              return b.error();
            list.push_back(s.substr(start, colon - start));
          }
          start = colon + 1;
        }
      }
    }
    break;  // one dynamic section per file
  }
  return {};
}

// Verneed records (SHT_GNU_verneed): the symbol versions needed from each library.
Expected<void> read_version_needs(const Reader& r, ElfFile& elf, StringBudget& budget) {
  uint64_t versions = 0;
  for (const ElfSection& vr : elf.sections) {
    if (vr.type != k_sht_gnu_verneed) continue;
    if (vr.size > k_max_small_table) return r.past_end("section " + vr.name, vr.offset, vr.size);
    auto bytes = strict_substr(r.file(), vr.offset, vr.size);
    if (!bytes) return r.past_end("section " + vr.name, vr.offset, vr.size);
    if (vr.link >= elf.sections.size())
      return make_error("section " + vr.name + " links to string table " + std::to_string(vr.link) +
                        " which does not exist");
    const ElfSection& strtab = elf.sections[vr.link];
    auto strs = strict_substr(r.file(), strtab.offset, strtab.size);
    if (!strs || strtab.type == k_sht_nobits)
      return r.past_end("section " + strtab.name, strtab.offset, strtab.size);
    // Each record is at least 16 bytes, so no more than size/16 of either kind can be
    // real: this bounds the walk even when vn_next/vna_next point backwards.
    uint64_t steps = bytes->size() / 16 + 1;
    uint64_t pos = 0;
    for (uint32_t n = 0; n < vr.info; ++n) {
      if (steps-- == 0)
        return make_error("section " + vr.name + " at " + hex_number(vr.offset) +
                          ": version need records loop");
      auto cnt = read_le<uint16_t>(*bytes, pos + 2);
      auto file = read_le<uint32_t>(*bytes, pos + 4);
      auto aux = read_le<uint32_t>(*bytes, pos + 8);
      auto next = read_le<uint32_t>(*bytes, pos + 12);
      if (!cnt || !file || !aux || !next)
        return r.past_end("version need record", vr.offset + pos, 16);
      ElfVersionNeed need;
      TAILOR_TRY(fname, table_string(*strs, strtab.offset, *file, "version need file"));
      if (auto b = budget.charge(fname.size(), "version need record", vr.offset + pos); !b)
        return b.error();
      if (elf.version_needs.size() == k_max_version_files)
        return make_error("section " + vr.name + " at " + hex_number(vr.offset) + ": more than " +
                          std::to_string(k_max_version_files) + " version need records");
      need.file = std::move(fname);
      uint64_t apos = pos + *aux;
      for (uint16_t k = 0; k < *cnt; ++k) {
        if (steps-- == 0)
          return make_error("section " + vr.name + " at " + hex_number(vr.offset) +
                            ": version need records loop");
        auto name = read_le<uint32_t>(*bytes, apos + 8);
        auto anext = read_le<uint32_t>(*bytes, apos + 12);
        if (!name || !anext) return r.past_end("version need aux record", vr.offset + apos, 16);
        TAILOR_TRY(vname, table_string(*strs, strtab.offset, *name, "version need"));
        if (auto b = budget.charge(vname.size(), "version need aux record", vr.offset + apos); !b)
          return b.error();
        if (++versions > k_max_versions)
          return make_error("section " + vr.name + " at " + hex_number(vr.offset) + ": more than " +
                            std::to_string(k_max_versions) + " needed versions");
        need.versions.push_back(std::move(vname));
        if (*anext == 0) break;
        apos += *anext;
      }
      elf.version_needs.push_back(std::move(need));
      if (*next == 0) break;
      pos += *next;
    }
  }
  return {};
}

// GNU_PROPERTY_X86_ISA_1_NEEDED from NT_GNU_PROPERTY_TYPE_0 notes.
void read_isa_note(const Reader& r, ElfFile& elf) {
  const uint64_t align = r.is_64() ? 8 : 4;
  auto up = [](uint64_t v, uint64_t a) { return (v + a - 1) / a * a; };
  // Many note sections may all point at one large range: bound the bytes walked in all.
  uint64_t walked = 0;
  for (const ElfSection& note : elf.sections) {
    if (note.type != k_sht_note || note.size > k_max_small_table) continue;
    walked += note.size;
    if (walked > k_max_small_table) break;
    auto bytes = strict_substr(r.file(), note.offset, note.size);
    if (!bytes) continue;  // a damaged note is not worth failing the whole file for
    uint64_t pos = 0;
    while (pos + 12 <= bytes->size()) {
      uint32_t namesz = *read_le<uint32_t>(*bytes, pos);
      uint32_t descsz = *read_le<uint32_t>(*bytes, pos + 4);
      uint32_t type = *read_le<uint32_t>(*bytes, pos + 8);
      uint64_t desc = up(pos + 12 + namesz, 4);
      if (type == k_nt_gnu_property_type_0) desc = up(pos + 12 + namesz, align);
      auto name = strict_substr(*bytes, pos + 12, namesz);
      auto d = strict_substr(*bytes, desc, descsz);
      if (!name || !d) break;
      if (type == k_nt_gnu_property_type_0 && as_chars(*name) == std::string_view("GNU\0", 4)) {
        uint64_t p = 0;
        while (p + 8 <= d->size()) {
          uint32_t pr_type = *read_le<uint32_t>(*d, p);
          uint32_t pr_size = *read_le<uint32_t>(*d, p + 4);
          if (pr_type == k_gnu_property_x86_isa_1_needed && pr_size >= 4) {
            if (auto bits = read_le<uint32_t>(*d, p + 8)) elf.x86_isa_needed = *bits;
          }
          p = up(p + 8 + uint64_t{pr_size}, align);
        }
      }
      pos = up(desc + descsz, type == k_nt_gnu_property_type_0 ? align : 4);
    }
  }
}

}  // namespace

const ElfSection* ElfFile::find(std::string_view name) const {
  auto i = find_index(name);
  return i ? &sections[*i] : nullptr;
}

std::optional<size_t> ElfFile::find_index(std::string_view name) const {
  for (size_t i = 0; i < sections.size(); ++i)
    if (sections[i].name == name) return i;
  return std::nullopt;
}

bool looks_like_elf(Bytes file) {
  return file.size() >= 4 && as_chars(file.first(4)) == std::string_view(
                                                            "\x7f"
                                                            "ELF",
                                                            4);
}

Expected<Bytes> section_bytes(Bytes file, const ElfSection& section) {
  if (section.type == k_sht_nobits) return Bytes{};
  auto b = strict_substr(file, section.offset, section.size);
  if (!b)
    return make_error("section " + section.name + " at " + hex_number(section.offset) + " (" +
                      hex_number(section.size) + " bytes) runs past end of file (size " +
                      hex_number(file.size()) + ")");
  return *b;
}

Expected<ElfFile> parse_elf(Bytes file) {
  if (!looks_like_elf(file)) return make_error("not an ELF file (no \\x7fELF magic at 0x0)");
  if (file.size() < 52)
    return make_error("ELF header at 0x0 runs past end of file (size " + hex_number(file.size()) +
                      ")");
  const auto cls = static_cast<uint8_t>(file[4]);
  const auto data = static_cast<uint8_t>(file[5]);
  if (cls != 1 && cls != 2)
    return make_error("ELF class at 0x4 is " + hex_number(cls) + ", expected 1 or 2");
  if (data != 1)
    return make_error("ELF data encoding at 0x5 is " + hex_number(data) +
                      ", only little-endian (1) is supported");
  ElfFile elf;
  elf.is_64 = cls == 2;
  Reader r(file, elf.is_64);
  if (elf.is_64 && file.size() < 64) return r.past_end("ELF header", 0, 64);
  elf.e_type = *read_le<uint16_t>(file, 0x10);
  elf.e_machine = *read_le<uint16_t>(file, 0x12);
  elf.machine = machine_name(elf.e_machine);
  elf.os_abi = static_cast<uint8_t>(file[7]);
  elf.abi_version = static_cast<uint8_t>(file[8]);
  elf.e_flags = *read_le<uint32_t>(file, elf.is_64 ? 0x30 : 0x24);
  if (elf.is_64) {
    elf.e_phoff = *read_le<uint64_t>(file, 0x20);
    elf.e_shoff = *read_le<uint64_t>(file, 0x28);
    elf.e_phentsize = *read_le<uint16_t>(file, 0x36);
    elf.e_phnum = *read_le<uint16_t>(file, 0x38);
  } else {
    elf.e_phoff = *read_le<uint32_t>(file, 0x1c);
    elf.e_shoff = *read_le<uint32_t>(file, 0x20);
    elf.e_phentsize = *read_le<uint16_t>(file, 0x2a);
    elf.e_phnum = *read_le<uint16_t>(file, 0x2c);
  }
  std::string ctx;
  StringBudget budget;
  auto sections = read_sections(r, ctx, budget, elf.shstrndx);
  if (!sections) return sections.error();
  elf.sections = std::move(*sections);
  if (auto d = read_dynamic(r, elf, budget); !d) return d.error();
  if (auto v = read_version_needs(r, elf, budget); !v) return v.error();
  // Property numbers from 0xc0000000 up are processor-specific: only x86 means ISA levels.
  if (elf.e_machine == k_em_x86_64 || elf.e_machine == 3 /* EM_386 */) read_isa_note(r, elf);
  return elf;
}

// ---- The dynamic array and what names a string table (ELF64) ----

std::vector<ElfDynamicEntry> dynamic_entries(Bytes dyn_bytes, std::optional<uint64_t>& null_at) {
  std::vector<ElfDynamicEntry> entries;
  for (uint64_t i = 0; (i + 1) * k_elf64_dyn_size <= dyn_bytes.size(); ++i) {
    int64_t tag = *read_le<int64_t>(dyn_bytes, i * k_elf64_dyn_size);
    uint64_t value = *read_le<uint64_t>(dyn_bytes, i * k_elf64_dyn_size + 8);
    if (tag == k_dt_null) {
      null_at = i;
      break;
    }
    entries.push_back({i, tag, value});
  }
  return entries;
}

bool dynamic_tag_names_a_string(int64_t tag) {
  switch (tag) {
    case k_dt_needed:
    case k_dt_soname:
    case k_dt_rpath:
    case k_dt_runpath:
    case k_dt_config:
    case k_dt_depaudit:
    case k_dt_audit:
    case k_dt_auxiliary:
    case k_dt_filter:
      return true;
    default:
      return false;
  }
}

Expected<std::vector<uint64_t>> string_table_references(Bytes file, const ElfFile& elf,
                                                        uint32_t strtab_index) {
  std::vector<uint64_t> refs;
  for (const ElfSection& s : elf.sections) {
    if (s.link != strtab_index || s.type == k_sht_dynamic) continue;
    const std::string where = "section " + s.name + " (linked to the dynamic string table)";
    if (s.type == k_sht_dynsym || s.type == k_sht_symtab) {
      TAILOR_TRY(table, symbol_table(file, elf, s));
      for (uint64_t i = 0; i < table.size(); ++i) refs.push_back(table[i].name);
      continue;
    }
    if (s.type != k_sht_gnu_verneed && s.type != k_sht_gnu_verdef)
      return make_error(
          where + ": of a type (" + std::to_string(s.type) +
          ") whose names tailor does not read, so it cannot tell what shares the string");
    auto bytes = strict_substr(file, s.offset, s.size);
    if (!bytes) return make_error(where + ": runs past the end of the file");
    auto u16 = [&](uint64_t at) { return read_le<uint16_t>(*bytes, at); };
    auto u32 = [&](uint64_t at) { return read_le<uint32_t>(*bytes, at); };
    auto damaged = [&] { return make_error(where + ": a version record runs past its section"); };
    uint64_t steps = bytes->size() / 8 + 1;  // every record is at least 8 bytes
    uint64_t pos = 0;
    const bool need = s.type == k_sht_gnu_verneed;
    for (uint32_t n = 0; n < s.info; ++n) {
      // Verneed: vn_cnt +2, vn_file +4, vn_aux +8, vn_next +12. Verdef: vd_cnt +6, vd_aux +12,
      // vd_next +16.
      auto cnt = u16(pos + (need ? 2 : 6));
      auto aux = u32(pos + (need ? 8 : 12));
      auto next = u32(pos + (need ? 12 : 16));
      if (!cnt || !aux || !next) return damaged();
      if (need) {
        auto file_name = u32(pos + 4);
        if (!file_name) return damaged();
        refs.push_back(*file_name);
      }
      uint64_t apos = pos + *aux;
      for (uint16_t k = 0; k < *cnt; ++k) {
        if (steps-- == 0) return make_error(where + ": version records loop");
        // Vernaux: vna_name +8, vna_next +12. Verdaux: vda_name +0, vda_next +4.
        auto name = u32(apos + (need ? 8 : 0));
        auto anext = u32(apos + (need ? 12 : 4));
        if (!name || !anext) return damaged();
        refs.push_back(*name);
        if (*anext == 0) break;
        apos += *anext;
      }
      if (steps-- == 0) return make_error(where + ": version records loop");
      if (*next == 0) break;
      pos += *next;
    }
  }
  return refs;
}

// ---- Program headers, relocation and symbol tables (ELF64) ----

namespace {

// A table section's records: ELF64, of one of `types`, inside the file, whole records.
Expected<Bytes> table_records(Bytes file, const ElfFile& elf, const ElfSection& section,
                              std::initializer_list<uint32_t> types, const char* kind,
                              uint64_t record) {
  const std::string where = "section " + section.name + " at " + hex_number(section.offset);
  if (!elf.is_64) return make_error(where + ": " + kind + " tables are read in ELF64 files only");
  if (std::find(types.begin(), types.end(), section.type) == types.end())
    return make_error(where + ": type " + hex_number(section.type) + " is not a " + kind +
                      " table");
  auto bytes = strict_substr(file, section.offset, section.size);
  if (!bytes)
    return make_error(where + " (" + hex_number(section.size) +
                      " bytes) runs past end of file (size " + hex_number(file.size()) + ")");
  if (section.size % record != 0)
    return make_error(where + ": size " + hex_number(section.size) + " is not a whole number of " +
                      std::to_string(record) + "-byte " + kind + " records");
  return *bytes;
}

}  // namespace

Expected<std::vector<ElfSegment>> read_segments(Bytes file, const ElfFile& elf) {
  std::vector<ElfSegment> segments;
  if (elf.e_phnum == 0) return segments;
  if (!elf.is_64)
    return make_error("program header table at " + hex_number(elf.e_phoff) +
                      ": read in ELF64 files only");
  if (elf.e_phentsize != k_elf64_phdr_size)
    return make_error("e_phentsize at 0x36 is " + hex_number(elf.e_phentsize) + ", expected " +
                      hex_number(k_elf64_phdr_size));
  // PN_XNUM: the real count would be in section 0's sh_info. No linker writes it for a
  // shared library (65535 segments); it is refused rather than half supported.
  if (elf.e_phnum == 0xffff)
    return make_error("e_phnum at 0x38 is 0xffff (extended program header numbering, PN_XNUM)");
  const uint64_t table_size = uint64_t{elf.e_phnum} * k_elf64_phdr_size;
  auto table = strict_substr(file, elf.e_phoff, table_size);
  if (!table)
    return make_error("program header table at " + hex_number(elf.e_phoff) + " (" +
                      hex_number(table_size) + " bytes) runs past end of file (size " +
                      hex_number(file.size()) + ")");
  segments.reserve(elf.e_phnum);
  for (uint64_t at = 0; at < table_size; at += k_elf64_phdr_size) {
    ElfSegment h;
    h.type = *read_le<uint32_t>(*table, at);
    h.flags = *read_le<uint32_t>(*table, at + 4);
    h.offset = *read_le<uint64_t>(*table, at + 8);
    h.vaddr = *read_le<uint64_t>(*table, at + 16);
    h.paddr = *read_le<uint64_t>(*table, at + 24);
    h.filesz = *read_le<uint64_t>(*table, at + 32);
    h.memsz = *read_le<uint64_t>(*table, at + 40);
    h.align = *read_le<uint64_t>(*table, at + 48);
    segments.push_back(h);
  }
  return segments;
}

std::vector<std::byte> encode_segments(std::span<const ElfSegment> segments) {
  std::vector<std::byte> out(segments.size() * k_elf64_phdr_size);
  auto put = [&](size_t at, auto v) { std::memcpy(out.data() + at, &v, sizeof v); };
  for (size_t i = 0; i < segments.size(); ++i) {
    const ElfSegment& h = segments[i];
    const size_t at = i * k_elf64_phdr_size;
    put(at, h.type);
    put(at + 4, h.flags);
    put(at + 8, h.offset);
    put(at + 16, h.vaddr);
    put(at + 24, h.paddr);
    put(at + 32, h.filesz);
    put(at + 40, h.memsz);
    put(at + 48, h.align);
  }
  return out;
}

std::optional<uint64_t> file_offset_of(std::span<const ElfSegment> segments, uint64_t vaddr,
                                       uint64_t size) {
  for (const ElfSegment& h : segments) {
    if (h.type != k_pt_load || vaddr < h.vaddr) continue;
    const uint64_t rel = vaddr - h.vaddr;
    if (rel <= h.filesz && size <= h.filesz - rel) return checked_add(h.offset, rel);
  }
  return std::nullopt;
}

ElfRela ElfRelaTable::operator[](uint64_t i) const {
  const uint64_t at = i * k_elf64_rela_size;
  return {m_offset + at, *read_le<uint64_t>(m_records, at), *read_le<uint64_t>(m_records, at + 8),
          *read_le<uint64_t>(m_records, at + k_elf64_r_addend)};
}

Expected<ElfRelaTable> rela_table(Bytes file, const ElfFile& elf, const ElfSection& section) {
  TAILOR_TRY(records, table_records(file, elf, section, {k_sht_rela}, "RELA", k_elf64_rela_size));
  return ElfRelaTable(records, section.offset);
}

Expected<ElfRelrTable> relr_table(Bytes file, const ElfFile& elf, const ElfSection& section) {
  TAILOR_TRY(words, table_records(file, elf, section, {k_sht_relr}, "RELR", k_elf64_relr_size));
  return ElfRelrTable(words);
}

ElfSymbol ElfSymbolTable::operator[](uint64_t i) const {
  const uint64_t at = i * k_elf64_sym_size;
  ElfSymbol s;
  s.at = m_offset + at;
  s.name = *read_le<uint32_t>(m_records, at);
  s.info = *read_le<uint8_t>(m_records, at + 4);
  s.other = *read_le<uint8_t>(m_records, at + 5);
  s.shndx = *read_le<uint16_t>(m_records, at + 6);
  s.value = *read_le<uint64_t>(m_records, at + k_elf64_st_value);
  s.size = *read_le<uint64_t>(m_records, at + k_elf64_st_size);
  return s;
}

Expected<std::string_view> ElfSymbolTable::name(const ElfSymbol& symbol) const {
  if (!m_strings || m_strings->type != k_sht_strtab)
    return make_error("section " + m_section + " links to string table " + std::to_string(m_link) +
                      ", which is not a string table");
  TAILOR_TRY(strings, section_bytes(m_file, *m_strings));
  return table_string_view(strings, m_strings->offset, symbol.name,
                           "symbol at " + hex_number(symbol.at));
}

Expected<ElfSymbolTable> symbol_table(Bytes file, const ElfFile& elf, const ElfSection& section) {
  TAILOR_TRY(records, table_records(file, elf, section, {k_sht_symtab, k_sht_dynsym}, "symbol",
                                    k_elf64_sym_size));
  std::optional<ElfSection> strings;
  if (section.link < elf.sections.size()) strings = elf.sections[section.link];
  return ElfSymbolTable(file, records, section.offset, section.name, std::move(strings),
                        section.link);
}

}  // namespace tailor::formats
