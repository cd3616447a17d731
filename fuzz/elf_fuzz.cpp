// libFuzzer target for the ELF reader and the whole per-library analysis (which walks the
// fatbin sections it finds and searches every other allocated section for embedded
// containers): any input must give a report or an Error, never a crash, and never memory
// in proportion to sizes the input merely claims. The ELF64 tables slim reads (program
// headers, RELA/RELR, symbols and their names) are walked too, with what they promise
// checked: program headers encode back to the bytes they were read from, every record and
// name lies inside the input.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "formats/elf.h"
#include "inspect/library_report.h"

namespace {

using namespace tailor;

bool inside(Bytes file, uint64_t at, uint64_t size) {
  return strict_substr(file, at, size).has_value();
}

void walk_tables(Bytes bytes, const formats::ElfFile& elf) {
  auto segments = formats::read_segments(bytes, elf);
  if (segments && !segments->empty()) {
    auto encoded = formats::encode_segments(*segments);
    if (!inside(bytes, elf.e_phoff, encoded.size()) ||
        std::memcmp(encoded.data(), bytes.data() + elf.e_phoff, encoded.size()) != 0)
      __builtin_trap();
  }
  for (const auto& s : elf.sections) {
    if (s.type == formats::k_sht_rela) {
      auto rela = formats::rela_table(bytes, elf, s);
      if (!rela) continue;
      for (uint64_t i = 0; i < rela->size(); ++i)
        if (!inside(bytes, (*rela)[i].at, formats::k_elf64_rela_size)) __builtin_trap();
    } else if (s.type == formats::k_sht_relr) {
      auto relr = formats::relr_table(bytes, elf, s);
      if (!relr) continue;
      uint64_t places = 0;
      relr->for_each_place([&](uint64_t place) {
        ++places;
        if (segments) {
          if (auto at = formats::file_offset_of(*segments, place, 8))
            (void)read_le<uint64_t>(bytes, *at);
        }
      });
      if (places > relr->words() * 63) __builtin_trap();
    } else if (s.type == formats::k_sht_symtab || s.type == formats::k_sht_dynsym) {
      auto symbols = formats::symbol_table(bytes, elf, s);
      if (!symbols) continue;
      for (uint64_t i = 0; i < symbols->size(); ++i) {
        const auto sym = (*symbols)[i];
        if (!inside(bytes, sym.at, formats::k_elf64_sym_size)) __builtin_trap();
        auto name = symbols->name(sym);
        if (!name) continue;
        const auto* first = reinterpret_cast<const std::byte*>(name->data());
        if (name->size() > 4096 || first < bytes.data() ||
            first + name->size() > bytes.data() + bytes.size())
          __builtin_trap();
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tailor::Bytes bytes(reinterpret_cast<const std::byte*>(data), size);
  auto elf = tailor::formats::parse_elf(bytes);
  if (elf) {
    for (const auto& s : elf->sections) (void)tailor::formats::section_bytes(bytes, s);
    walk_tables(bytes, *elf);
  }
  tailor::inspect::LibraryOptions options;
  options.verify_payloads = true;
  options.max_entry_bytes = 1 << 20;
  (void)tailor::inspect::analyze_library(bytes, "fuzz.so", options);
  return 0;
}
