// What tailor's builds got from their compiler caches, summed over builds. Each build adds
// its own counts (for sccache those of its own server, so nothing another build did) to
// <user cache>/tailor/cache/stats.json under a lock; `tailor cache show` prints them and
// `tailor cache zero` starts them again. The file is tailor's own: a damaged one is
// reported and replaced at the next zero, never trusted.
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "cache/compiler_cache.h"
#include "util/expected.h"

namespace tailor::cache {

struct CacheLedger {
  std::string since;  ///< ISO 8601 UTC of the last zero (or the first build)
  uint64_t builds = 0;
  std::map<std::string, CacheStats> by_tool;  ///< "ccache", "sccache"
  std::string last_tool, last_at;             ///< the latest build's tool and time
  CacheStats last;                            ///< the latest build's counts
};

/// <user cache>/tailor/cache/stats.json.
std::string cache_ledger_path();
/// A missing file is an empty ledger; a damaged one is an error naming the file.
Expected<CacheLedger> read_cache_ledger(const std::string& path);
/// Adds one build's counts (locked read-modify-write, atomic replace).
Expected<void> add_to_cache_ledger(const std::string& path, const std::string& tool,
                                   const CacheStats& stats);
/// Starts again from nothing, dated now.
Expected<void> zero_cache_ledger(const std::string& path);
/// Best effort for a build: add to the default ledger, ignore failures (a read-only home
/// must not fail a build).
void record_cache_use(CacheTool tool, const CacheStats& stats);

nlohmann::json to_json(const CacheStats& stats);
nlohmann::json to_json(const CacheLedger& ledger);
/// "  PTX (cicc)       12 hits   3 misses   80.0%" lines, categories in report order, then
/// the total; for ccache, which counts whole compiles, the total only.
std::string render_cache_stats(const CacheStats& stats, const std::string& indent = "  ");
/// hits / (hits + misses) as "80.0%", "-" when there were none.
std::string hit_rate_text(uint64_t hits, uint64_t misses);

}  // namespace tailor::cache
