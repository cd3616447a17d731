// libFuzzer target for the fatbin container walk and payload decompression over raw
// section bytes (seeds: the .nv_fatbin sections of the fixtures), and for the search of
// embedded containers over the same bytes (as a section at an address whose alignment
// the first byte picks): containers it reports lie inside the bytes, in order, apart.
#include <cstddef>
#include <cstdint>

#include "formats/decompress.h"
#include "formats/fatbin.h"

namespace {

void check_embedded(tailor::Bytes bytes, uint64_t address) {
  auto found = tailor::formats::find_embedded_fatbins(bytes, 0, address);
  if (!found) return;  // only the bound on failed candidates' work
  uint64_t end = 0;
  for (const auto& c : *found) {
    if (c.offset < end || c.size > bytes.size() - c.offset || (address + c.offset) % 8 ||
        c.entries.empty())
      __builtin_trap();
    end = c.offset + c.size;
    for (const auto& e : c.entries) {
      if (e.header_offset < c.offset || e.payload_offset() + e.stored_size > end) __builtin_trap();
      (void)tailor::formats::decompress_entry(bytes, e, 1 << 20);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tailor::Bytes bytes(reinterpret_cast<const std::byte*>(data), size);
  check_embedded(bytes, size ? data[0] % 8 : 0);
  auto containers = tailor::formats::parse_fatbin_section(bytes, 0);
  if (!containers) return 0;
  for (const auto& c : *containers) {
    for (const auto& e : c.entries) {
      (void)tailor::formats::decompress_entry(bytes, e, 1 << 20);
    }
  }
  return 0;
}
