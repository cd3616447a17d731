// Where a wheelhouse's files are read from: a folder (DIR, file:///DIR), a web server
// (http(s)://HOST/PATH: what pip reads too; plain GETs) or an S3 bucket
// (s3://BUCKET/PREFIX[?endpoint=URL&region=NAME], signed when the environment has keys).
// Every file is named by its path relative to the wheelhouse's root, and every read is
// bounded; what the files say is the caller's to check.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "util/expected.h"

namespace tailor::wheelhouse {

class WheelhouseStore {
 public:
  virtual ~WheelhouseStore() = default;
  /// The location for people (no credentials).
  virtual std::string describe() const = 0;
  /// The file `rel` whole, at most `max_bytes` (more is an error); nullopt when absent.
  virtual Expected<std::optional<std::string>> read(const std::string& rel,
                                                    uint64_t max_bytes) const = 0;
  /// The file `rel` copied to `dest` (through a temporary renamed over it), at most
  /// `max_bytes`, hashed as it is copied: its sha256, lowercase hex.
  virtual Expected<std::string> copy_to(const std::string& rel, const std::string& dest,
                                        uint64_t max_bytes) const = 0;
  /// Where `rel` is, for reports: a path or a URL.
  virtual std::string origin(const std::string& rel) const = 0;
};

/// The store of `location`: a folder or file:///DIR, http:// or https://, s3://. A file URL
/// naming a host, another scheme or a malformed URL is one error line.
Expected<std::unique_ptr<WheelhouseStore>> open_store(const std::string& location);

/// Whether `location` is an S3 one (s3://).
bool is_s3_location(const std::string& location);

}  // namespace tailor::wheelhouse
