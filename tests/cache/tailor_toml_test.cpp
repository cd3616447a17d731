// The one loader of a user's tailor.toml: the tables it may have, its [cache], the bounded
// read, and errors that name the file.
#include "cache/tailor_toml.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "support/fixtures.h"

using namespace tailor;
using namespace tailor::cache;

TEST(TailorToml, ReadsCacheAndKeepsTheOtherTablesForThePlan) {
  auto f = parse_tailor_toml(R"([defaults]
torch = "2.9.1"

[matrix]
gpu = ["9.0"]

[cache]
url = "redis://cache:6379"
)",
                             "t.toml");
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_EQ(f->document.file(), "t.toml");
  EXPECT_EQ(f->cache.storage, CacheStorage::redis);
  EXPECT_EQ(f->cache.url, "redis://cache:6379");
  ASSERT_FALSE(f->cache.from.empty());
  EXPECT_EQ(f->cache.from.back(), "t.toml [cache]");
  EXPECT_EQ(f->document["defaults"]["torch"].string(), "2.9.1");
  EXPECT_TRUE(f->document["matrix"].is_table());
  // No [cache]: the defaults.
  auto plain = parse_tailor_toml("[variant.a]\ntorch = \"2.9.1\"\n", "t.toml");
  ASSERT_TRUE(plain) << plain.error().message;
  EXPECT_FALSE(plain->cache.tool);
  EXPECT_TRUE(plain->cache.from.empty());
}

TEST(TailorToml, RefusesWhatNoCommandReads) {
  // A misspelt table is an error for every command, not a silently uncached build.
  auto typo = parse_tailor_toml("[cahce]\nurl = \"redis://h\"\n", "t.toml");
  ASSERT_FALSE(typo);
  EXPECT_EQ(typo.error().message,
            "t.toml: unknown table 'cahce' (known: defaults, variant, matrix, ci, cache, "
            "wheelhouse)");
  // [wheelhouse] is build's (workflow reads its url from the same document).
  auto wheelhouse = parse_tailor_toml("[wheelhouse]\nurl = \"file:///srv/wh\"\n", "t.toml");
  ASSERT_TRUE(wheelhouse) << wheelhouse.error().message;
  EXPECT_EQ(wheelhouse->document["wheelhouse"]["url"].string(), "file:///srv/wh");
  auto broken = parse_tailor_toml("[cache\n", "t.toml");
  ASSERT_FALSE(broken);
  EXPECT_EQ(broken.error().message.rfind("t.toml:1:", 0), 0u) << broken.error().message;
  auto bad_cache = parse_tailor_toml("[cache]\nflavour = 1\n", "t.toml");
  ASSERT_FALSE(bad_cache);
  EXPECT_NE(bad_cache.error().message.find("cache.flavour: unknown key"), std::string::npos)
      << bad_cache.error().message;
  // parse_cache_settings reads through the same loader.
  EXPECT_EQ(parse_cache_settings("[cahce]\n", "t.toml").error().message, typo.error().message);
}

TEST(TailorToml, LoadsTheFileWithABound) {
  auto dir = test::scratch_dir("tailor_toml");
  const std::string good = (dir / "tailor.toml").string();
  std::ofstream(good) << "[cache]\ndir = \"/srv/cache\"\n";
  auto f = load_tailor_toml(good);
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_EQ(f->document.file(), good);
  EXPECT_EQ(f->cache.dir, "/srv/cache");

  EXPECT_FALSE(load_tailor_toml((dir / "missing.toml").string()));
  const std::string binary = (dir / "binary.toml").string();
  std::ofstream(binary) << std::string("[cache]\0", 8);
  auto b = load_tailor_toml(binary);
  ASSERT_FALSE(b);
  EXPECT_NE(b.error().message.find("binary data"), std::string::npos) << b.error().message;
  const std::string huge = (dir / "huge.toml").string();
  std::ofstream(huge) << "# " << std::string(size_t{1} << 20, 'x') << "\n";
  EXPECT_FALSE(load_tailor_toml(huge));
  const std::string fifo = (dir / "fifo.toml").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_FALSE(load_tailor_toml(fifo));  // an error, not a wait for a writer
}
