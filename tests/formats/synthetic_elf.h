// Small ELF64 files built in memory by tests: a string table, sections, program headers and
// the records that hostile inputs abuse (many sections, DT_NEEDED entries or version needs
// naming one long string, fatbin entries sharing one identifier, symbol and relocation
// tables). Header-only; used by the formats, inspect and slim tests. Its constants are
// written out here rather than taken from formats/elf.h, so a wrong constant there shows.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace tailor::testing_elf {

constexpr uint32_t k_progbits = 1, k_symtab = 2, k_strtab = 3, k_rela = 4, k_dynamic = 6,
                   k_nobits = 8, k_dynsym = 11, k_relr = 19, k_verneed = 0x6ffffffe;
constexpr uint32_t k_pt_load = 1, k_pt_dynamic = 2;
constexpr uint64_t k_shf_write = 0x1, k_shf_alloc = 0x2;

struct Section {
  uint32_t name = 0;  // index into the section name table
  uint32_t type = k_progbits;
  uint64_t offset = 0, size = 0;
  uint32_t link = 0, info = 0;
  uint64_t flags = 0, addr = 0;  // sh_flags (SHF_ALLOC ...), sh_addr
  uint64_t addralign = 0, entsize = 0;
};

// One program header (Elf64_Phdr); p_paddr is written as p_vaddr.
struct Segment {
  uint32_t type = k_pt_load, flags = 4;  // PF_R
  uint64_t offset = 0, vaddr = 0, filesz = 0, memsz = 0, align = 0x1000;
};

class Builder {
 public:
  Builder() : m_bytes(64) {}
  // Appends bytes (8-aligned) and returns their file offset.
  uint64_t add(const void* data, size_t size) {
    while (m_bytes.size() % 8) m_bytes.push_back(std::byte{0});
    uint64_t at = m_bytes.size();
    m_bytes.resize(at + size);
    if (size) std::memcpy(m_bytes.data() + at, data, size);
    return at;
  }
  uint64_t add(const std::string& s) { return add(s.data(), s.size()); }
  uint64_t add(const std::vector<std::byte>& b) { return add(b.data(), b.size()); }
  // Section 0 (null) is implicit; returns the index of the added one.
  uint32_t section(const Section& s) {
    m_sections.push_back(s);
    return static_cast<uint32_t>(m_sections.size());
  }
  // Program headers are written after the section headers (none: e_phoff, e_phnum 0).
  void segment(const Segment& s) { m_segments.push_back(s); }
  std::vector<std::byte> build(uint32_t shstrndx) {
    std::vector<std::byte> out = m_bytes;
    while (out.size() % 8) out.push_back(std::byte{0});
    const uint64_t shoff = out.size();
    out.resize(shoff + 64 * (m_sections.size() + 1));
    for (size_t i = 0; i < m_sections.size(); ++i) {
      const Section& s = m_sections[i];
      const uint64_t h = shoff + 64 * (i + 1);
      put<uint32_t>(out, h, s.name);
      put<uint32_t>(out, h + 4, s.type);
      put<uint64_t>(out, h + 8, s.flags);
      put<uint64_t>(out, h + 16, s.addr);
      put<uint64_t>(out, h + 24, s.offset);
      put<uint64_t>(out, h + 32, s.size);
      put<uint32_t>(out, h + 40, s.link);
      put<uint32_t>(out, h + 44, s.info);
      put<uint64_t>(out, h + 48, s.addralign);
      put<uint64_t>(out, h + 56, s.entsize);
    }
    const uint64_t phoff = out.size();
    out.resize(phoff + 56 * m_segments.size());
    for (size_t i = 0; i < m_segments.size(); ++i) {
      const Segment& p = m_segments[i];
      const uint64_t h = phoff + 56 * i;
      put<uint32_t>(out, h, p.type);
      put<uint32_t>(out, h + 4, p.flags);
      put<uint64_t>(out, h + 8, p.offset);
      put<uint64_t>(out, h + 16, p.vaddr);
      put<uint64_t>(out, h + 24, p.vaddr);
      put<uint64_t>(out, h + 32, p.filesz);
      put<uint64_t>(out, h + 40, p.memsz);
      put<uint64_t>(out, h + 48, p.align);
    }
    const char ident[] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
    std::memcpy(out.data(), ident, sizeof ident);
    put<uint16_t>(out, 0x10, 3);   // ET_DYN
    put<uint16_t>(out, 0x12, 62);  // x86_64
    put<uint32_t>(out, 0x14, 1);
    put<uint64_t>(out, 0x28, shoff);
    if (!m_segments.empty()) {
      put<uint64_t>(out, 0x20, phoff);
      put<uint16_t>(out, 0x36, 56);
      put<uint16_t>(out, 0x38, static_cast<uint16_t>(m_segments.size()));
    }
    put<uint16_t>(out, 0x34, 64);
    put<uint16_t>(out, 0x3a, 64);
    const uint64_t count = m_sections.size() + 1;
    if (count < 0xff00) {
      put<uint16_t>(out, 0x3c, static_cast<uint16_t>(count));
    } else {  // the real count lives in section 0's sh_size
      put<uint16_t>(out, 0x3c, 0);
      put<uint64_t>(out, shoff + 32, count);
    }
    put<uint16_t>(out, 0x3e, static_cast<uint16_t>(shstrndx));
    return out;
  }
  template <typename T>
  static void put(std::vector<std::byte>& b, uint64_t at, T v) {
    std::memcpy(b.data() + at, &v, sizeof v);
  }

 private:
  std::vector<std::byte> m_bytes;
  std::vector<Section> m_sections;
  std::vector<Segment> m_segments;
};

// A string table "\0<names...>": index of each name in `indices`.
inline std::string string_table(const std::vector<std::string>& names,
                                std::vector<uint32_t>& indices) {
  std::string t(1, '\0');
  for (const auto& n : names) {
    indices.push_back(static_cast<uint32_t>(t.size()));
    t += n;
    t += '\0';
  }
  return t;
}

// `count` sections all named by one string of `name_length` bytes.
inline std::vector<std::byte> many_sections_one_name(uint64_t count, size_t name_length) {
  Builder b;
  std::vector<uint32_t> idx;
  const std::string names = string_table({".shstrtab", std::string(name_length, 'S')}, idx);
  const uint64_t at = b.add(names);
  uint32_t strtab = b.section({idx[0], k_strtab, at, names.size()});
  for (uint64_t i = 1; i < count; ++i) b.section({idx[1], k_progbits, 0, 0});
  return b.build(strtab);
}

// A .dynamic with `count` DT_NEEDED entries naming `names` in turn (all the same when one).
inline std::vector<std::byte> with_needed(const std::vector<std::string>& names, uint64_t count) {
  Builder b;
  std::vector<uint32_t> idx;
  const std::string shnames = string_table({".shstrtab", ".dynstr", ".dynamic"}, idx);
  std::vector<uint32_t> didx;
  const std::string dynstr = string_table(names, didx);
  std::vector<std::byte> dyn((count + 1) * 16);
  for (uint64_t i = 0; i < count; ++i) {
    Builder::put<int64_t>(dyn, i * 16, 1);  // DT_NEEDED
    Builder::put<uint64_t>(dyn, i * 16 + 8, didx[i % didx.size()]);
  }
  const uint64_t sh_at = b.add(shnames), str_at = b.add(dynstr), dyn_at = b.add(dyn);
  uint32_t shstr = b.section({idx[0], k_strtab, sh_at, shnames.size()});
  uint32_t str = b.section({idx[1], k_strtab, str_at, dynstr.size()});
  b.section({idx[2], k_dynamic, dyn_at, dyn.size(), str});
  return b.build(shstr);
}

// One Verneed record for "libc.so.6" with `count` aux records all naming one version
// string of `name_length` bytes.
inline std::vector<std::byte> many_version_needs(uint64_t count, size_t name_length) {
  Builder b;
  std::vector<uint32_t> idx;
  const std::string shnames = string_table({".shstrtab", ".dynstr", ".gnu.version_r"}, idx);
  std::vector<uint32_t> sidx;
  const std::string strs =
      string_table({"libc.so.6", "GLIBC_" + std::string(name_length, '9')}, sidx);
  std::vector<std::byte> vr(16 + 16 * count);
  Builder::put<uint16_t>(vr, 0, 1);
  Builder::put<uint16_t>(vr, 2, static_cast<uint16_t>(count > 0xffff ? 0xffff : count));
  Builder::put<uint32_t>(vr, 4, sidx[0]);
  Builder::put<uint32_t>(vr, 8, 16);
  for (uint64_t i = 0; i < count; ++i) {
    Builder::put<uint32_t>(vr, 16 + i * 16 + 8, sidx[1]);
    Builder::put<uint32_t>(vr, 16 + i * 16 + 12, i + 1 < count ? 16 : 0);
  }
  const uint64_t sh_at = b.add(shnames), str_at = b.add(strs), vr_at = b.add(vr);
  uint32_t shstr = b.section({idx[0], k_strtab, sh_at, shnames.size()});
  uint32_t str = b.section({idx[1], k_strtab, str_at, strs.size()});
  b.section({idx[2], k_verneed, vr_at, vr.size(), str, 1});
  return b.build(shstr);
}

// One fatbin container of `entries` empty cubin entries (sm_<arch>), each naming the same
// identifier of `id_length` bytes that lies after the last entry.
inline std::vector<std::byte> fatbin_container(uint64_t entries, uint32_t id_length,
                                               uint32_t arch = 80) {
  const uint64_t body = entries * 64 + id_length;
  std::vector<std::byte> c(16 + body);
  Builder::put<uint32_t>(c, 0, 0xBA55ED50);
  Builder::put<uint16_t>(c, 4, 1);
  Builder::put<uint16_t>(c, 6, 16);
  Builder::put<uint64_t>(c, 8, body);
  const uint64_t id_at = 16 + entries * 64;
  for (uint64_t i = 0; i < entries; ++i) {
    const uint64_t e = 16 + i * 64;
    Builder::put<uint16_t>(c, e, 2);  // cubin
    Builder::put<uint32_t>(c, e + 4, 64);
    // The last entry's payload is the identifier itself, so the walk ends at the container end.
    Builder::put<uint64_t>(c, e + 8, i + 1 == entries ? id_length : 0);
    Builder::put<uint32_t>(c, e + 0x1c, arch);
    if (id_length) {
      Builder::put<uint32_t>(c, e + 0x20, static_cast<uint32_t>(id_at - e));
      Builder::put<uint32_t>(c, e + 0x24, id_length);
    }
  }
  for (uint64_t i = id_at; i < c.size(); ++i) c[i] = std::byte{'I'};
  return c;
}

// A library whose .nv_fatbin section holds `section` (container bytes), listed `copies`
// times in the section table (all pointing at the same bytes).
inline std::vector<std::byte> with_fatbin(const std::vector<std::byte>& section,
                                          uint64_t copies = 1) {
  Builder b;
  std::vector<uint32_t> idx;
  const std::string shnames = string_table({".shstrtab", ".nv_fatbin"}, idx);
  const uint64_t sh_at = b.add(shnames), fat_at = b.add(section);
  uint32_t shstr = b.section({idx[0], k_strtab, sh_at, shnames.size()});
  for (uint64_t i = 0; i < copies; ++i) b.section({idx[1], k_progbits, fat_at, section.size()});
  return b.build(shstr);
}

// A library whose allocated sections `names` (PROGBITS, SHF_ALLOC, address = file offset
// + `address_skew`) hold `contents` in turn; no .nv_fatbin unless named.
inline std::vector<std::byte> with_sections(const std::vector<std::string>& names,
                                            const std::vector<std::vector<std::byte>>& contents,
                                            uint64_t address_skew = 0,
                                            uint64_t flags = k_shf_alloc) {
  Builder b;
  std::vector<uint32_t> idx;
  std::vector<std::string> all = {".shstrtab"};
  all.insert(all.end(), names.begin(), names.end());
  const std::string shnames = string_table(all, idx);
  const uint64_t sh_at = b.add(shnames);
  std::vector<uint64_t> at;
  for (const auto& c : contents) at.push_back(b.add(c));
  uint32_t shstr = b.section({idx[0], k_strtab, sh_at, shnames.size()});
  for (size_t i = 0; i < names.size(); ++i)
    b.section(
        {idx[i + 1], k_progbits, at[i], contents[i].size(), 0, 0, flags, at[i] + address_skew});
  return b.build(shstr);
}

// One Elf64_Sym record.
inline std::vector<std::byte> symbol_record(uint32_t name, uint64_t value, uint64_t size,
                                            uint16_t shndx,
                                            uint8_t info = 0x12 /* STB_GLOBAL, STT_FUNC */) {
  std::vector<std::byte> r(24);
  Builder::put<uint32_t>(r, 0, name);
  Builder::put<uint8_t>(r, 4, info);
  Builder::put<uint16_t>(r, 6, shndx);
  Builder::put<uint64_t>(r, 8, value);
  Builder::put<uint64_t>(r, 16, size);
  return r;
}

// One Elf64_Rela record.
inline std::vector<std::byte> rela_record(uint64_t place, uint64_t info, uint64_t addend) {
  std::vector<std::byte> r(24);
  Builder::put<uint64_t>(r, 0, place);
  Builder::put<uint64_t>(r, 8, info);
  Builder::put<uint64_t>(r, 16, addend);
  return r;
}

inline std::vector<std::byte> concat(const std::vector<std::vector<std::byte>>& parts) {
  std::vector<std::byte> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// A library with one allocated table section `name` of `type` holding `records` (address =
// file offset), linked to a string table `.dynstr` holding `strings`, and one PT_LOAD that
// maps the whole file at address 0.
inline std::vector<std::byte> with_table(const std::string& name, uint32_t type,
                                         const std::vector<std::byte>& records,
                                         const std::string& strings = std::string(1, '\0'),
                                         uint64_t entsize = 0) {
  Builder b;
  std::vector<uint32_t> idx;
  const std::string shnames = string_table({".shstrtab", ".dynstr", name}, idx);
  const uint64_t sh_at = b.add(shnames), str_at = b.add(strings), table_at = b.add(records);
  uint32_t shstr = b.section({idx[0], k_strtab, sh_at, shnames.size()});
  uint32_t str = b.section({idx[1], k_strtab, str_at, strings.size(), 0, 0, k_shf_alloc, str_at});
  b.section({idx[2], type, table_at, records.size(), str, 0, k_shf_alloc, table_at, 8, entsize});
  auto out = b.build(shstr);
  // The PT_LOAD is added to a copy that knows the final size: the table comes last.
  Builder sized = b;
  sized.segment({k_pt_load, 4, 0, 0, out.size() + 56, out.size() + 56, 0x1000});
  return sized.build(shstr);
}

}  // namespace tailor::testing_elf
