// The file-system calls the one builder (builder/run_plan.h) makes itself, behind one
// interface (ninja's DiskInterface): its run log, the ninja logs it reads back, the resume
// state, the unit times it hands to the build driver, the scratch folders it makes. The
// real file system is RealDiskInterface; unit tests hand in an in-memory one and run a
// whole build with no disk (tests/support/memory_disk.h).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/expected.h"

namespace tailor {

/// A file written line by line while a build runs (the run log).
class LogFile {
 public:
  virtual ~LogFile() = default;
  virtual void append(std::string_view text) = 0;
  /// What was appended reaches the disk (a reader of the log sees it).
  virtual void flush() = 0;
  /// An error when some of what was appended could not be written.
  virtual Expected<void> close() = 0;
};

/// One file found under a folder.
struct DiskFile {
  std::string path;
  uint64_t size = 0;
  int64_t mtime_ns = 0;  ///< its last write, for ordering
};

class DiskInterface {
 public:
  virtual ~DiskInterface() = default;
  virtual bool exists(const std::string& path) = 0;
  virtual bool is_directory(const std::string& path) = 0;
  /// The whole regular file of at most `max_bytes`; nullopt when it cannot be read or is
  /// larger.
  virtual std::optional<std::string> read(const std::string& path, uint64_t max_bytes) = 0;
  /// Written atomically (a file beside it renamed over it); `executable` sets 0755.
  virtual Expected<void> write(const std::string& path, std::string_view text, bool executable) = 0;
  /// Created (truncated) for appending; an error naming the path when it cannot be.
  virtual Expected<std::unique_ptr<LogFile>> create_log(const std::string& path) = 0;
  /// `link` becomes a symbolic link to `target`, replacing what was there atomically.
  virtual Expected<void> point_link(const std::string& link, const std::string& target) = 0;
  /// The names in a folder (not recursive); empty when it cannot be read.
  virtual std::vector<std::string> list(const std::string& dir) = 0;
  /// The regular files named `name` under `root`, at most `max_depth` folders down and
  /// `max_seen` entries looked at, sorted by path.
  virtual std::vector<DiskFile> find_files(const std::string& root, std::string_view name,
                                           int max_depth, size_t max_seen) = 0;
  virtual Expected<void> make_dirs(const std::string& path) = 0;
  virtual void remove(const std::string& path) = 0;
  virtual void remove_all(const std::string& path) = 0;
};

/// The real file system.
class RealDiskInterface : public DiskInterface {
 public:
  bool exists(const std::string& path) override;
  bool is_directory(const std::string& path) override;
  std::optional<std::string> read(const std::string& path, uint64_t max_bytes) override;
  Expected<void> write(const std::string& path, std::string_view text, bool executable) override;
  Expected<std::unique_ptr<LogFile>> create_log(const std::string& path) override;
  Expected<void> point_link(const std::string& link, const std::string& target) override;
  std::vector<std::string> list(const std::string& dir) override;
  std::vector<DiskFile> find_files(const std::string& root, std::string_view name, int max_depth,
                                   size_t max_seen) override;
  Expected<void> make_dirs(const std::string& path) override;
  void remove(const std::string& path) override;
  void remove_all(const std::string& path) override;
};

}  // namespace tailor
