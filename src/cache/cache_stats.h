// What a compiler cache's own statistics say, read once per tool: `sccache --show-stats
// --stats-format json` and `ccache --print-stats` each have one parser here, whose one
// result (ToolStats) carries what every user takes from it (a build's hits and misses per
// step kind, sccache-dist's counts per server, `tailor cache status`'s location and size),
// and one function runs the command. The build report's counts are a delta of two reads
// (before and after the build: this build's, as long as no other build shares the cache
// at the same time; sccache builds have a server of their own, so their counts are).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "cache/cache_settings.h"
#include "util/expected.h"
#include "util/process.h"

namespace tailor::cache {

struct CacheCount {
  uint64_t hits = 0;
  uint64_t misses = 0;
  bool operator==(const CacheCount&) const = default;
};

struct CacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  /// Requests the tool could not cache (unsupported flags, linking, ...).
  uint64_t uncacheable = 0;
  /// Reads or writes of the storage that failed (an unreachable Redis counts here).
  uint64_t errors = 0;
  /// Per step kind ("C/C++", "CUDA (nvcc)", "PTX (cicc)", "cubin (ptxas)"): sccache counts
  /// each step of an nvcc call; ccache counts whole compiles only (empty here).
  std::map<std::string, CacheCount> categories;
};
/// after - before, clamped at 0 (a cache cleared mid-build must not wrap around).
CacheStats stats_delta(const CacheStats& before, const CacheStats& after);

namespace dist {
/// sccache-dist's counts (cache/sccache_dist.h).
struct DistStats {
  uint64_t compilations = 0;   ///< compiler runs, local or remote (nvcc's steps each count)
  uint64_t dist_compiles = 0;  ///< of those, run on a build server
  uint64_t dist_errors = 0;    ///< distributed attempts that failed (and ran locally)
  uint64_t not_distributable =
      0;  ///< requests sccache could not handle (unsupported compiler, not a compile)
  std::map<std::string, uint64_t> per_server;  ///< server address -> compiles
};
DistStats dist_stats_delta(const DistStats& before, const DistStats& after);
}  // namespace dist

/// Everything tailor reads from one statistics command.
struct ToolStats {
  CacheStats counts;
  /// sccache: compilations, and the compiles each sccache-dist server ran (zero without
  /// dist, and for ccache).
  dist::DistStats dist;
  /// sccache's cache_location ("Local disk: \"/root/.cache/sccache\"", "redis, name:
  /// redis://user:***@host:6379, prefix: /"), passwords hidden, at most 1024 bytes; empty
  /// for ccache, which does not say.
  std::string location;
  /// sccache's cache_size (null for Redis and S3, which do not say), ccache's
  /// cache_size_kibibyte * 1024; nullopt when not said.
  std::optional<uint64_t> size_bytes;
};

/// The one reader of `sccache --show-stats --stats-format json` (0.9 to 0.16): a JSON
/// object whose "stats" is an object. Keys it does not use are ignored and a missing or
/// null one counts as zero (older sccache lack some); one of the wrong type, or a count
/// that is not an integer from 0 to 2^63, is an error naming the key: the document is not
/// the format tailor knows, and partial counts would be taken as real.
Expected<ToolStats> parse_sccache_show_stats(std::string_view json);
/// The one reader of `ccache --print-stats` (tab-separated `key\tvalue` lines, ccache >=
/// 4.4): hits, misses, the calls it could not cache, remote storage errors and timeouts,
/// and the size. direct_cache_hit and cache_miss must be there; a key tailor reads whose
/// value is not a count is an error naming it.
Expected<ToolStats> parse_ccache_print_stats(std::string_view text);
/// parse_sccache_show_stats's counts (a build report's).
Expected<CacheStats> parse_sccache_stats_json(std::string_view json);

/// Runs the tool's statistics command (`ccache --print-stats`, `sccache --show-stats
/// --stats-format json`) with `env` over the caller's environment (CCACHE_DIR decides
/// whose statistics ccache prints; SCCACHE_SERVER_PORT which server sccache asks) and
/// returns what it printed; an error says which command failed and why.
Expected<std::string> run_stats_command(CacheTool tool, const std::string& executable,
                                        CommandRunner& runner,
                                        const std::map<std::string, std::string>& env = {});
/// run_stats_command read by the tool's parser.
Expected<ToolStats> read_tool_stats(CacheTool tool, const std::string& executable,
                                    CommandRunner& runner,
                                    const std::map<std::string, std::string>& env = {});
/// read_tool_stats's counts.
Expected<CacheStats> read_cache_stats(CacheTool tool, const std::string& executable,
                                      CommandRunner& runner,
                                      const std::map<std::string, std::string>& env = {});

}  // namespace tailor::cache
