// Decompression of one fatbin entry's payload (raw LZ4 block or ZSTD frame) with a hard
// cap on the output, for `--verify-payloads` and tests. Never called by a plain inspect.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "formats/fatbin.h"
#include "util/byte_reader.h"
#include "util/expected.h"

namespace tailor::formats {

/// The entry's payload, decompressed when it is compressed (copied otherwise). Fails,
/// naming the entry's file offset, when the payload is outside the file, the declared
/// size exceeds max_output, or the decoder's output length differs from the declared one.
Expected<std::vector<std::byte>> decompress_entry(Bytes file, const FatbinEntry& entry,
                                                  uint64_t max_output);

}  // namespace tailor::formats
