#include "cache/cache_settings.h"

#include <gtest/gtest.h>

using namespace tailor;
using namespace tailor::cache;

TEST(CacheSettings, DefaultsWithoutATable) {
  auto s = parse_cache_settings("[defaults]\ntorch = \"2.9.1\"\n", "t.toml");
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_FALSE(s->tool);  // auto
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
  EXPECT_EQ(s->tool, CacheTool::sccache);
  EXPECT_EQ(s->storage, CacheStorage::s3);
  EXPECT_EQ(s->bucket, "builds");
  EXPECT_EQ(s->prefix, "torch");
  EXPECT_EQ(s->work_root, "/scratch/tailor");
  EXPECT_EQ(describe_cache_storage(*s),
            "s3://builds/torch (endpoint http://minio:9000, region eu-1)");
  auto env = cache_tool_environment(*s, CacheTool::sccache, {"/work/pkg", "/srv/a"});
  ASSERT_TRUE(env) << env.error().message;
  EXPECT_EQ(env->at("SCCACHE_BUCKET"), "builds");
  EXPECT_EQ(env->at("SCCACHE_S3_KEY_PREFIX"), "torch");
  EXPECT_EQ(env->at("SCCACHE_ENDPOINT"), "http://minio:9000");
  EXPECT_EQ(env->at("SCCACHE_REGION"), "eu-1");
  EXPECT_EQ(env->at("SCCACHE_BASEDIRS"),
            "/srv/a:/srv/b:/work/pkg");  // deduplicated, settings first
  // ccache has no S3 storage: an error that says to use sccache.
  auto cc = cache_tool_environment(*s, CacheTool::ccache);
  ASSERT_FALSE(cc);
  EXPECT_NE(cc.error().message.find("ccache cannot use s3 storage"), std::string::npos)
      << cc.error().message;
}

TEST(CacheSettings, RedisForBothToolsAndThePasswordHidden) {
  CacheSettings s;
  ASSERT_TRUE(set_cache_url(s, "redis://user:s3cret@cache.internal:6390/2", "--cache-url"));
  EXPECT_TRUE(s.shared());
  EXPECT_EQ(describe_cache_storage(s), "redis://user:***@cache.internal:6390/2");
  EXPECT_EQ(cache_tool_environment(s, CacheTool::sccache)->at("SCCACHE_REDIS_ENDPOINT"), s.url);
  EXPECT_EQ(cache_tool_environment(s, CacheTool::ccache)->at("CCACHE_REMOTE_STORAGE"), s.url);
  CacheSettings local;
  ASSERT_TRUE(set_cache_url(local, "file:///var/cache/cc", "x"));
  EXPECT_EQ(local.dir, "/var/cache/cc");
  EXPECT_EQ(cache_tool_environment(local, CacheTool::ccache)->at("CCACHE_DIR"), "/var/cache/cc");
  EXPECT_EQ(describe_cache_storage(CacheSettings{}), "local, the tool's default folder");
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
    EXPECT_NE(s.error().message.find(c.says), std::string::npos)
        << c.text << " -> " << s.error().message;
    EXPECT_EQ(s.error().message.find('\n'), std::string::npos) << s.error().message;
  }
  CacheSettings s;
  EXPECT_FALSE(set_cache_url(s, "redis://a\nb:1", "x"));
  EXPECT_FALSE(set_cache_url(s, std::string(3000, 'a'), "x"));
}

TEST(CacheSettings, EnvironmentOverridesTheFile) {
  auto s = parse_cache_settings("[cache]\nurl = \"redis://a:1\"\ntool = \"ccache\"\n", "t.toml");
  ASSERT_TRUE(s);
  auto e =
      apply_cache_environment(*s, {{"TAILOR_CACHE_URL", "s3://bkt"}, {"TAILOR_CACHE", "sccache"}});
  ASSERT_TRUE(e) << e.error().message;
  EXPECT_EQ(e->tool, CacheTool::sccache);
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

// What sccache 0.16 reads for S3: every variable that moves the objects is set (empty when
// unset, which sccache reads as unset), the scheme decides SSL, an endpoint gets a region.
TEST(CacheSettings, S3EnvironmentAsSccacheReadsIt) {
  CacheSettings s;
  ASSERT_TRUE(
      set_cache_url(s, "s3://ci-cache/torch/cu130/?endpoint=http://127.0.0.1:9000", "--cache-url"));
  EXPECT_EQ(s.bucket, "ci-cache");
  EXPECT_EQ(s.prefix, "torch/cu130");  // sccache drops the trailing '/' too
  EXPECT_EQ(s.endpoint, "http://127.0.0.1:9000");
  EXPECT_EQ(describe_cache_storage(s),
            "s3://ci-cache/torch/cu130 (endpoint http://127.0.0.1:9000)");
  auto env = cache_tool_environment(s, CacheTool::sccache);
  ASSERT_TRUE(env) << env.error().message;
  const std::map<std::string, std::string> want = {{"SCCACHE_BUCKET", "ci-cache"},
                                                   {"SCCACHE_S3_KEY_PREFIX", "torch/cu130"},
                                                   {"SCCACHE_ENDPOINT", "http://127.0.0.1:9000"},
                                                   {"SCCACHE_S3_USE_SSL", "false"},
                                                   {"SCCACHE_REGION", "auto"}};
  EXPECT_EQ(*env, want);
  // No credentials ever: sccache reads them from the caller's environment.
  for (const auto& [k, v] : *env) EXPECT_EQ(k.rfind("AWS_", 0), std::string::npos) << k;

  ASSERT_TRUE(
      set_cache_url(s, "s3://ci-cache?endpoint=https://minio.internal&region=eu-west-1", "x"));
  env = cache_tool_environment(s, CacheTool::sccache);
  ASSERT_TRUE(env);
  EXPECT_EQ(env->at("SCCACHE_S3_USE_SSL"), "true");
  EXPECT_EQ(env->at("SCCACHE_REGION"), "eu-west-1");
  EXPECT_EQ(env->at("SCCACHE_S3_KEY_PREFIX"), "");  // not the caller's prefix

  // AWS itself: no endpoint, and no region, which the caller's AWS_REGION or SCCACHE_REGION gives.
  CacheSettings aws;
  ASSERT_TRUE(set_cache_url(aws, "s3://team-cache/x", "x"));
  env = cache_tool_environment(aws, CacheTool::sccache);
  ASSERT_TRUE(env);
  EXPECT_EQ(env->at("SCCACHE_ENDPOINT"), "");
  EXPECT_EQ(env->at("SCCACHE_S3_USE_SSL"), "");
  EXPECT_EQ(env->count("SCCACHE_REGION"), 0u);
  EXPECT_EQ(describe_cache_storage(aws), "s3://team-cache/x");

  // A flag that names another bucket keeps the [cache] table's endpoint and region.
  auto t = parse_cache_settings(
      "[cache]\nurl = \"s3://one/a\"\nendpoint = \"http://minio:9000\"\nregion = \"us-east-1\"\n",
      "t.toml");
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_TRUE(set_cache_url(*t, "s3://two/b", "--cache-url"));
  EXPECT_EQ(describe_cache_storage(*t),
            "s3://two/b (endpoint http://minio:9000, region us-east-1)");
}

TEST(CacheSettings, RedisClearsACallersBucket) {
  // sccache prefers S3 to Redis: a SCCACHE_BUCKET the caller exported would win.
  CacheSettings s;
  ASSERT_TRUE(set_cache_url(s, "redis://127.0.0.1:6379", "x"));
  auto env = cache_tool_environment(s, CacheTool::sccache);
  ASSERT_TRUE(env);
  EXPECT_EQ(env->at("SCCACHE_BUCKET"), "");
  EXPECT_EQ(cache_tool_environment(s, CacheTool::ccache)->count("SCCACHE_BUCKET"), 0u);
}

TEST(CacheSettings, S3RefusesWhatSccacheWouldMisread) {
  struct Case {
    const char* url;
    const char* says;
  } cases[] = {
      {"s3://ab", "3 to 63"},
      {"s3://bkt?endpoint=minio:9000", "needs its scheme"},  // sccache would take it as http
      {"s3://bkt?endpoint=ftp://minio", "needs its scheme"},
      {"s3://bkt?endpoint=http://", "no host"},
      {"s3://bkt?endpoint=http://h:0", "not 1-65535"},
      {"s3://bkt?endpoint=http://h:http", "not 1-65535"},
      {"s3://bkt?endpoint=http://h st", "cannot have"},
      {"s3://bkt?region=EU", "not a region"},
      {"s3://bkt?bucket=x", "not an s3:// setting"},
      {"s3://bkt/a//b", "empty folder"},
      // tailor's own S3 requests (cache/s3_objects) read the keys alone, never a profile.
      {"s3://bkt?endpoint=http://k:s@minio:9000",
       "give credentials as AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment "
       "(tailor's own S3 requests read only these)"},
  };
  for (const auto& c : cases) {
    CacheSettings s;
    auto ok = set_cache_url(s, c.url, "--cache-url");
    ASSERT_FALSE(ok) << c.url;
    EXPECT_NE(ok.error().message.find(c.says), std::string::npos)
        << c.url << " -> " << ok.error().message;
    EXPECT_EQ(s.storage, CacheStorage::local) << "a refused URL changes nothing";
  }
  // Credentials belong in the environment; the error does not repeat the secret.
  CacheSettings s;
  auto cred =
      set_cache_url(s, "s3://bkt?endpoint=http://AKIA1:s3cretKey@minio:9000", "--cache-url");
  ASSERT_FALSE(cred);
  EXPECT_NE(cred.error().message.find("AWS_SECRET_ACCESS_KEY"), std::string::npos)
      << cred.error().message;
  EXPECT_EQ(cred.error().message.find("s3cretKey"), std::string::npos) << cred.error().message;
  auto redis = set_cache_url(s, "redis://u:hunter2@host:99999", "--cache-url");
  ASSERT_FALSE(redis);
  EXPECT_EQ(redis.error().message.find("hunter2"), std::string::npos) << redis.error().message;
  // The same checks in a [cache] table, naming the key.
  auto t = parse_cache_settings("[cache]\nbucket = \"bkt\"\nendpoint = \"minio:9000\"\n", "t.toml");
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("cache.endpoint"), std::string::npos) << t.error().message;
  t = parse_cache_settings("[cache]\nbucket = \"bkt\"\nregion = \"Eu West\"\n", "t.toml");
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("cache.region"), std::string::npos) << t.error().message;
  t = parse_cache_settings("[cache]\nbucket = \"bkt?endpoint=http://h\"\n", "t.toml");
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("cache.bucket"), std::string::npos) << t.error().message;
  t = parse_cache_settings("[cache]\nbucket = \"bkt\"\nprefix = \"/a/b/\"\n", "t.toml");
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->prefix, "a/b");
}

TEST(CacheSettings, SccacheErrorHintsFromTheData) {
  EXPECT_NE(sccache_error_hint("create s3 cache failed: region is missing. Please").find("region"),
            std::string::npos);
  EXPECT_NE(sccache_error_hint("NoSuchBucket: The specified bucket does not exist").find("bucket"),
            std::string::npos);
  EXPECT_NE(sccache_error_hint("loading credential to sign http request").find("AWS_ACCESS_KEY_ID"),
            std::string::npos);
  EXPECT_EQ(sccache_error_hint("something else"), "");
}

TEST(CacheSettings, DescriptionsNeverShowAPassword) {
  CacheSettings s;
  ASSERT_TRUE(set_cache_url(s, "redis://:only-pw@host:1", "x"));
  EXPECT_EQ(describe_cache_storage(s), "redis://:***@host:1");
  ASSERT_TRUE(set_cache_url(s, "redis://user@host:1", "x"));
  EXPECT_EQ(describe_cache_storage(s), "redis://user:***@host:1");
  ASSERT_TRUE(set_cache_url(s, "redis://host:1/0", "x"));
  EXPECT_EQ(describe_cache_storage(s), "redis://host:1/0");
  auto e = set_cache_url(s, "s3://bkt/p?region=x&endpoint=https://k:v@h&x=redis://u:pw@h2", "x");
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().message.find(":v@"), std::string::npos) << e.error().message;
  EXPECT_EQ(e.error().message.find("pw"), std::string::npos) << e.error().message;
}
