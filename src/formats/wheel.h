// Wheel metadata (PEP 427, PEP 491, packaging's tag rules): the file name, the
// `*.dist-info/WHEEL` file (Tag lines), `RECORD` (CSV of path, hash, size) and the few
// `METADATA` fields inspect shows. Text in, data out; no policy.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/expected.h"
#include "util/sha256.h"

namespace tailor::formats {

/// The member `tailor slim` adds to a wheel's .dist-info: what it kept and removed.
inline constexpr const char* k_tailor_slim_marker = "tailor-slim.json";

/// Size caps of the metadata files, checked against a member's declared size before it is
/// inflated (and again on the text): real WHEEL files are a few hundred bytes, METADATA
/// with a long description some hundred KiB, RECORD about 120 bytes per member.
struct WheelLimits {
  uint64_t max_wheel_file_bytes = uint64_t{1} << 20;
  uint64_t max_metadata_bytes = uint64_t{8} << 20;
  uint64_t record_bytes_per_member = 4096;          // a RECORD may hold this much per member...
  uint64_t record_bytes_floor = uint64_t{1} << 20;  // ...plus this...
  uint64_t max_record_bytes = uint64_t{128} << 20;  // ...but never more than this
  uint64_t record_extra_rows = 1024;  // rows beyond the member count (listed, not present)

  /// The RECORD size cap for an archive of `members` members.
  uint64_t record_cap(uint64_t members) const {
    uint64_t proportional = record_bytes_floor + members * record_bytes_per_member;
    return proportional < max_record_bytes ? proportional : max_record_bytes;
  }
};

struct WheelName {
  std::string distribution;  // as in the file name: "torch"
  std::string version;       // full, with any local label: "2.11.0+cu130"
  std::string local_label;   // "cu130", empty when none
  std::string build;         // optional build tag, empty when none
  std::vector<std::string> python_tags, abi_tags, platform_tags;  // dotted sets expanded

  /// Every python-abi-platform combination, in file-name order.
  std::vector<std::string> tags() const;
};

/// Parses `{name}-{version}(-{build})?-{python}-{abi}-{platform}.whl` (the directory part
/// is ignored). Errors name the part that is wrong.
Expected<WheelName> parse_wheel_filename(std::string_view path);

struct WheelFile {
  std::string wheel_version;  // "Wheel-Version: 1.0"
  std::string generator;
  std::optional<bool> root_is_purelib;
  std::vector<std::string> tags;  // "Tag:" lines, in order
  std::string build;
};

/// Parses the WHEEL file (email-header style "Key: value" lines), at most
/// WheelLimits::max_wheel_file_bytes of it.
Expected<WheelFile> parse_wheel_file(std::string_view text);

struct RecordRow {
  std::string path;
  std::string hash_algorithm;  // "sha256"; empty when the row has no hash (RECORD itself)
  std::string hash_value;      // urlsafe base64 without padding, as written
  std::optional<uint64_t> size;
  size_t line = 0;  // 1-based, for messages
};

/// Parses RECORD (CSV with optional quoting). A malformed row is an error naming its line,
/// and so is a row past max_rows (a RECORD cannot list many more files than the archive
/// holds).
Expected<std::vector<RecordRow>> parse_record(std::string_view text,
                                              uint64_t max_rows = UINT64_MAX);

struct WheelMetadata {
  std::string name, version;
  std::vector<std::string> requires_dist;
  std::string requires_python;
};

/// The header part of METADATA (up to the first blank line); text past
/// WheelLimits::max_metadata_bytes is not read.
WheelMetadata parse_metadata(std::string_view text);

/// One RECORD field, quoted as Python's csv module quotes it (when it holds , " or a
/// line break).
std::string record_field(const std::string& text);

/// A RECORD hash field: "sha256=" and the digest in urlsafe base64 without padding.
std::string record_digest(const Sha256::Digest& digest);

/// PEP 503 normalization, used to compare names: lowercase, runs of -_. become '-'.
std::string normalize_distribution_name(std::string_view name);

}  // namespace tailor::formats
