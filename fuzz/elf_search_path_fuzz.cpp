// libFuzzer target for the search-path rewrite (formats/elf_search_path): any input gives
// edits or an Error, never a crash or a write outside the file. What it promises is checked:
// an error leaves the bytes as they were; a success keeps the size, leaves a file the ELF
// reader reads whenever it read the input, with only kept entries in RUNPATH and RPATH, and
// a second pass finds nothing left to do.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "formats/elf.h"
#include "formats/elf_search_path.h"

namespace {
bool keep(std::string_view entry) { return entry.starts_with("$ORIGIN"); }
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tailor;
  const auto* first = reinterpret_cast<const std::byte*>(data);
  std::vector<std::byte> file(first, first + size);
  const bool parsed = formats::parse_elf(Bytes(first, size)).has_value();
  auto edits = formats::rewrite_search_paths(file, keep);
  if (!edits) {
    if (file != std::vector<std::byte>(first, first + size)) __builtin_trap();
    return 0;
  }
  if (file.size() != size) __builtin_trap();
  if (edits->empty()) {
    if (file != std::vector<std::byte>(first, first + size)) __builtin_trap();
    return 0;
  }
  auto after = formats::parse_elf(Bytes(file.data(), file.size()));
  if (parsed && !after) __builtin_trap();
  if (after) {
    for (const auto* list : {&after->runpath, &after->rpath})
      for (const auto& e : *list)
        if (!keep(e)) __builtin_trap();
  }
  auto again = formats::rewrite_search_paths(file, keep);
  if (again && !again->empty()) __builtin_trap();
  return 0;
}
