// Compiler caches (ccache, sccache): which one a build uses and its hit counts, read from
// the tool's statistics before and after the build (the delta is this build's, as long
// as no other build shares the cache at the same time).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "util/expected.h"
#include "util/process.h"

namespace tailor::build {

enum class CacheTool { none, ccache, sccache };
std::string_view cache_tool_name(CacheTool tool);           // "none", "ccache", "sccache"
std::optional<CacheTool> parse_cache_tool(std::string_view name);

struct CacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  /// Requests the tool could not cache (unsupported flags, linking, ...).
  uint64_t uncacheable = 0;
};
/// after - before, clamped at 0 (a cache cleared mid-build must not wrap around).
CacheStats stats_delta(const CacheStats& before, const CacheStats& after);

/// `ccache --print-stats` (tab-separated `key\tvalue` lines, ccache >= 4.4).
Expected<CacheStats> parse_ccache_print_stats(std::string_view text);
/// `sccache --show-stats --stats-format json`.
Expected<CacheStats> parse_sccache_stats_json(std::string_view text);

/// Runs the tool's stats command; `executable` is the path or name of ccache/sccache.
Expected<CacheStats> read_cache_stats(CacheTool tool, const std::string& executable,
                                      CommandRunner& runner);

/// torch.utils.cpp_extension checks the host compiler by running `$CXX -dumpfullversion`
/// and by its name, so CXX="ccache g++" fails ("ccache (0.0.0) is less than the minimum
/// required version"). Every CC/CXX value of the form "<ccache|sccache> <compiler>" is
/// replaced by a wrapper script named after the compiler, written into `dir`, that runs
/// `<cache> <absolute compiler> "$@"`. Other variables are returned unchanged.
Expected<std::map<std::string, std::string>> wrap_cached_compilers(
    const std::map<std::string, std::string>& env, const std::string& dir);

}  // namespace tailor::build
