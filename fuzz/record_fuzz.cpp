// libFuzzer target for RECORD (CSV with optional quoting): rows or an Error naming the
// line, never a crash; every row's line number lies inside the text.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "formats/wheel.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto rows = tailor::formats::parse_record(text);
  if (!rows) return 0;
  for (const auto& r : *rows)
    if (r.line == 0 || r.line > size + 1) std::abort();
  return 0;
}
