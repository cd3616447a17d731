// Decompression of one fatbin entry's payload (raw LZ4 block or ZSTD frame) with a hard
// cap on the output, for `--verify-payloads` and tests. Never called by a plain inspect.
// verify_entry decodes in bounded memory (a declared 1 GiB costs at most ~70 MB).
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

/// Checks that the payload decodes to exactly its declared size without keeping the
/// output: entries up to 32 MiB are decoded in one piece, larger ones streamed (ZSTD
/// through a 128 KiB buffer with a window of at most 64 MiB, LZ4 through a 64 KiB ring).
/// Fails, naming the entry's file offset, on the errors of decompress_entry and when the
/// declared size is more than 1024 times the compressed size (a decompression bomb).
Expected<void> verify_entry(Bytes file, const FatbinEntry& entry, uint64_t max_output);

/// The length a raw LZ4 block decodes to, decoded through a 64 KiB ring (bounded
/// memory); an error when it is malformed or would exceed `limit`.
Expected<uint64_t> lz4_block_decoded_size(Bytes block, uint64_t limit);

}  // namespace tailor::formats
