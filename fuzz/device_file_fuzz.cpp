// libFuzzer target for device code files (formats/device_file.h, inspect/device_file_report.h):
// whatever the bytes, classification and the analysis of each kind (cubin, PTX, fatbin file)
// give a result or an Error, never a crash; a cubin's target names an SM, a PTX file is one
// entry, and nothing keeps memory in proportion to sizes the input merely claims.
#include <cstddef>
#include <cstdint>

#include "formats/device_file.h"
#include "inspect/device_file_report.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tailor;
  Bytes bytes(reinterpret_cast<const std::byte*>(data), size);
  (void)formats::classify_device_file(bytes);
  inspect::LibraryOptions options;
  options.verify_payloads = true;
  options.max_entry_bytes = 1 << 20;
  for (auto kind : {formats::DeviceFileKind::cubin, formats::DeviceFileKind::ptx,
                    formats::DeviceFileKind::fatbin}) {
    auto file = inspect::analyze_device_file(bytes, "fuzz.bin", kind, options);
    if (!file) continue;
    if (kind != formats::DeviceFileKind::fatbin &&
        (file->targets.size() != 1 || file->targets[0].entries != 1))
      __builtin_trap();
    if (kind == formats::DeviceFileKind::cubin && file->targets[0].code.arch == 0) __builtin_trap();
  }
  return 0;
}
