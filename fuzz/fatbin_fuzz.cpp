// libFuzzer target for the fatbin container walk and payload decompression over raw
// section bytes (seeds: the .nv_fatbin sections of the fixtures).
#include <cstddef>
#include <cstdint>

#include "formats/decompress.h"
#include "formats/fatbin.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tailor::Bytes bytes(reinterpret_cast<const std::byte*>(data), size);
  auto containers = tailor::formats::parse_fatbin_section(bytes, 0);
  if (!containers) return 0;
  for (const auto& c : *containers) {
    for (const auto& e : c.entries) {
      (void)e.target_name();
      (void)tailor::formats::decompress_entry(bytes, e, 1 << 20);
    }
  }
  return 0;
}
