// libFuzzer target for the wheel's text metadata: the file name, WHEEL and METADATA.
// Any bytes give a value or an Error, never a crash; a name that parses has tags.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "formats/wheel.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tailor::formats;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto name = parse_wheel_filename(text)) {
    if (name->tags().empty()) std::abort();
  }
  if (auto wheel = parse_wheel_file(text)) (void)wheel->tags.size();
  auto meta = parse_metadata(text);
  (void)normalize_distribution_name(meta.name);
  (void)normalize_distribution_name(text);
  return 0;
}
