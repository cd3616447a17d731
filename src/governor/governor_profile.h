// What earlier builds taught the memory governor (governor/memory_governor.h). A build
// learns the peak RSS of its compile jobs per kind only as jobs finish; a package with a
// few long translation units has started them all under the recipe's memory per job (a
// worst case over archs and options) by then. So each build's measured peaks are kept in
// the user cache, keyed by what decides them (the package, its recipe, the targets and
// nvcc's threads), and the next build of the same key starts from them.
//
// <user cache>/tailor/governor/peaks.json, schema tailor.governor-peaks/1, read and
// rewritten under a lock (util/files.h) and replaced atomically; at most
// governor.toml's profile.max_entries keys, the least recently used dropped. The file is
// tailor's own but not trusted: a damaged one is ignored (the build starts from the
// recipe) and replaced by the next build's record.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "util/expected.h"

namespace tailor::governor {

struct GovernorProfile {
  std::map<std::string, uint64_t> peaks;  ///< job kind ("nvcc --threads 4", "cc1plus") -> bytes
  /// How long each compile unit took, ms, by its source relative to the package
  /// (outputs/ninja_log.h unit_times): the next build starts the longest first.
  std::map<std::string, uint64_t> unit_ms;
  uint64_t builds = 0;  ///< builds that measured this key
  std::string updated;  ///< ISO 8601 UTC
};

/// <user cache>/tailor/governor/peaks.json.
std::string governor_profile_path();
/// "causal-conv1d recipe=causal-conv1d targets=sm_90 nvcc-threads=4".
std::string governor_profile_key(const std::string& package, const std::string& recipe,
                                 const std::vector<std::string>& targets, int nvcc_threads);
/// The key's entry; nullopt when the file or the key is missing. A damaged file is an
/// error naming it.
Expected<std::optional<GovernorProfile>> read_governor_profile(const std::string& path,
                                                               const std::string& key);
/// How a build's measured peaks change the kept ones.
enum class PeakUpdate {
  replace,     ///< the build ran every compile: its peaks are the package's now
  raise_only,  ///< it ran some: its peaks may raise the kept ones, never lower them
};

/// What a build did not compile itself.
struct BuildReuse {
  bool cache_used = false;               ///< a compiler cache wrapped the compiles
  std::optional<uint64_t> cache_hits;    ///< its hits in this build; nullopt: unknown
  bool tree_kept = false;                ///< an earlier run's build tree was kept
  std::optional<uint64_t> units_reused;  ///< Ninja steps it left up to date; nullopt: unknown
};

/// `replace` only for a build known to have compiled every unit itself: no cache hit
/// (or no cache) and no Ninja step reused; `raise_only` otherwise, unknown counts
/// included. The governor already ignores each job served from the cache
/// (memory_governor.h, job_compiles), but the jobs that did compile in a build with hits
/// are a subset of the package's, and the heaviest unit may be among the hits: their
/// peak is a lower bound of the package's, which can raise the kept peak but not lower
/// it. (A 100%-hit rebuild lowered the kept nvcc peak from 561 to 104 MiB, and the next
/// uncached build then started jobs as if they needed 98 MiB; they took 584.) Any hit
/// counts, not a high rate: one hidden unit can be the heaviest.
PeakUpdate peak_update(const BuildReuse& reuse);

/// Records one build's measured peaks and unit times under `key`: kinds and units it
/// measured replace the old values (`raise_only`: only larger ones, and no unit not kept
/// yet: a cache hit's time says nothing of the compile's), the others are kept (at most
/// 4096 units, the longest). A damaged file starts again.
Expected<void> record_governor_profile(const std::string& path, const std::string& key,
                                       const std::map<std::string, uint64_t>& measured,
                                       size_t max_entries, PeakUpdate update,
                                       const std::map<std::string, uint64_t>& unit_ms = {});

}  // namespace tailor::governor
