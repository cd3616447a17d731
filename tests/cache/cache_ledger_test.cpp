#include "cache/cache_ledger.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "support/fixtures.h"

using namespace tailor;
using namespace tailor::cache;

TEST(CacheLedger, SumsBuildsAndZeroes) {
  auto dir = tailor::test::scratch_dir("cache_ledger");
  std::string path = (dir / "stats.json").string();
  auto empty = read_cache_ledger(path);
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->builds, 0u);
  CacheStats a{3, 1, 0, 0, {{"PTX (cicc)", {2, 1}}, {"C/C++", {1, 0}}}};
  CacheStats b{0, 4, 2, 1, {{"PTX (cicc)", {0, 4}}}};
  ASSERT_TRUE(add_to_cache_ledger(path, "sccache", a));
  ASSERT_TRUE(add_to_cache_ledger(path, "sccache", b));
  ASSERT_TRUE(add_to_cache_ledger(path, "ccache", CacheStats{5, 5, 0, 0, {}}));
  auto l = read_cache_ledger(path);
  ASSERT_TRUE(l) << l.error().message;
  EXPECT_EQ(l->builds, 3u);
  const CacheStats& s = l->by_tool.at("sccache");
  EXPECT_EQ(s.hits, 3u);
  EXPECT_EQ(s.misses, 5u);
  EXPECT_EQ(s.errors, 1u);
  EXPECT_EQ(s.categories.at("PTX (cicc)").hits, 2u);
  EXPECT_EQ(s.categories.at("PTX (cicc)").misses, 5u);
  EXPECT_EQ(l->last_tool, "ccache");
  EXPECT_EQ(l->last.hits, 5u);
  std::string text = render_cache_stats(s);
  EXPECT_NE(text.find("C/C++"), std::string::npos);
  EXPECT_LT(text.find("C/C++"), text.find("PTX (cicc)"));  // report order
  EXPECT_NE(text.find("all steps"), std::string::npos);
  EXPECT_NE(text.find("storage errors"), std::string::npos);
  EXPECT_EQ(hit_rate_text(1, 3), "25.0%");
  EXPECT_EQ(hit_rate_text(0, 0), "-");
  ASSERT_TRUE(zero_cache_ledger(path));
  EXPECT_EQ(read_cache_ledger(path)->builds, 0u);
  std::filesystem::remove_all(dir);
}

TEST(CacheLedger, DamagedFileIsAnErrorAndAddStartsAgain) {
  auto dir = tailor::test::scratch_dir("cache_ledger_bad");
  std::string path = (dir / "stats.json").string();
  for (const char* bad : {"not json", "[1,2]", R"({"tools":{"sccache":{"hits":-1}}})",
                          R"({"tools":{"sccache":{"categories":{"PTX":3}}}})"}) {
    { std::ofstream(path, std::ios::trunc) << bad; }
    auto l = read_cache_ledger(path);
    EXPECT_FALSE(l) << bad;
  }
  ASSERT_TRUE(add_to_cache_ledger(path, "sccache", CacheStats{1, 0, 0, 0, {}}));
  auto l = read_cache_ledger(path);
  ASSERT_TRUE(l);
  EXPECT_EQ(l->builds, 1u);
  std::filesystem::remove_all(dir);
}
