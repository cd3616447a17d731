// libFuzzer target for the ELF reader and the whole per-library analysis (which walks the
// fatbin sections it finds and searches every other allocated section for embedded
// containers): any input must give a report or an Error, never a crash, and never memory
// in proportion to sizes the input merely claims.
#include <cstddef>
#include <cstdint>

#include "formats/elf.h"
#include "inspect/library_report.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tailor::Bytes bytes(reinterpret_cast<const std::byte*>(data), size);
  auto elf = tailor::formats::parse_elf(bytes);
  if (elf) {
    for (const auto& s : elf->sections) (void)tailor::formats::section_bytes(bytes, s);
  }
  tailor::inspect::LibraryOptions options;
  options.verify_payloads = true;
  options.max_entry_bytes = 1 << 20;
  (void)tailor::inspect::analyze_library(bytes, "fuzz.so", options);
  return 0;
}
