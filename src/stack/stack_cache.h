// What `tailor stack` keeps between runs beside its wheel files (stack.h: files by
// sha256), so that asking again costs seconds, not pip's whole resolution:
//  - pip's resolutions, keyed by everything pip is given (its command line: interpreter,
//    marker environment, tags, indexes, requirements; the variables set for it and the
//    PIP_* ones it inherits), reused while pip, asked the same again, fetches the same
//    bytes for every index page it read and sees the same requirement files,
//    configuration and installed distributions (data/stack/pip_target.py fingerprints
//    them); `--refresh` resolves again whatever is stored;
//  - each wheel's inspection, reduced to what stack judges (per library: machine, device
//    targets with entry counts, needed libraries and their kinds, C++ ABI), keyed by the
//    wheel's sha256 and this tailor build.
// A stored file that does not read is ignored with a warning and replaced, never an error.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "inspect/inspect_report.h"
#include "util/expected.h"
#include "util/process.h"

namespace tailor::stack {

/// 64 lowercase or uppercase hex digits: a sha256 that may name a file in the cache.
bool is_sha256_hex(std::string_view text);

// ---- resolutions ----------------------------------------------------------------------
/// The key of one pip resolution: sha256 over its command line (per-run paths replaced
/// by the caller), the variables set for it, and the PIP_* variables of `environment`
/// (pip reads them as options).
std::string resolution_key(const std::vector<std::string>& argv,
                           const std::map<std::string, std::optional<std::string>>& set_env,
                           const std::map<std::string, std::string>& environment);

/// Whether pip_target.py's fingerprints of now equal the stored ones: the same pages
/// (URL and sha256), requirement files, configuration, installed distributions,
/// find-links folders, Python and pip. Text that is not such an object never matches.
bool same_fingerprints(std::string_view stored, std::string_view now);

/// Whether a pip report may be stored and reused: every distribution is a wheel (an
/// sdist's metadata was built here, by this machine's tools) unless the run had
/// --no-deps, and none is a direct URL or path requirement (its bytes are not an index
/// page). False for text that is not a report.
bool reusable_report(std::string_view report, const std::vector<std::string>& argv);

struct StoredResolution {
  std::string key;
  std::string report;   ///< pip's report (JSON text)
  std::string seen;     ///< pip_target.py's fingerprints (JSON text)
  int64_t created = 0;  ///< unix seconds
};

/// Resolutions stored as DIR/<key>.json.
class ResolutionStore {
 public:
  explicit ResolutionStore(std::string dir) : m_dir(std::move(dir)) {}
  std::string path_of(const std::string& key) const;
  /// The stored resolution for `key`: nullopt when there is none, or when its file does
  /// not read as one (`warning` then says which file and why).
  std::optional<StoredResolution> load(const std::string& key, std::string& warning) const;
  Expected<void> store(const StoredResolution& resolution) const;

 private:
  std::string m_dir;
};

struct PipResolution {
  bool ok = false;          ///< pip exited 0 and its report is in `report`
  std::string report;       ///< pip's report (JSON text)
  std::string output;       ///< pip's stderr and stdout (a failed run)
  bool reused = false;      ///< a stored resolution that still holds
  int64_t resolved_at = 0;  ///< unix seconds of the pip run that made it
};

struct PipCacheOptions {
  std::string dir;       ///< where resolutions are kept; empty: none stored or reused
  bool refresh = false;  ///< pip resolves even when a stored resolution still holds
  /// Only a stored resolution that still holds: pip does not resolve (`ok` false, no output).
  bool stored_only = false;
  std::map<std::string, std::string> environment;  ///< the PIP_* variables pip inherits
  std::function<void(std::string_view)> progress;  ///< one line per step
  std::function<void(std::string_view)> warn;      ///< a stored file that does not read
  std::function<int64_t()> now;                    ///< unix seconds (tests fake it)
};

/// One `pip install --dry-run --report REPORT` through pip_target.py. `run` is the whole
/// command (its argv names `report_path`; its on_line shows pip's lines); `key_argv` is the
/// same argv with the per-run paths replaced; `scratch` is this run's own folder. A stored
/// resolution of the same key is checked first (the same command with TAILOR_PIP_CHECK:
/// pip fetches the pages it read again and stops before resolving) and reused when every
/// fingerprint is unchanged; otherwise pip resolves (with TAILOR_PIP_SEEN) and a reusable
/// result is stored. A failed check, or one pip cannot make, is a miss, never an error.
/// Errors are only those of running pip at all (interrupted, not started, timed out).
Expected<PipResolution> resolve_with_cache(CommandRunner& runner, const CommandSpec& run,
                                           const std::string& report_path,
                                           const std::vector<std::string>& key_argv,
                                           const std::string& scratch,
                                           const PipCacheOptions& options);

// ---- inspections ----------------------------------------------------------------------
/// This tailor build: its GNU build-id, else its version (inspections of another build
/// are not reused: the inspector or its data may differ).
std::string build_identity();

/// The part of a wheel's inspection stack judges, as JSON for `build`.
std::string inspection_to_json(const inspect::WheelReport& wheel, std::string_view build);
/// A stored inspection as a WheelReport named `path`. An error when the text is not one,
/// or is another build's (`stale` is then set: not a corrupt file, just an old one).
Expected<inspect::WheelReport> inspection_from_json(std::string_view text, std::string_view build,
                                                    const std::string& path, bool* stale = nullptr);

/// Inspections stored as DIR/<sha256[0:2]>/<sha256>.json.
class InspectionStore {
 public:
  InspectionStore(std::string dir, std::string build)
      : m_dir(std::move(dir)), m_build(std::move(build)) {}
  /// The stored inspection of the wheel with this sha256, named `path`; nullopt when
  /// none is stored for this build, or when the file does not read (`warning` says so).
  std::optional<inspect::WheelReport> load(const std::string& sha256, const std::string& path,
                                           std::string& warning) const;
  Expected<void> store(const std::string& sha256, const inspect::WheelReport& wheel) const;

 private:
  std::string m_dir, m_build;
};

}  // namespace tailor::stack
