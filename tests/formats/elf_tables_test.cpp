// The ELF64 program headers, relocation tables and symbol tables that formats/elf reads for
// slim: over the libraries made at build time (tests/fixtures), checked against binutils'
// readelf on the same files, and over synthetic and patched files that lie about their
// tables (every case one Error naming the part, never a crash or an allocation the size of
// a claimed count).
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "formats/elf.h"
#include "support/fixtures.h"
#include "synthetic_elf.h"
#include "util/process.h"

using namespace tailor;
using namespace tailor::formats;

namespace elf_tables_test {

namespace te = tailor::testing_elf;

bool have_fixture(const std::string& name) { return std::filesystem::exists(test::fixture(name)); }
bool have_readelf() { return !find_in_path("readelf").empty(); }

std::string readelf(const std::vector<std::string>& flags, const std::string& path) {
  std::vector<std::string> argv = {"readelf"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.push_back(path);
  return run_command(argv).out;
}

uint64_t hex(const std::string& s) { return std::stoull(s, nullptr, 16); }

template <typename T>
void poke(std::vector<std::byte>& b, uint64_t at, T v) {
  ASSERT_LE(at + sizeof(T), b.size());
  std::memcpy(b.data() + at, &v, sizeof(T));
}

Bytes view(const std::vector<std::byte>& b) { return Bytes(b.data(), b.size()); }

ElfFile parsed(const std::vector<std::byte>& b) {
  auto elf = parse_elf(view(b));
  EXPECT_TRUE(elf) << elf.error().message;
  return elf ? *elf : ElfFile{};
}

// The nvcc-built fixtures (a .nv_fatbin, relocations, a .symtab) and the g++-built ones.
const std::vector<std::string> k_fixtures = {"slim_multi", "plain_c", "rdc", "embedded_fatbin",
                                             "glibc_234"};

// The tests live in this namespace too, so that in a unity batch its helpers neither meet
// nor hide those of the other test files.

// ---- Real libraries, against readelf ----

TEST(ElfTables, SegmentsMatchReadelf) {
  if (!have_readelf()) GTEST_SKIP() << "readelf not on PATH";
  int checked = 0;
  for (const auto& name : k_fixtures) {
    if (!have_fixture(name)) continue;
    SCOPED_TRACE(name);
    auto bytes = test::slurp(test::fixture(name));
    ElfFile elf = parsed(bytes);
    auto segments = read_segments(view(bytes), elf);
    ASSERT_TRUE(segments) << segments.error().message;
    // "  LOAD  0x000000 0x0000000000000000 0x0000000000000000 0x0079a8 0x0079a8 R   0x1000"
    std::regex row(
        R"(^\s+(\S+)\s+0x([0-9a-f]+) 0x([0-9a-f]+) 0x([0-9a-f]+) 0x([0-9a-f]+) 0x([0-9a-f]+) (.{3}) 0x([0-9a-f]+))");
    std::istringstream lines(readelf({"-lW"}, test::fixture(name)));
    size_t i = 0;
    for (std::string line; std::getline(lines, line);) {
      std::smatch m;
      if (!std::regex_search(line, m, row)) continue;
      ASSERT_LT(i, segments->size());
      const ElfSegment& s = (*segments)[i++];
      EXPECT_EQ(s.type == k_pt_load, m[1] == "LOAD") << line;
      EXPECT_EQ(s.offset, hex(m[2])) << line;
      EXPECT_EQ(s.vaddr, hex(m[3])) << line;
      EXPECT_EQ(s.paddr, hex(m[4])) << line;
      EXPECT_EQ(s.filesz, hex(m[5])) << line;
      EXPECT_EQ(s.memsz, hex(m[6])) << line;
      EXPECT_EQ((s.flags & k_pf_x) != 0, m[7].str()[2] == 'E') << line;
      EXPECT_EQ(s.align, hex(m[8])) << line;
    }
    EXPECT_EQ(i, segments->size());
    EXPECT_GE(i, 4u);  // linkers write at least the R, RX, R and RW loads and more
    ++checked;
  }
  if (!checked) GTEST_SKIP() << "no fixture built";
}

TEST(ElfTables, SegmentsEncodeBackToTheirTable) {
  for (const auto& name : k_fixtures) {
    if (!have_fixture(name)) continue;
    SCOPED_TRACE(name);
    auto bytes = test::slurp(test::fixture(name));
    ElfFile elf = parsed(bytes);
    EXPECT_EQ(elf.e_phentsize, k_elf64_phdr_size);
    auto segments = read_segments(view(bytes), elf);
    ASSERT_TRUE(segments) << segments.error().message;
    ASSERT_EQ(segments->size(), elf.e_phnum);
    auto encoded = encode_segments(*segments);
    ASSERT_EQ(encoded.size(), elf.e_phnum * k_elf64_phdr_size);
    EXPECT_EQ(std::memcmp(encoded.data(), bytes.data() + elf.e_phoff, encoded.size()), 0);
  }
}

TEST(ElfTables, HeaderFieldsAndSectionLookup) {
  if (!have_fixture("slim_multi")) GTEST_SKIP() << "fixture not built (no nvcc)";
  auto bytes = test::slurp(test::fixture("slim_multi"));
  ElfFile elf = parsed(bytes);
  EXPECT_EQ(elf.e_type, 3);  // ET_DYN
  EXPECT_EQ(elf.e_phoff, 64u);
  uint64_t shoff = 0;
  std::memcpy(&shoff, bytes.data() + k_elf64_e_shoff, 8);
  EXPECT_EQ(elf.e_shoff, shoff);
  auto fat = elf.find_index(".nv_fatbin");
  ASSERT_TRUE(fat);
  EXPECT_EQ(&elf.sections[*fat], elf.find(".nv_fatbin"));
  EXPECT_FALSE(elf.find_index("no such section"));
  const ElfSection* dynsym = elf.find(".dynsym");
  ASSERT_NE(dynsym, nullptr);
  EXPECT_EQ(dynsym->type, k_sht_dynsym);
  EXPECT_EQ(dynsym->entsize, k_elf64_sym_size);
  EXPECT_EQ(dynsym->addralign, 8u);
}

TEST(ElfTables, AllocatedSectionsMapThroughTheirLoadSegment) {
  for (const auto& name : k_fixtures) {
    if (!have_fixture(name)) continue;
    SCOPED_TRACE(name);
    auto bytes = test::slurp(test::fixture(name));
    ElfFile elf = parsed(bytes);
    auto segments = read_segments(view(bytes), elf);
    ASSERT_TRUE(segments) << segments.error().message;
    int mapped = 0;
    for (const auto& s : elf.sections) {
      if (!(s.flags & k_shf_alloc) || s.type == k_sht_nobits || s.size == 0) continue;
      EXPECT_EQ(file_offset_of(*segments, s.addr, s.size), s.offset) << s.name;
      ++mapped;
    }
    EXPECT_GT(mapped, 5);
    // .bss has memory, not file bytes: no file offset.
    if (const ElfSection* bss = elf.find(".bss"); bss && bss->size > 0) {
      EXPECT_FALSE(file_offset_of(*segments, bss->addr + bss->size - 1, 1));
    }
  }
}

TEST(ElfTables, RelaMatchesReadelf) {
  if (!have_readelf()) GTEST_SKIP() << "readelf not on PATH";
  int checked = 0;
  for (const auto& name : k_fixtures) {
    if (!have_fixture(name)) continue;
    SCOPED_TRACE(name);
    auto bytes = test::slurp(test::fixture(name));
    ElfFile elf = parsed(bytes);
    // readelf -r: "Relocation section '.rela.dyn' at offset 0x1d80 contains 829 entries:",
    // then "<offset> <info> <type> [<value> <symbol> +|-] <addend>".
    std::istringstream lines(readelf({"-rW"}, test::fixture(name)));
    std::regex head(R"(Relocation section '([^']+)' at offset 0x([0-9a-f]+) contains (\d+) entr)");
    std::regex row(R"(^([0-9a-f]{16})\s+([0-9a-f]{16})\s.*?(?:([+-]) )?([0-9a-f]+)\s*$)");
    std::optional<ElfRelaTable> table;
    uint64_t i = 0, table_offset = 0;
    for (std::string line; std::getline(lines, line);) {
      std::smatch m;
      if (std::regex_search(line, m, head)) {
        if (table) {
          EXPECT_EQ(i, table->size());
        }
        const ElfSection* s = elf.find(m[1].str());
        ASSERT_NE(s, nullptr) << line;
        EXPECT_EQ(s->offset, hex(m[2]));
        auto t = rela_table(view(bytes), elf, *s);
        ASSERT_TRUE(t) << t.error().message;
        EXPECT_EQ(t->size(), std::stoull(m[3]));
        table = *t;
        table_offset = s->offset;
        i = 0;
        ++checked;
        continue;
      }
      if (!table || !std::regex_search(line, m, row)) continue;
      ASSERT_LT(i, table->size()) << line;
      const ElfRela r = (*table)[i];
      EXPECT_EQ(r.at, table_offset + i * k_elf64_rela_size) << line;
      EXPECT_EQ(r.place, hex(m[1])) << line;
      EXPECT_EQ(r.info, hex(m[2])) << line;
      const uint64_t magnitude = hex(m[4]);
      EXPECT_EQ(r.addend, m[3] == "-" ? uint64_t{0} - magnitude : magnitude) << line;
      ++i;
    }
    if (table) {
      EXPECT_EQ(i, table->size());
    }
  }
  if (!checked) GTEST_SKIP() << "no fixture built";
}

TEST(ElfTables, RelaRecordsAreAtTheirFileOffsets) {
  if (!have_fixture("slim_multi")) GTEST_SKIP() << "fixture not built (no nvcc)";
  auto bytes = test::slurp(test::fixture("slim_multi"));
  ElfFile elf = parsed(bytes);
  const ElfSection* s = elf.find(".rela.dyn");
  ASSERT_NE(s, nullptr);
  auto t = rela_table(view(bytes), elf, *s);
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_GT(t->size(), 100u);
  // The wrappers' pointers in .nvFatBinSegment are RELATIVE relocations of this machine.
  const uint32_t relative =
      elf.e_machine == k_em_x86_64 ? k_r_x86_64_relative : k_r_aarch64_relative;
  const ElfSection* seg = elf.find(".nvFatBinSegment");
  ASSERT_NE(seg, nullptr);
  int wrappers = 0;
  for (uint64_t i = 0; i < t->size(); ++i) {
    const ElfRela r = (*t)[i];
    EXPECT_EQ(r.at, s->offset + i * k_elf64_rela_size);
    uint64_t addend = 0;
    std::memcpy(&addend, bytes.data() + r.at + k_elf64_r_addend, 8);
    EXPECT_EQ(r.addend, addend);
    if (r.place >= seg->addr && r.place < seg->addr + seg->size) {
      EXPECT_EQ(r.type(), relative);
      EXPECT_EQ(r.symbol(), 0u);
      ++wrappers;
    }
  }
  EXPECT_GT(wrappers, 0);
}

TEST(ElfTables, SymbolsMatchReadelf) {
  if (!have_readelf()) GTEST_SKIP() << "readelf not on PATH";
  int checked = 0;
  for (const auto& name : k_fixtures) {
    if (!have_fixture(name)) continue;
    SCOPED_TRACE(name);
    auto bytes = test::slurp(test::fixture(name));
    ElfFile elf = parsed(bytes);
    // "Symbol table '.dynsym' contains 170 entries:", then
    // "     1: 0000000000000000     0 FUNC    GLOBAL DEFAULT  UND ftell@GLIBC_2.2.5 (2)".
    std::istringstream lines(readelf({"-sW"}, test::fixture(name)));
    std::regex head(R"(Symbol table '([^']+)' contains (\d+) entr)");
    std::regex row(R"(^\s*(\d+): ([0-9a-f]+)\s+(0x[0-9a-f]+|\d+)\s+\S+\s+\S+\s+\S+\s+\S+ ?(.*)$)");
    std::optional<ElfSymbolTable> table;
    bool dynamic = false;
    uint64_t rows = 0;  // of the current table: every record is compared
    for (std::string line; std::getline(lines, line);) {
      std::smatch m;
      if (std::regex_search(line, m, head)) {
        if (table) {
          EXPECT_EQ(rows, table->size());
        }
        rows = 0;
        const ElfSection* s = elf.find(m[1].str());
        ASSERT_NE(s, nullptr) << line;
        auto t = symbol_table(view(bytes), elf, *s);
        ASSERT_TRUE(t) << t.error().message;
        EXPECT_EQ(t->size(), std::stoull(m[2]));
        table = *t;
        dynamic = s->type == k_sht_dynsym;
        ++checked;
        continue;
      }
      if (!table || !std::regex_search(line, m, row)) continue;
      const uint64_t i = std::stoull(m[1]);
      ASSERT_LT(i, table->size()) << line;
      const ElfSymbol sym = (*table)[i];
      EXPECT_EQ(sym.value, hex(m[2])) << line;
      EXPECT_EQ(sym.size, std::stoull(m[3], nullptr, 0)) << line;
      auto n = table->name(sym);
      ASSERT_TRUE(n) << n.error().message;
      // readelf adds the version to a dynamic symbol's name ("ftell@GLIBC_2.2.5 (2)").
      std::string want = m[4];
      if (dynamic) want = want.substr(0, want.find('@'));
      // A section symbol (STT_SECTION) has no name of its own (st_name 0): readelf prints
      // its section's name there (".init", ".data": aarch64 libraries keep such symbols).
      std::string got(*n);
      if (got.empty() && (sym.info & 0xf) == 3 && sym.shndx < elf.sections.size())
        got = elf.sections[sym.shndx].name;
      EXPECT_EQ(got, want) << line;
      ++rows;
    }
    if (table) {
      EXPECT_EQ(rows, table->size());
    }
  }
  if (!checked) GTEST_SKIP() << "no fixture built";
}

TEST(ElfTables, SymbolsNameTheirSection) {
  if (!have_fixture("slim_multi")) GTEST_SKIP() << "fixture not built (no nvcc)";
  auto bytes = test::slurp(test::fixture("slim_multi"));
  ElfFile elf = parsed(bytes);
  // nvcc's registration code names each container by a local symbol in .nv_fatbin.
  const auto fat = elf.find_index(".nv_fatbin");
  ASSERT_TRUE(fat);
  auto t = symbol_table(view(bytes), elf, *elf.find(".symtab"));
  ASSERT_TRUE(t) << t.error().message;
  int in_fatbin = 0;
  for (uint64_t i = 0; i < t->size(); ++i) {
    const ElfSymbol sym = (*t)[i];
    EXPECT_EQ(sym.at, elf.find(".symtab")->offset + i * k_elf64_sym_size);
    if (sym.shndx != *fat) continue;
    ++in_fatbin;
    EXPECT_GE(sym.value, elf.sections[*fat].addr);
    EXPECT_LT(sym.value, elf.sections[*fat].addr + elf.sections[*fat].size);
  }
  EXPECT_GT(in_fatbin, 0);
}

// ---- Synthetic tables ----

TEST(ElfTables, RelrPlacesFollowTheEncoding) {
  // An address word, a bitmap (bits 0 and 2: the words at +8 and +24 after it), a bitmap
  // whose first bit is the 63rd word on, then a new address.
  std::vector<std::byte> words(32);
  te::Builder::put<uint64_t>(words, 0, 0x10000);
  te::Builder::put<uint64_t>(words, 8, (0b101ull << 1) | 1);
  te::Builder::put<uint64_t>(words, 16, (1ull << 1) | 1);
  te::Builder::put<uint64_t>(words, 24, 0x20000);
  auto bytes = te::with_table(".relr.dyn", te::k_relr, words);
  ElfFile elf = parsed(bytes);
  auto t = relr_table(view(bytes), elf, *elf.find(".relr.dyn"));
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->words(), 4u);
  std::vector<uint64_t> places;
  t->for_each_place([&](uint64_t p) { places.push_back(p); });
  EXPECT_EQ(places,
            (std::vector<uint64_t>{0x10000, 0x10008, 0x10018, 0x10000 + 8 + 63 * 8, 0x20000}));
}

TEST(ElfTables, SyntheticRelaAndSymbols) {
  auto rela = te::concat({te::rela_record(0x1000, 8, 0x2000),
                          te::rela_record(0x1008, (5ull << 32) | 6, uint64_t(-8))});
  auto bytes = te::with_table(".rela.dyn", te::k_rela, rela);
  ElfFile elf = parsed(bytes);
  const ElfSection* s = elf.find(".rela.dyn");
  auto t = rela_table(view(bytes), elf, *s);
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->size(), 2u);
  EXPECT_EQ((*t)[0].at, s->offset);
  EXPECT_EQ((*t)[0].place, 0x1000u);
  EXPECT_EQ((*t)[0].type(), 8u);
  EXPECT_EQ((*t)[0].addend, 0x2000u);
  EXPECT_EQ((*t)[1].at, s->offset + 24);
  EXPECT_EQ((*t)[1].type(), 6u);
  EXPECT_EQ((*t)[1].symbol(), 5u);
  EXPECT_EQ(static_cast<int64_t>((*t)[1].addend), -8);

  std::vector<uint32_t> idx;
  const std::string strings = te::string_table({"first", "second"}, idx);
  auto syms =
      te::concat({te::symbol_record(0, 0, 0, 0, 0), te::symbol_record(idx[0], 0x4000, 16, 7),
                  te::symbol_record(idx[1], 0x5000, 32, 0xfff1 /* SHN_ABS */)});
  auto sbytes = te::with_table(".dynsym", te::k_dynsym, syms, strings, 24);
  ElfFile selve = parsed(sbytes);
  auto st = symbol_table(view(sbytes), selve, *selve.find(".dynsym"));
  ASSERT_TRUE(st) << st.error().message;
  ASSERT_EQ(st->size(), 3u);
  EXPECT_EQ(*st->name((*st)[0]), "");
  EXPECT_EQ(*st->name((*st)[1]), "first");
  EXPECT_EQ(*st->name((*st)[2]), "second");
  EXPECT_EQ((*st)[1].value, 0x4000u);
  EXPECT_EQ((*st)[1].size, 16u);
  EXPECT_EQ((*st)[1].shndx, 7);
  EXPECT_EQ((*st)[1].info, 0x12);
  EXPECT_EQ((*st)[2].shndx, 0xfff1);
  // The table's one PT_LOAD maps the whole file at address 0.
  auto segments = read_segments(view(sbytes), selve);
  ASSERT_TRUE(segments) << segments.error().message;
  ASSERT_EQ(segments->size(), 1u);
  EXPECT_EQ(file_offset_of(*segments, selve.find(".dynsym")->addr, 24),
            selve.find(".dynsym")->offset);
}

TEST(ElfTables, FileOffsetOfEdges) {
  std::vector<ElfSegment> segs = {
      {6 /* PT_PHDR */, 4, 0x40, 0x40, 0x40, 0x1000, 0x1000, 8},  // not a load: ignored
      {k_pt_load, 4, 0x1000, 0x400000, 0x400000, 0x100, 0x2000, 0x1000},
      {k_pt_load, 4, ~uint64_t{0} - 0x10, 0x800000, 0x800000, 0x100, 0x100, 0x1000}};
  EXPECT_EQ(file_offset_of(segs, 0x400000, 8), 0x1000u);
  EXPECT_EQ(file_offset_of(segs, 0x4000f8, 8), 0x10f8u);
  EXPECT_FALSE(file_offset_of(segs, 0x4000f9, 8));  // runs past p_filesz
  EXPECT_FALSE(file_offset_of(segs, 0x401000, 8));  // memory only (.bss)
  EXPECT_FALSE(file_offset_of(segs, 0x3ffff8, 8));  // below every load
  EXPECT_FALSE(file_offset_of(segs, 0x80, 8));      // only PT_PHDR covers it
  EXPECT_FALSE(file_offset_of(segs, 0x800020, 8));  // p_offset + 0x20 wraps around
  EXPECT_EQ(file_offset_of(segs, 0x800008, 8), ~uint64_t{0} - 0x8);
}

// ---- Hostile tables ----

// slim_multi (or plain_c when nvcc is absent), parsed.
struct Real {
  std::vector<std::byte> bytes;
  ElfFile elf;
};
std::optional<Real> real_library() {
  for (const char* name : {"slim_multi", "plain_c"}) {
    if (!have_fixture(name)) continue;
    Real r{test::slurp(test::fixture(name)), {}};
    r.elf = parsed(r.bytes);
    return r;
  }
  return std::nullopt;
}

TEST(ElfTablesHostile, TruncatedProgramHeaderTable) {
  auto real = real_library();
  if (!real) GTEST_SKIP() << "fixtures not built";
  // The header survives (so parse_elf, which never reads the program headers, still
  // reads the sections of the intact copy); the table is cut in the middle.
  auto cut = real->bytes;
  cut.resize(real->elf.e_phoff + 100);
  ElfFile elf = real->elf;
  auto r = read_segments(view(cut), elf);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("program header table at 0x40 (0x"), std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("runs past end of file (size 0xa4)"), std::string::npos)
      << r.error().message;
}

TEST(ElfTablesHostile, ProgramHeaderFieldsThatLie) {
  auto real = real_library();
  if (!real) GTEST_SKIP() << "fixtures not built";
  auto with = [&](uint64_t at, auto value) {
    auto b = real->bytes;
    poke(b, at, value);
    return b;
  };
  auto error = [&](const std::vector<std::byte>& b) {
    auto r = read_segments(view(b), parsed(b));
    EXPECT_FALSE(r) << "hostile program headers read";
    return r ? std::string() : r.error().message;
  };
  EXPECT_NE(error(with(0x36, uint16_t{32})).find("e_phentsize at 0x36 is 0x20, expected 0x38"),
            std::string::npos);
  EXPECT_NE(error(with(0x38, uint16_t{0xffff})).find("PN_XNUM"), std::string::npos);
  // A huge count (the most 16 bits allow) against a small file: an error before any
  // allocation, not 65534 segments.
  EXPECT_NE(error(with(0x38, uint16_t{0xfffe}))
                .find("program header table at 0x40 (0x37ff90 bytes) runs past end"),
            std::string::npos);
  EXPECT_NE(error(with(0x20, uint64_t{0xfffffffffffffff0}))
                .find("program header table at 0xfffffffffffffff0"),
            std::string::npos);
  // No program headers at all: nothing to read, whatever e_phoff says.
  auto none = with(0x38, uint16_t{0});
  poke(none, 0x20, uint64_t{0xdeadbeef});
  auto empty = read_segments(view(none), parsed(none));
  ASSERT_TRUE(empty) << empty.error().message;
  EXPECT_TRUE(empty->empty());
}

TEST(ElfTablesHostile, RelocationTablePastTheEnd) {
  auto rela = te::concat({te::rela_record(0x1000, 8, 0x2000), te::rela_record(0x1008, 8, 0x2008)});
  auto bytes = te::with_table(".rela.dyn", te::k_rela, rela);
  ElfFile elf = parsed(bytes);
  ElfSection s = *elf.find(".rela.dyn");
  auto error = [&](const ElfSection& section) {
    auto r = rela_table(view(bytes), elf, section);
    EXPECT_FALSE(r) << "hostile relocation table read";
    return r ? std::string() : r.error().message;
  };
  ElfSection past = s;
  past.size = bytes.size();  // starts inside, runs past the end
  EXPECT_NE(error(past).find("section .rela.dyn at 0x"), std::string::npos);
  EXPECT_NE(error(past).find("runs past end of file"), std::string::npos);
  ElfSection huge = s;
  huge.size = 0xffffffffffffffe8;  // a whole number of records, the count of 2^59
  EXPECT_NE(error(huge).find("runs past end of file"), std::string::npos);
  ElfSection odd = s;
  odd.size = 40;
  EXPECT_NE(error(odd).find("size 0x28 is not a whole number of 24-byte RELA records"),
            std::string::npos);
  ElfSection wrong = s;
  wrong.type = te::k_relr;
  EXPECT_NE(error(wrong).find("type 0x13 is not a RELA table"), std::string::npos);
  // RELR: the same checks, 8-byte words.
  ElfSection relr = s;
  relr.type = te::k_relr;
  relr.size = 12;
  auto r = relr_table(view(bytes), elf, relr);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("size 0xc is not a whole number of 8-byte RELR records"),
            std::string::npos);
  relr.size = bytes.size() + 8;
  r = relr_table(view(bytes), elf, relr);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("runs past end of file"), std::string::npos);
}

TEST(ElfTablesHostile, SymbolNameOffsetPastTheStringTable) {
  std::vector<uint32_t> idx;
  const std::string strings = te::string_table({"good"}, idx);
  auto syms =
      te::concat({te::symbol_record(idx[0], 0x10, 0, 1), te::symbol_record(0x7fffffff, 0x20, 0, 1),
                  te::symbol_record(static_cast<uint32_t>(strings.size()), 0x30, 0, 1)});
  auto bytes = te::with_table(".symtab", te::k_symtab, syms, strings);
  ElfFile elf = parsed(bytes);
  auto t = symbol_table(view(bytes), elf, *elf.find(".symtab"));
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->size(), 3u);
  EXPECT_EQ(*t->name((*t)[0]), "good");
  auto bad = t->name((*t)[1]);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("name offset 0x7fffffff lies outside its string table at 0x"),
            std::string::npos)
      << bad.error().message;
  EXPECT_NE(bad.error().message.find("symbol at 0x"), std::string::npos) << bad.error().message;
  EXPECT_FALSE(t->name((*t)[2]));  // one past the last byte
  // The records stay readable: a damaged name does not hide a symbol's value.
  EXPECT_EQ((*t)[1].value, 0x20u);
}

TEST(ElfTablesHostile, SymbolNamesThatDoNotEnd) {
  // The string table's last name has no NUL; another is longer than 4 KiB.
  std::string strings = std::string(1, '\0') + std::string(5000, 'L') + '\0' + "open";
  auto syms = te::concat({te::symbol_record(1, 0, 0, 1), te::symbol_record(5002, 0, 0, 1)});
  auto bytes = te::with_table(".symtab", te::k_symtab, syms, strings);
  ElfFile elf = parsed(bytes);
  auto t = symbol_table(view(bytes), elf, *elf.find(".symtab"));
  ASSERT_TRUE(t) << t.error().message;
  auto long_name = t->name((*t)[0]);
  ASSERT_FALSE(long_name);
  EXPECT_NE(long_name.error().message.find("is longer than 4096 bytes"), std::string::npos)
      << long_name.error().message;
  auto open = t->name((*t)[1]);
  ASSERT_FALSE(open);
  EXPECT_NE(open.error().message.find("is not NUL-terminated inside its string table"),
            std::string::npos)
      << open.error().message;
}

TEST(ElfTablesHostile, SymbolTableLinks) {
  auto syms = te::concat({te::symbol_record(1, 0, 0, 1)});
  auto bytes = te::with_table(".symtab", te::k_symtab, syms, std::string("\0x", 3));
  ElfFile elf = parsed(bytes);
  ElfSection s = *elf.find(".symtab");
  s.link = 99;  // no such section
  auto t = symbol_table(view(bytes), elf, s);
  ASSERT_TRUE(t) << t.error().message;  // the records read; the names do not
  auto n = t->name((*t)[0]);
  ASSERT_FALSE(n);
  EXPECT_NE(n.error().message.find(
                "section .symtab links to string table 99, which is not a string table"),
            std::string::npos)
      << n.error().message;
  s.link = 0;  // the null section
  t = symbol_table(view(bytes), elf, s);
  ASSERT_TRUE(t);
  EXPECT_FALSE(t->name((*t)[0]));
  // A string table that lies past the end of the file.
  auto moved = bytes;
  const uint64_t dynstr_header = elf.e_shoff + 64 * *elf.find_index(".dynstr");
  poke(moved, dynstr_header + 24, uint64_t{moved.size() + 0x1000});
  ElfFile moved_elf = parsed(moved);
  t = symbol_table(view(moved), moved_elf, *moved_elf.find(".symtab"));
  ASSERT_TRUE(t);
  n = t->name((*t)[0]);
  ASSERT_FALSE(n);
  EXPECT_NE(n.error().message.find("section .dynstr at 0x"), std::string::npos)
      << n.error().message;
  // Not a symbol table, or not whole records.
  ElfSection notsym = *elf.find(".symtab");
  notsym.type = te::k_rela;
  EXPECT_FALSE(symbol_table(view(bytes), elf, notsym));
  ElfSection partial = *elf.find(".symtab");
  partial.size = 30;
  auto p = symbol_table(view(bytes), elf, partial);
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message.find("not a whole number of 24-byte symbol records"),
            std::string::npos);
}

TEST(ElfTablesHostile, Elf32IsRefusedByTheElf64Readers) {
  auto bytes = te::with_table(".rela.dyn", te::k_rela, te::rela_record(0, 8, 0));
  ElfFile elf = parsed(bytes);
  elf.is_64 = false;  // as parse_elf says of an ELF32 file
  auto r = rela_table(view(bytes), elf, *elf.find(".rela.dyn"));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("RELA tables are read in ELF64 files only"), std::string::npos);
  EXPECT_FALSE(symbol_table(view(bytes), elf, *elf.find(".rela.dyn")));
  auto segs = read_segments(view(bytes), elf);
  ASSERT_FALSE(segs);
  EXPECT_NE(segs.error().message.find("ELF64 files only"), std::string::npos);
}

}  // namespace elf_tables_test
