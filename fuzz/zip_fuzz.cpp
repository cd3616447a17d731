// libFuzzer target for the zip reader: parse the directory, then read every member both
// ways (whole-buffer libdeflate and igzip streaming) under small limits so a fuzzed zip
// bomb cannot exhaust memory. Both readers must agree on success and on the bytes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "formats/zip.h"

using namespace tailor;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Bytes file(reinterpret_cast<const std::byte*>(data), size);
  formats::ZipLimits limits;
  limits.max_member_bytes = 16 << 20;
  limits.ratio_floor_bytes = 1 << 20;
  limits.max_entries = 10000;
  auto archive = formats::parse_zip(file, limits);
  if (!archive) return 0;
  std::vector<std::byte> buffer;
  for (const auto& entry : archive->entries) {
    auto whole = formats::extract_member(file, entry, buffer, limits);
    std::string streamed;
    auto stream = formats::stream_member(
        file, entry, [&](Bytes c) { streamed.append(as_chars(c)); }, limits);
    if (whole && stream && as_chars(*whole) != streamed) __builtin_trap();
    if (bool(whole) != bool(stream)) {
      // igzip and libdeflate may disagree on which error comes first, never on success
      // with different bytes; a member both call valid must be identical (checked above).
      // One succeeding while the other fails would mean a checking gap.
      __builtin_trap();
    }
  }
  return 0;
}
