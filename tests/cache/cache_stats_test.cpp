// The one reader of each tool's statistics (cache/cache_stats.h), over what the real tools
// printed (tests/cache/data: sccache 0.16 on a local folder, on Redis, with sccache-dist;
// ccache 4.7 on a local folder and with a Redis that did not answer) and over hostile text.
#include "cache/cache_stats.h"

#include <gtest/gtest.h>

#include <limits>

#include "cache/compiler_cache.h"
#include "cache/sccache_dist.h"
#include "support/fake_host.h"
#include "support/fixtures.h"

using namespace tailor;
using namespace tailor::cache;

namespace {
std::string data_file(const std::string& name) {
  std::string text =
      tailor::test::slurp_text(std::string(TAILOR_SOURCE_DIR) + "/tests/cache/data/" + name);
  EXPECT_FALSE(text.empty()) << name;
  return text;
}
/// The error of parsing `json`, or "(parsed)".
std::string sccache_error(const std::string& json) {
  auto s = parse_sccache_show_stats(json);
  return s ? std::string("(parsed)") : s.error().message;
}
std::string ccache_error(const std::string& text) {
  auto s = parse_ccache_print_stats(text);
  return s ? std::string("(parsed)") : s.error().message;
}
}  // namespace

// ---- sccache --show-stats --stats-format json --------------------------------------------

// sccache 0.16 on a local folder: one gcc compile missed, then hit.
TEST(CacheStats, SccacheOnALocalFolder) {
  auto s = parse_sccache_show_stats(data_file("sccache_0.16_stats_local.json"));
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->counts.hits, 1u);
  EXPECT_EQ(s->counts.misses, 1u);
  EXPECT_EQ(s->counts.errors, 0u);
  EXPECT_EQ(s->counts.categories, (std::map<std::string, CacheCount>{{"C/C++", {1, 1}}}));
  EXPECT_EQ(s->location, "Local disk: \"/tmp/ccx/sc\"");
  EXPECT_EQ(s->size_bytes, std::optional<uint64_t>(722));
  EXPECT_EQ(s->dist.compilations, 1u);
  EXPECT_EQ(s->dist.dist_compiles, 0u);  // "dist_compiles": {}
  EXPECT_TRUE(s->dist.per_server.empty());
}

// sccache 0.16 on Redis: the location names the server; the size is null (Redis does not say).
TEST(CacheStats, SccacheOnRedisHasNoSize) {
  auto s = parse_sccache_show_stats(data_file("sccache_0.16_stats_redis.json"));
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->counts.hits, 1u);
  EXPECT_EQ(s->location.rfind("redis, name: redis://127.0.0.1:", 0), 0u) << s->location;
  EXPECT_EQ(s->size_bytes, std::nullopt);
}

// sccache names a Redis URL whole in cache_location, password and all (0.16 does): the
// parser hides it before anything can show it.
TEST(CacheStats, SccacheLocationLosesItsPassword) {
  auto s = parse_sccache_show_stats(
      R"({"stats":{},"cache_location":"redis, name: redis://:s3cret@127.0.0.1:59657, prefix: /","cache_size":null})");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->location, "redis, name: redis://:***@127.0.0.1:59657, prefix: /");
  // A long one is cut, bounded.
  auto long_one = parse_sccache_show_stats(R"({"stats":{},"cache_location":")" +
                                           std::string(5000, 'x') + "\"}");
  ASSERT_TRUE(long_one);
  EXPECT_EQ(long_one->location.size(), 1024u);
}

// One document, every user's part: the counts per step kind (a build report), the dist
// counts per server, the location and size (cache status).
TEST(CacheStats, SccacheWithDistGivesEveryPartFromOneParse) {
  const std::string text = data_file("sccache_dist_stats_nvcc_example.json");
  auto s = parse_sccache_show_stats(text);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->counts.misses, 4u);
  EXPECT_EQ(s->counts.uncacheable, 1u);                          // non_cacheable_compilations
  EXPECT_EQ(s->counts.categories.at("CUDA (nvcc)").misses, 2u);  // nvcc and cudafe++
  EXPECT_EQ(s->counts.categories.at("PTX (cicc)").misses, 1u);
  EXPECT_EQ(s->counts.categories.at("cubin (ptxas)").misses, 1u);
  EXPECT_EQ(s->dist.compilations, 5u);
  EXPECT_EQ(s->dist.dist_compiles, 4u);
  EXPECT_EQ(s->dist.per_server, (std::map<std::string, uint64_t>{{"127.0.0.1:10702", 4}}));
  EXPECT_EQ(s->location, "Local disk: \"/tmp/distexp/r4/cache\"");
  EXPECT_EQ(s->size_bytes, std::optional<uint64_t>(1090515));
  // The build report's and dist's readers are this parser's parts.
  auto counts = parse_sccache_stats_json(text);
  ASSERT_TRUE(counts);
  EXPECT_EQ(counts->misses, s->counts.misses);
  EXPECT_EQ(counts->categories, s->counts.categories);
  auto d = dist::parse_dist_stats_json(text);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->per_server, s->dist.per_server);
  EXPECT_EQ(d->compilations, s->dist.compilations);
}

TEST(CacheStats, SccacheSumsEveryKindOfCount) {
  auto s = parse_sccache_show_stats(R"({"stats":{"compile_requests":12,
    "cache_hits":{"counts":{"C/C++":3,"CUDA":5},"adv_counts":{}},
    "cache_misses":{"counts":{"CUDA":2}},"requests_not_cacheable":1,"non_cacheable_compilations":2,
    "cache_errors":{"counts":{"PTX":1}},"cache_read_errors":1,"cache_write_errors":2,"cache_timeouts":3,
    "requests_unsupported_compiler":4,"requests_not_compile":1,"dist_errors":2}})");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->counts.hits, 8u);
  EXPECT_EQ(s->counts.misses, 2u);
  EXPECT_EQ(s->counts.uncacheable, 3u);
  EXPECT_EQ(s->counts.errors, 7u);
  EXPECT_EQ(s->counts.categories.at("CUDA (nvcc)"), (CacheCount{5, 2}));
  EXPECT_EQ(s->dist.not_distributable, 5u);
  EXPECT_EQ(s->dist.dist_errors, 2u);
  EXPECT_EQ(s->location, "");  // an older sccache that does not say
  EXPECT_EQ(s->size_bytes, std::nullopt);
}

TEST(CacheStats, SccacheMissingOrNullKeysCountZero) {
  auto s = parse_sccache_show_stats(
      R"({"stats":{"cache_hits":null,"compilations":null,"dist_compiles":null,
    "cache_misses":{"adv_counts":{}}},"cache_location":null})");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->counts.hits, 0u);
  EXPECT_EQ(s->counts.misses, 0u);
  EXPECT_TRUE(s->counts.categories.empty());
  EXPECT_EQ(s->dist.compilations, 0u);
}

// Not the format: an error naming the key, never partial counts taken as real.
TEST(CacheStats, HostileSccacheJsonIsAnErrorNamingTheKey) {
  EXPECT_EQ(sccache_error("not json"), "sccache --show-stats: not the JSON stats object");
  EXPECT_EQ(sccache_error("[1,2]"), "sccache --show-stats: not the JSON stats object");
  EXPECT_EQ(sccache_error(R"({"x":1})"), "sccache --show-stats: not the JSON stats object");
  EXPECT_EQ(sccache_error(R"({"stats":null})"), "sccache --show-stats: not the JSON stats object");
  EXPECT_EQ(sccache_error(R"({"stats":[]})"), "sccache --show-stats: not the JSON stats object");
  EXPECT_EQ(sccache_error(R"({"stats":{"cache_hits":[1]}})"),
            "sccache --show-stats: stats.cache_hits: expected an object");
  EXPECT_EQ(sccache_error(R"({"stats":{"cache_hits":{"counts":3}}})"),
            "sccache --show-stats: stats.cache_hits.counts: expected an object");
  // Negative, fractional, textual and too large counts (a negative one must not wrap around).
  EXPECT_EQ(sccache_error(R"({"stats":{"cache_hits":{"counts":{"C/C++":-4}}}})"),
            "sccache --show-stats: stats.cache_hits.counts.C/C++: -4 is not a count");
  EXPECT_EQ(sccache_error(R"({"stats":{"cache_misses":{"counts":{"PTX":"x"}}}})"),
            "sccache --show-stats: stats.cache_misses.counts.PTX: \"x\" is not a count");
  EXPECT_EQ(sccache_error(R"({"stats":{"compilations":2.5}})"),
            "sccache --show-stats: stats.compilations: 2.5 is not a count");
  EXPECT_EQ(sccache_error(R"({"stats":{"cache_timeouts":true}})"),
            "sccache --show-stats: stats.cache_timeouts: true is not a count");
  EXPECT_EQ(sccache_error(R"({"stats":{"compilations":18446744073709551616}})"),
            "sccache --show-stats: stats.compilations: 1.8446744073709552e+19 is not a count");
  EXPECT_EQ(sccache_error(R"({"stats":{"dist_compiles":7}})"),
            "sccache --show-stats: stats.dist_compiles: expected an object (server -> count)");
  EXPECT_EQ(sccache_error(R"({"stats":{"dist_compiles":{"a:1":-1}}})"),
            "sccache --show-stats: stats.dist_compiles.a:1: -1 is not a count");
  EXPECT_EQ(sccache_error(R"({"stats":{},"cache_location":7})"),
            "sccache --show-stats: cache_location: expected a string");
  EXPECT_EQ(sccache_error(R"({"stats":{},"cache_size":-1})"),
            "sccache --show-stats: cache_size: -1 is not a count");
  // A key with a terminal escape in it is named without it.
  std::string esc = sccache_error("{\"stats\":{\"cache_hits\":{\"counts\":{\"\\u001b[2J\":-1}}}}");
  EXPECT_EQ(esc.find('\x1b'), std::string::npos) << esc;
  // The same through the thin readers.
  EXPECT_FALSE(parse_sccache_stats_json(R"({"stats":{"cache_hits":{"counts":{"C/C++":-4}}}})"));
  EXPECT_FALSE(dist::parse_dist_stats_json(R"({"stats":{"dist_compiles":{"a:1":"x"}}})"));
}

// Counts at the top of the range are held there, never wrapped around to small numbers.
TEST(CacheStats, HugeSccacheCountsAreHeldNotWrapped) {
  auto s = parse_sccache_show_stats(
      R"({"stats":{"cache_hits":{"counts":{"C/C++":18446744073709551615,"C":5}},
    "dist_compiles":{"a:1":18446744073709551615,"b:2":1}}})");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->counts.hits, std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(s->counts.categories.at("C/C++").hits,
            std::numeric_limits<uint64_t>::max());  // "C" is C/C++ too
  EXPECT_EQ(s->dist.dist_compiles, std::numeric_limits<uint64_t>::max());
}

// ---- ccache --print-stats ------------------------------------------------------------------

// ccache 4.7 on a local folder: a miss, a hit, a link it does not cache; 8 KiB cached.
TEST(CacheStats, CcacheOnALocalFolder) {
  auto s = parse_ccache_print_stats(data_file("ccache_4.7_print_stats.txt"));
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->counts.hits, 1u);
  EXPECT_EQ(s->counts.misses, 1u);
  EXPECT_EQ(s->counts.uncacheable, 1u);  // called_for_link
  EXPECT_EQ(s->counts.errors, 0u);
  EXPECT_TRUE(s->counts.categories.empty());  // ccache counts whole compiles
  EXPECT_EQ(s->size_bytes, std::optional<uint64_t>(8 * 1024));
  EXPECT_EQ(s->location, "");
  EXPECT_EQ(s->dist.compilations, 0u);
}

// ccache 4.7 with CCACHE_REMOTE_STORAGE at a Redis nothing listened on: a storage error.
TEST(CacheStats, CcacheCountsARemoteStorageError) {
  auto s = parse_ccache_print_stats(data_file("ccache_4.7_print_stats_remote_error.txt"));
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->counts.misses, 1u);
  EXPECT_EQ(s->counts.errors, 1u);
}

TEST(CacheStats, CcacheSumsItsKeys) {
  auto s = parse_ccache_print_stats(
      "cache_miss\t7\ncalled_for_link\t2\ndirect_cache_hit\t3\npreprocessed_cache_hit\t1\n"
      "unsupported_compiler_option\t4\nremote_storage_timeout\t2\nremote_storage_error\t1\n"
      "stats_updated_timestamp\t1764110000\n");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->counts.hits, 4u);
  EXPECT_EQ(s->counts.misses, 7u);
  EXPECT_EQ(s->counts.uncacheable, 6u);
  EXPECT_EQ(s->counts.errors, 3u);
  EXPECT_EQ(s->size_bytes, std::nullopt);  // no cache_size_kibibyte line
}

TEST(CacheStats, HostileCcacheTextIsAnErrorNamingTheKey) {
  EXPECT_EQ(
      ccache_error("Cacheable calls: 10 / 12\n  Hits: 4\n"),
      "ccache --print-stats: no direct_cache_hit/cache_miss counters (ccache older than 4.4?)");
  EXPECT_EQ(
      ccache_error(""),
      "ccache --print-stats: no direct_cache_hit/cache_miss counters (ccache older than 4.4?)");
  EXPECT_EQ(ccache_error("direct_cache_hit\t-1\ncache_miss\t0\n"),
            "ccache --print-stats: direct_cache_hit: '-1' is not a count");
  EXPECT_EQ(ccache_error("direct_cache_hit\t1\ncache_miss\tmany\n"),
            "ccache --print-stats: cache_miss: 'many' is not a count");
  EXPECT_EQ(ccache_error("direct_cache_hit\t1\ncache_miss\t\n"),
            "ccache --print-stats: cache_miss: '' is not a count");
  EXPECT_EQ(ccache_error("direct_cache_hit\t1\ncache_miss\t99999999999999999999999\n"),
            "ccache --print-stats: cache_miss: '99999999999999999999999' is not a count");
  EXPECT_EQ(
      ccache_error("direct_cache_hit\t1\ncache_miss\t0\ncache_size_kibibyte\t18014398509481984\n"),
      "ccache --print-stats: cache_size_kibibyte: larger than 16 EiB");
  // Keys tailor does not read may hold anything.
  EXPECT_EQ(ccache_error("direct_cache_hit\t1\ncache_miss\t0\nstats_zeroed_timestamp\tnever\n"),
            "(parsed)");
}

// ---- running the command ----------------------------------------------------------------

TEST(CacheStats, EachToolsCommandRunsWithTheStorageVariables) {
  tailor::test::FakeCommandRunner runner;
  runner.answer("/opt/sccache", data_file("sccache_0.16_stats_local.json"));
  runner.answer("/opt/ccache", data_file("ccache_4.7_print_stats.txt"));
  auto sc = read_tool_stats(CacheTool::sccache, "/opt/sccache", runner,
                            {{"SCCACHE_SERVER_PORT", "4301"}});
  ASSERT_TRUE(sc) << sc.error().message;
  EXPECT_EQ(sc->size_bytes, std::optional<uint64_t>(722));
  auto cc = read_cache_stats(CacheTool::ccache, "/opt/ccache", runner, {{"CCACHE_DIR", "/c"}});
  ASSERT_TRUE(cc) << cc.error().message;
  EXPECT_EQ(cc->hits, 1u);
  ASSERT_EQ(runner.specs.size(), 2u);
  EXPECT_EQ(runner.specs[0].argv,
            (std::vector<std::string>{"/opt/sccache", "--show-stats", "--stats-format", "json"}));
  EXPECT_EQ(runner.specs[0].env.at("SCCACHE_SERVER_PORT"), std::optional<std::string>("4301"));
  EXPECT_EQ(runner.specs[1].argv, (std::vector<std::string>{"/opt/ccache", "--print-stats"}));
  EXPECT_EQ(runner.specs[1].env.at("CCACHE_DIR"), std::optional<std::string>("/c"));
  EXPECT_FALSE(read_tool_stats(CacheTool::none, "x", runner));
  EXPECT_EQ(runner.specs.size(), 2u);  // nothing run for none
}

TEST(CacheStats, AFailedCommandSaysWhichAndWhy) {
  tailor::test::FakeCommandRunner runner;
  auto missing = run_stats_command(CacheTool::sccache, "/no/sccache", runner);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message, "sccache --show-stats --stats-format json failed: not found");
  runner.time_out("/slow/ccache");
  auto slow = run_stats_command(CacheTool::ccache, "/slow/ccache", runner);
  ASSERT_FALSE(slow);
  EXPECT_EQ(slow.error().message, "ccache --print-stats failed: timed out");
  CommandResult refused = tailor::test::ran(2);
  refused.err = "sccache: error: couldn't connect to server\n";
  runner.by_program["/down/sccache"] = refused;
  auto down = run_stats_command(CacheTool::sccache, "/down/sccache", runner);
  ASSERT_FALSE(down);
  EXPECT_EQ(down.error().message,
            "sccache --show-stats --stats-format json failed: sccache: error: couldn't connect to "
            "server");
  runner.answer("/quiet/ccache", "", 1);
  EXPECT_EQ(run_stats_command(CacheTool::ccache, "/quiet/ccache", runner).error().message,
            "ccache --print-stats failed: exit 1");
}

// A build's own server asks its own port, and its one read gives both the counts and the rest.
TEST(CacheStats, AnSccacheServerReadsItsStatisticsOnce) {
  tailor::test::FakeCommandRunner runner;
  runner.by_command["sccache --version"] = tailor::test::ran(0, "sccache 0.16.0\n");
  runner.by_command["sccache --start-server"] = tailor::test::ran(0);
  runner.by_command["sccache --show-stats --stats-format json"] =
      tailor::test::ran(0, data_file("sccache_dist_stats_nvcc_example.json"));
  auto server = SccacheServer::start("sccache", {{"SCCACHE_DIR", "/c"}}, runner);
  ASSERT_TRUE(server) << server.error().message;
  auto all = (*server)->tool_stats();
  ASSERT_TRUE(all) << all.error().message;
  EXPECT_EQ(all->dist.dist_compiles, 4u);
  auto counts = (*server)->stats();
  ASSERT_TRUE(counts);
  EXPECT_EQ(counts->misses, 4u);
  const CommandSpec& asked = runner.specs.back();
  EXPECT_EQ(asked.argv.at(1), "--show-stats");
  EXPECT_EQ(asked.env.at("SCCACHE_SERVER_PORT"),
            std::optional<std::string>(std::to_string((*server)->port())));
  EXPECT_EQ(asked.env.at("SCCACHE_DIR"), std::optional<std::string>("/c"));
  (*server)->stop();
}
