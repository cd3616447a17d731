// ZIP archives (PKWARE APPNOTE 6.3, with zip64) as used by wheels: the end of central
// directory, the central directory and each local header, read with bounds checks from a
// mapped file. A stored member is a view into the file, a deflated one is inflated into
// memory whole (libdeflate) or streamed in chunks (ISA-L's igzip). Hostile archives are refused
// with one line naming the entry and its offset: names that escape the archive (`..`, absolute,
// backslashes), sizes or offsets outside the file, overlapping members, and zip bombs (a declared
// size over the limit, an absurd ratio, output past the declared size, or members that together
// declare more than the inflate budget).
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
  /// The largest real wheels have tens of thousands of members (torch: about 12,500).
  uint64_t max_entries = 200'000;
  /// Largest uncompressed member accepted (the biggest CUDA library in a torch wheel is
  /// about 1.5 GB).
  uint64_t max_member_bytes = uint64_t{8} << 30;
  /// A deflated member larger than ratio_floor_bytes may expand at most this many times;
  /// real libraries and sources stay under 20:1, deflate's ceiling is about 1032:1.
  uint64_t max_ratio = 200;
  uint64_t ratio_floor_bytes = uint64_t{16} << 20;
  /// The inflate budget of the whole archive: the declared sizes of all members together
  /// may not pass max_total_bytes, nor, once past total_ratio_floor_bytes, expand the
  /// archive more than max_total_ratio times. This bounds the work of hashing every member
  /// (RECORD needs it) before any is inflated: a 16 MB archive of a thousand 16 MiB members
  /// of zeros is refused at once instead of inflating 16 GiB. Real wheels stay under 5:1.
  uint64_t max_total_bytes = uint64_t{64} << 30;
  uint64_t max_total_ratio = 100;
  uint64_t total_ratio_floor_bytes = uint64_t{1} << 30;
};

struct ZipEntry {
  std::string name;
  uint16_t method = 0;
  uint16_t flags = 0;
  uint16_t dos_time = 0, dos_date = 0;  // the central directory's modification time fields
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

/// Called with a range of the archive (offset, size) that a stream has consumed, in
/// batches of a few MiB: a caller reading a memory map can hand those pages back.
using ConsumedRange = std::function<void(uint64_t offset, uint64_t size)>;

/// Parses the directory and every local header. Errors name the offset and the entry.
/// `local_header_read` (optional) is told the range of each local header once read, so
/// that a caller over a memory map can hand its pages back (a wheel of 16,000 small
/// members would otherwise be mapped whole by the header reads).
Expected<ZipArchive> parse_zip(Bytes file, const ZipLimits& limits = {},
                               const ConsumedRange& local_header_read = nullptr);

/// The member's uncompressed bytes: a view into `file` for stored members, else a view of
/// `buffer`, which is resized to the declared size and filled by libdeflate. The size
/// and CRC-32 are verified.
Expected<Bytes> extract_member(Bytes file, const ZipEntry& entry, std::vector<std::byte>& buffer,
                               const ZipLimits& limits = {});

/// The chunk size of stream_member: the most it holds of a member at once.
inline constexpr size_t k_zip_stream_chunk = 256 * 1024;

/// Streams the member's uncompressed bytes to `sink` in chunks (igzip, k_zip_stream_chunk
/// at a time), so memory stays bounded whatever the member's size; verifies size and
/// CRC-32 at the end, after the last chunk was handed over (a sink must not trust what it
/// saw until this returns success).
Expected<void> stream_member(Bytes file, const ZipEntry& entry,
                             const std::function<void(Bytes chunk)>& sink,
                             const ZipLimits& limits = {}, const ConsumedRange& consumed = nullptr);

/// The first `max_bytes` (or fewer, for a shorter member) uncompressed bytes of the member,
/// inflating no more than that: enough to tell an ELF file from data without inflating
/// the rest. Its CRC-32 is not checked (the member is not read to its end).
Expected<std::string> peek_member(Bytes file, const ZipEntry& entry, size_t max_bytes,
                                  const ZipLimits& limits = {});

/// The permissions a member gets when written again: 0755 when a Unix zip stored it with
/// any execute bit, else 0644 (read from its central record: "version made by" and the
/// external attributes).
uint32_t normal_mode(Bytes file, const ZipEntry& entry);

/// CRC-32 (the zip polynomial) of bytes, continuing from `crc`.
uint32_t zip_crc32(uint32_t crc, Bytes bytes);

}  // namespace tailor::formats
