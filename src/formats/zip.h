// ZIP archives (PKWARE APPNOTE 6.3, with zip64) as used by wheels: the end of central
// directory, the central directory and each local header, read with bounds checks from a
// mapped file. Members are never written to disk: a stored member is a view into the
// file, a deflated one is inflated into memory (libdeflate when the whole member is
// wanted, zlib when streaming). Hostile archives are refused with one line naming the
// entry and its offset: names that escape the archive (`..`, absolute, backslashes),
// sizes or offsets outside the file, overlapping members, and zip bombs (a declared size
// over the limit, an absurd ratio, or output past the declared size).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "util/byte_reader.h"
#include "util/expected.h"

namespace tailor::formats {

inline constexpr uint16_t k_zip_stored = 0;
inline constexpr uint16_t k_zip_deflated = 8;

struct ZipLimits {
  uint64_t max_entries = 1'000'000;
  /// Largest uncompressed member accepted (the biggest CUDA library in a torch wheel is
  /// about 1.5 GB).
  uint64_t max_member_bytes = uint64_t{8} << 30;
  /// A deflated member larger than ratio_floor_bytes may expand at most this many times;
  /// real libraries and sources stay under 20:1, deflate's ceiling is about 1032:1.
  uint64_t max_ratio = 200;
  uint64_t ratio_floor_bytes = uint64_t{16} << 20;
};

struct ZipEntry {
  std::string name;
  uint16_t method = 0;
  uint16_t flags = 0;
  uint32_t crc32 = 0;
  uint64_t compressed_size = 0, uncompressed_size = 0;
  uint64_t central_offset = 0;       // of its central directory record
  uint64_t local_header_offset = 0;  // of its local header
  uint64_t data_offset = 0;          // of its (compressed) bytes

  bool is_directory() const { return !name.empty() && name.back() == '/'; }
};

struct ZipArchive {
  std::vector<ZipEntry> entries;  // central directory order
  uint64_t central_directory_offset = 0;
  bool zip64 = false;
};

/// Parses the directory and every local header. Errors name the offset and the entry.
Expected<ZipArchive> parse_zip(Bytes file, const ZipLimits& limits = {});

/// The member's uncompressed bytes: a view into `file` for stored members, else a view of
/// `buffer`, which is resized to the declared size and filled by libdeflate. The size
/// and CRC-32 are verified.
Expected<Bytes> extract_member(Bytes file, const ZipEntry& entry, std::vector<std::byte>& buffer,
                               const ZipLimits& limits = {});

/// Streams the member's uncompressed bytes to `sink` in chunks (zlib, 256 KiB at a time),
/// so memory stays bounded whatever the member's size; verifies size and CRC-32 at the end.
Expected<void> stream_member(Bytes file, const ZipEntry& entry,
                             const std::function<void(Bytes chunk)>& sink,
                             const ZipLimits& limits = {});

/// CRC-32 (the zip polynomial) of bytes, continuing from `crc`.
uint32_t zip_crc32(uint32_t crc, Bytes bytes);

}  // namespace tailor::formats
