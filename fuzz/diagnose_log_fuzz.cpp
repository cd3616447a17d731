// libFuzzer target for the build-log readers of `tailor explain`: the first error block
// and the failure patterns. Any text gives a result, never a crash; a block's line
// numbers are ordered and its lines are the ones it claims.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "diagnose/diagnosis.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tailor::diagnose;
  std::string_view log(reinterpret_cast<const char*>(data), size);
  if (auto block = first_error_block(log)) {
    if (block->first_line == 0 || block->last_line < block->first_line) std::abort();
    if (block->lines.size() != block->last_line - block->first_line + 1) std::abort();
  }
  for (const auto& d : diagnose_log(log))
    if (d.line_number == 0 || d.pattern_id.empty()) std::abort();
  return 0;
}
