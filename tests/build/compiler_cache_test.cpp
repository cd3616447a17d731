#include "build/compiler_cache.h"

#include "util/strings.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace tailor;
using namespace tailor::build;

TEST(CompilerCache, ParsesCcachePrintStats) {
  const char* text =
      "cache_miss\t7\n"
      "called_for_link\t2\n"
      "direct_cache_hit\t3\n"
      "preprocessed_cache_hit\t1\n"
      "unsupported_compiler_option\t4\n"
      "stats_updated_timestamp\t1764110000\n";
  auto s = parse_ccache_print_stats(text);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->hits, 4u);
  EXPECT_EQ(s->misses, 7u);
  EXPECT_EQ(s->uncacheable, 6u);
}

TEST(CompilerCache, RejectsOtherText) {
  EXPECT_FALSE(parse_ccache_print_stats("Cacheable calls: 10 / 12\n  Hits: 4\n"));
  EXPECT_FALSE(parse_sccache_stats_json("not json"));
  EXPECT_FALSE(parse_sccache_stats_json("{\"x\": 1}"));
}

TEST(CompilerCache, ParsesSccacheJson) {
  const char* text = R"({"stats":{"compile_requests":12,"cache_hits":{"counts":{"C/C++":3,"CUDA":5},"adv_counts":{}},
    "cache_misses":{"counts":{"CUDA":2}},"non_cacheable_calls":1}})";
  auto s = parse_sccache_stats_json(text);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->hits, 8u);
  EXPECT_EQ(s->misses, 2u);
  EXPECT_EQ(s->uncacheable, 1u);
}

TEST(CompilerCache, DeltaClampsAtZero) {
  CacheStats before{10, 5, 1}, after{12, 4, 3};
  CacheStats d = stats_delta(before, after);
  EXPECT_EQ(d.hits, 2u);
  EXPECT_EQ(d.misses, 0u);
  EXPECT_EQ(d.uncacheable, 2u);
}

TEST(CompilerCache, ToolNames) {
  EXPECT_EQ(parse_cache_tool("ccache"), CacheTool::ccache);
  EXPECT_EQ(parse_cache_tool(""), CacheTool::none);
  EXPECT_FALSE(parse_cache_tool("distcc"));
  EXPECT_EQ(cache_tool_name(CacheTool::sccache), "sccache");
}

// The real ccache, on a private cache directory: one miss, then one hit.
TEST(CompilerCache, RealCcacheCountsAHitOnTheSecondCompile) {
  std::string ccache = find_in_path("ccache");
  if (ccache.empty() || find_in_path("gcc").empty()) GTEST_SKIP() << "ccache or gcc not installed";
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("tailor_ccache_test_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "cache");
  { std::ofstream(dir / "a.c") << "int f(int x) { return x * 2; }\n"; }
  setenv("CCACHE_DIR", (dir / "cache").c_str(), 1);
  SystemCommandRunner runner;
  auto before = read_cache_stats(CacheTool::ccache, ccache, runner);
  ASSERT_TRUE(before) << before.error().message;
  for (int i = 0; i < 2; ++i) {
    CommandSpec spec;
    spec.argv = {ccache, "gcc", "-c", (dir / "a.c").string(), "-o", (dir / "a.o").string()};
    ASSERT_TRUE(runner.run(spec).ok());
  }
  auto after = read_cache_stats(CacheTool::ccache, ccache, runner);
  ASSERT_TRUE(after);
  CacheStats d = stats_delta(*before, *after);
  EXPECT_EQ(d.misses, 1u);
  EXPECT_EQ(d.hits, 1u);
  unsetenv("CCACHE_DIR");
  fs::remove_all(dir);
}

TEST(CompilerCache, WrapsTwoWordCompilersForTorch) {
  if (find_in_path("g++").empty()) GTEST_SKIP() << "g++ not installed";
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("tailor_wrap_test_" + std::to_string(::getpid()));
  std::map<std::string, std::string> env = {{"CXX", "/usr/bin/ccache g++"}, {"CC", "gcc"}, {"MAX_JOBS", "2"}};
  auto out = wrap_cached_compilers(env, dir.string());
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(out->at("CC"), "gcc");
  EXPECT_EQ(out->at("MAX_JOBS"), "2");
  EXPECT_EQ(out->at("CXX"), (dir / "g++").string());  // named after the compiler: torch checks the name
  std::ifstream f(out->at("CXX"));
  std::string text((std::istreambuf_iterator<char>(f)), {});
  EXPECT_NE(text.find("exec /usr/bin/ccache " + find_in_path("g++") + " \"$@\""), std::string::npos) << text;
  // The wrapper is a working compiler as far as `-dumpfullversion` goes (what torch runs).
  if (!find_in_path("ccache").empty()) {
    std::map<std::string, std::string> real = {{"CXX", find_in_path("ccache") + " g++"}};
    auto w = wrap_cached_compilers(real, dir.string());
    ASSERT_TRUE(w);
    SystemCommandRunner runner;
    CommandSpec spec;
    spec.argv = {w->at("CXX"), "-dumpfullversion"};
    auto r = runner.run(spec);
    EXPECT_TRUE(r.ok());
    EXPECT_FALSE(std::string(trim(r.out)).empty());
  }
  fs::remove_all(dir);
}
