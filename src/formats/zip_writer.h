// A deterministic zip writer (PKWARE APPNOTE 6.3, zip64 where sizes, offsets or the entry
// count need it): the same members in the same order give the same bytes, whatever the
// host, the clock or the source files' own times and owners. Every member gets one fixed
// time, the Unix permission bits it is given, "version made by" Unix 4.5, no extra fields
// (except zip64's when needed), no comments, raw deflate from zlib at a fixed level.
// Members stream from memory, from a file, or from a producer (e.g. another archive's
// member), 1 MiB at a time, so a large library is never held in memory. The archive is
// written to a temporary file beside the destination and renamed over it on commit(); a
// writer destroyed before commit() removes its temporary file, so a failure never leaves
// a partial archive.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_set>
#include <variant>
#include <vector>

#include "util/byte_reader.h"
#include "util/expected.h"
#include "util/files.h"
#include "util/sha256.h"

namespace tailor::formats {

/// 1980-01-01T00:00:00Z: the earliest time a zip (DOS) timestamp can hold.
inline constexpr int64_t k_zip_earliest_time = 315532800;

/// A member read from a file on disk while it is written.
struct ZipFileSource {
  std::string path;
};

/// A member made by a producer that hands exactly `size` bytes to the sink, in chunks.
struct ZipStreamSource {
  uint64_t size = 0;
  std::function<Expected<void>(const std::function<void(Bytes chunk)>& sink)> produce;
};

/// The member's bytes: in memory, a file, or a producer.
using ZipMemberSource = std::variant<std::string, ZipFileSource, ZipStreamSource>;

struct ZipWriteEntry {
  std::string name;  ///< relative, '/'-separated; no directories, no "..", unique
  ZipMemberSource source;
  uint32_t mode = 0644;  ///< permission bits; the member is a regular file
};

/// A member copied in its compressed form (see ZipWriter::add_raw).
struct ZipRawMember {
  std::string name;
  uint32_t mode = 0644;
  uint16_t method = 8;  ///< 0 stored, 8 deflated
  uint32_t crc32 = 0;
  uint64_t size = 0;  ///< uncompressed
  Bytes compressed;   ///< exactly the member's stored bytes
};

struct ZipWriteOptions {
  /// Seconds since 1970 (UTC) given to every member; clamped to the DOS range
  /// 1980-01-01 .. 2107-12-31.
  int64_t mtime = k_zip_earliest_time;
  /// zlib level 1..9 (deflate) or 0 (stored).
  int level = 6;
  /// Test hook: zip64 records for every member and the end record even where 32 bits fit.
  bool force_zip64 = false;
};

struct ZipWrittenMember {
  std::string name;
  uint64_t size = 0;  ///< uncompressed
  uint64_t compressed_size = 0;
  uint32_t crc32 = 0;
  Sha256::Digest sha256{};  ///< of the uncompressed bytes (for RECORD)
};

class ZipWriter {
 public:
  /// Opens a temporary file beside `path`; nothing appears at `path` before commit().
  static Expected<ZipWriter> create(const std::string& path, const ZipWriteOptions& options = {});
  ZipWriter(ZipWriter&& other) noexcept;
  ZipWriter& operator=(ZipWriter&&) = delete;
  ZipWriter(const ZipWriter&) = delete;
  ZipWriter& operator=(const ZipWriter&) = delete;
  ~ZipWriter();

  /// Appends one member. An error (bad name, duplicate, unreadable or changing file, a
  /// producer that fails or gives another size) leaves the writer unusable.
  Expected<ZipWrittenMember> add(const ZipWriteEntry& entry);
  /// Appends a member whose compressed bytes are copied as they are from another archive
  /// (method stored or deflated, with its CRC-32 and sizes): no inflate, no deflate. The
  /// result's sha256 is left zero; the caller keeps the member's RECORD row.
  Expected<ZipWrittenMember> add_raw(const ZipRawMember& member);
  /// Writes the central directory and the end records, syncs, and renames the temporary
  /// file over `path` (mode 0644).
  Expected<void> commit();

  uint64_t members() const { return m_central.size(); }

 private:
  ZipWriter() = default;
  Expected<void> write_bytes(Bytes bytes);
  Expected<void> flush();
  Expected<void> fail(Error error);
  Expected<void> check_name(const std::string& name);
  /// Writes `bytes` over what was written at `at` (still buffered, or on disk).
  Expected<void> patch_written(uint64_t at, const std::vector<std::byte>& bytes);
  void add_central(const std::string& name, uint16_t flags, uint16_t method, uint32_t crc,
                   uint64_t size, uint64_t written, uint64_t header_offset, bool zip64_sizes,
                   bool zip64_offset, uint32_t mode);
  void discard();

  std::string m_path;
  AtomicFile m_file;  ///< the archive being written beside m_path
  ZipWriteOptions m_options;
  uint16_t m_dos_time = 0, m_dos_date = 0;
  uint64_t m_offset = 0;  ///< bytes written so far (buffered included)
  std::vector<std::byte> m_buffer;
  std::vector<std::vector<std::byte>> m_central;  ///< one central record per member
  std::unordered_set<std::string> m_names;
  std::vector<std::byte> m_deflated;  ///< deflate's output, reused across members
  bool m_failed = false, m_committed = false;
};

/// Writes `entries` in the given order to `path` (atomically, see ZipWriter).
Expected<std::vector<ZipWrittenMember>> write_zip(const std::string& path,
                                                  const std::vector<ZipWriteEntry>& entries,
                                                  const ZipWriteOptions& options = {});

/// DOS date (high 16 bits) and time (low 16 bits) of a Unix time, UTC, clamped to the
/// range DOS time holds; seconds are rounded down to even.
uint32_t dos_date_time(int64_t unix_seconds);

/// "zlib 1.2.13, level 6": what decides the deflate bytes, for provenance records.
std::string zip_writer_compressor(const ZipWriteOptions& options = {});

}  // namespace tailor::formats
