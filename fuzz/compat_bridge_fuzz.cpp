// libFuzzer target for the compatibility layer over a package's source (the tokenizer and every
// rewrite of data/compat/removals.toml, with today's stack): any bytes as a .cu file (and the
// same as a header beside it) give a result, never a crash; every change names a removal and a
// line of the file, and a file with no change is left byte for byte.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "compat/bridge.h"
#include "compat/removals.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tailor::compat;
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<SourceFile> files = {{"csrc/k.cu", text}, {"csrc/k.h", text}};
  std::vector<SourceFile> added;
  const Bridged out = bridge_files(files, added, StackVersions{"2.11.0+cu130", "13.0"}, removals());
  size_t lines = 1;
  for (char c : text) lines += c == '\n';
  bool changed_cu = false;
  for (const auto& c : out.changes) {
    if (c.removal.empty() || c.line == 0 || c.line > lines) std::abort();
    if (c.file == "csrc/k.cu") changed_cu = true;
  }
  if (!changed_cu && files[0].text != text) std::abort();
  return 0;
}
