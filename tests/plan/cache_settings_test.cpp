#include "plan/cache_settings.h"

#include <gtest/gtest.h>

using namespace tailor;
using namespace tailor::plan;

TEST(CacheSettings, DefaultsWithoutATable) {
  auto s = parse_cache_settings("[defaults]\ntorch = \"2.9.1\"\n", "t.toml");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->tool, "auto");
  EXPECT_EQ(s->storage, CacheStorage::local);
  EXPECT_TRUE(s->from.empty());
  EXPECT_FALSE(s->shared());
}

TEST(CacheSettings, ReadsEveryKey) {
  auto s = parse_cache_settings(R"([cache]
tool = "sccache"
url = "s3://builds/torch"
endpoint = "http://minio:9000"
region = "eu-1"
basedirs = ["/srv/a", "/srv/b"]
work_root = "/scratch/tailor"
)",
                                "t.toml");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(s->tool, "sccache");
  EXPECT_EQ(s->storage, CacheStorage::s3);
  EXPECT_EQ(s->bucket, "builds");
  EXPECT_EQ(s->prefix, "torch");
  EXPECT_EQ(s->work_root, "/scratch/tailor");
  EXPECT_EQ(describe_cache_storage(*s), "s3://builds/torch (endpoint http://minio:9000, region eu-1)");
  auto env = cache_tool_environment(*s, "sccache", {"/work/pkg", "/srv/a"});
  ASSERT_TRUE(env) << env.error().message;
  EXPECT_EQ(env->at("SCCACHE_BUCKET"), "builds");
  EXPECT_EQ(env->at("SCCACHE_S3_KEY_PREFIX"), "torch");
  EXPECT_EQ(env->at("SCCACHE_ENDPOINT"), "http://minio:9000");
  EXPECT_EQ(env->at("SCCACHE_REGION"), "eu-1");
  EXPECT_EQ(env->at("SCCACHE_BASEDIRS"), "/srv/a:/srv/b:/work/pkg");  // deduplicated, settings first
  // ccache has no S3 storage: an error that says to use sccache.
  auto cc = cache_tool_environment(*s, "ccache");
  ASSERT_FALSE(cc);
  EXPECT_NE(cc.error().message.find("ccache cannot use s3 storage"), std::string::npos) << cc.error().message;
}

TEST(CacheSettings, RedisForBothToolsAndThePasswordHidden) {
  CacheSettings s;
  ASSERT_TRUE(set_cache_url(s, "redis://user:s3cret@cache.internal:6390/2", "--cache-url"));
  EXPECT_TRUE(s.shared());
  EXPECT_EQ(describe_cache_storage(s), "redis://user:***@cache.internal:6390/2");
  EXPECT_EQ(cache_tool_environment(s, "sccache")->at("SCCACHE_REDIS_ENDPOINT"), s.url);
  EXPECT_EQ(cache_tool_environment(s, "ccache")->at("CCACHE_REMOTE_STORAGE"), s.url);
  CacheSettings local;
  ASSERT_TRUE(set_cache_url(local, "file:///var/cache/cc", "x"));
  EXPECT_EQ(local.dir, "/var/cache/cc");
  EXPECT_EQ(cache_tool_environment(local, "ccache")->at("CCACHE_DIR"), "/var/cache/cc");
  EXPECT_EQ(describe_cache_storage(CacheSettings{}), "local (the tool's default folder)");
}

TEST(CacheSettings, RefusesBadValuesWithTheKey) {
  struct Case {
    const char* text;
    const char* says;
  } cases[] = {
      {"[cache]\nurl = \"ftp://x\"\n", "expected redis://"},
      {"[cache]\nurl = \"redis://host:99999\"\n", "not 1-65535"},
      {"[cache]\nurl = \"redis://ho st:1\"\n", "cannot have"},
      {"[cache]\nurl = \"s3://Bad_Bucket\"\n", "lower-case"},
      {"[cache]\nurl = \"relative/dir\"\n", "expected redis://"},
      {"[cache]\ntool = \"distcc\"\n", "not a compiler cache"},
      {"[cache]\nflavour = 1\n", "cache.flavour: unknown key"},
      {"[cache]\nbasedirs = [\"rel\"]\n", "cache.basedirs"},
      {"[cache]\nbasedirs = \"/a\"\n", "cache.basedirs"},
      {"[cache]\nsize = \"lots\"\n", "cache.size"},
      {"[cache]\nregion = \"x\"\n", "only an s3:// storage"},
      {"[cache]\nurl = \"redis://h\"\nbucket = \"b\"\n", "cannot both"},
      {"[cache]\nwork_root = \"tmp\"\n", "cache.work_root"},
      {"cache = 3\n", "expected a table"},
      {"[cache\n", "t.toml"},
  };
  for (const auto& c : cases) {
    auto s = parse_cache_settings(c.text, "t.toml");
    ASSERT_FALSE(s) << c.text;
    EXPECT_NE(s.error().message.find(c.says), std::string::npos) << c.text << " -> " << s.error().message;
    EXPECT_EQ(s.error().message.find('\n'), std::string::npos) << s.error().message;
  }
  CacheSettings s;
  EXPECT_FALSE(set_cache_url(s, "redis://a\nb:1", "x"));
  EXPECT_FALSE(set_cache_url(s, std::string(3000, 'a'), "x"));
}

TEST(CacheSettings, EnvironmentOverridesTheFile) {
  auto s = parse_cache_settings("[cache]\nurl = \"redis://a:1\"\ntool = \"ccache\"\n", "t.toml");
  ASSERT_TRUE(s);
  auto e = apply_cache_environment(*s, {{"TAILOR_CACHE_URL", "s3://b"}, {"TAILOR_CACHE", "sccache"}});
  ASSERT_TRUE(e) << e.error().message;
  EXPECT_EQ(e->tool, "sccache");
  EXPECT_EQ(e->storage, CacheStorage::s3);
  EXPECT_EQ(e->from.back(), "TAILOR_CACHE_URL");
  EXPECT_FALSE(apply_cache_environment(*s, {{"TAILOR_CACHE", "bogus"}}));
}

TEST(CacheSettings, StepKindsFromTheData) {
  EXPECT_EQ(sccache_category("PTX"), "PTX (cicc)");
  EXPECT_EQ(sccache_category("CUBIN"), "cubin (ptxas)");
  EXPECT_EQ(sccache_category("CUDA (Device code)"), "CUDA (nvcc)");
  EXPECT_EQ(sccache_category("Rust"), "Rust");
  ASSERT_EQ(cache_category_order().size(), 4u);
  EXPECT_EQ(cache_category_order().front(), "C/C++");
  EXPECT_FALSE(shared_work_root().empty());
  EXPECT_GT(sccache_idle_timeout_s(), 0);
}
