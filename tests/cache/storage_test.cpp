// The storage backends (cache/storage.h): each one's description without secrets, the
// variables each tool gets for it, whether it is shared, and its check under the one
// outage rule (nothing answering: reachable false, the build goes on uncached; a storage
// that answers and refuses: an error), over loopback listeners and a real redis-server.
#include "cache/storage.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "support/fixtures.h"
#include "util/net.h"
#include "util/process.h"

extern char** environ;

using namespace tailor;
using namespace tailor::cache;
using namespace std::chrono_literals;

namespace {

/// A loopback listener that takes one connection and, for each of `replies`, reads what
/// the client sends and answers with the reply (an empty reply: says nothing); keeps
/// what it read.
struct ScriptedListener {
  int fd = -1;
  int port = 0;
  std::thread thread;
  std::mutex mutex;
  std::string received;
  explicit ScriptedListener(std::vector<std::string> replies) {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    ::listen(fd, 4);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
    thread = std::thread([this, replies] {
      int c = ::accept(fd, nullptr, nullptr);
      if (c < 0) return;
      for (const auto& reply : replies) {
        char buf[512];
        ssize_t n = ::recv(c, buf, sizeof buf, 0);
        if (n <= 0) break;
        {
          std::lock_guard<std::mutex> lock(mutex);
          received.append(buf, static_cast<size_t>(n));
        }
        if (!reply.empty()) (void)::send(c, reply.data(), reply.size(), MSG_NOSIGNAL);
      }
      ::usleep(200 * 1000);
      ::close(c);
    });
  }
  std::string what_was_sent() {
    std::lock_guard<std::mutex> lock(mutex);
    return received;
  }
  ~ScriptedListener() {
    ::shutdown(fd, SHUT_RDWR);
    ::close(fd);
    thread.join();
  }
};

std::string loopback(int port) { return "redis://127.0.0.1:" + std::to_string(port); }

/// Debian's redis-server on a free loopback port, nothing persisted; stopped (SIGTERM, then
/// waited for) at the end. `password`: requirepass.
struct RealRedis {
  pid_t pid = -1;
  int port = 0;
  explicit RealRedis(const std::string& executable, const std::string& password = "") {
    auto p = free_loopback_port();
    if (!p) return;
    port = *p;
    std::vector<std::string> args = {
        executable,     "--port", std::to_string(port), "--bind",   "127.0.0.1", "--save", "",
        "--appendonly", "no",     "--logfile",          "/dev/null"};
    if (!password.empty()) args.insert(args.end(), {"--requirepass", password});
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (::posix_spawn(&pid, executable.c_str(), nullptr, nullptr, argv.data(), environ) != 0)
      pid = -1;
    for (int i = 0; i < 100 && pid > 0; ++i) {
      if (auto fd = connect_tcp("127.0.0.1", std::to_string(port), 100ms)) {
        ::close(*fd);
        return;
      }
      std::this_thread::sleep_for(50ms);
    }
  }
  ~RealRedis() {
    if (pid <= 0) return;
    ::kill(pid, SIGTERM);
    int status = 0;
    ::waitpid(pid, &status, 0);
  }
};

}  // namespace

TEST(CacheStorage, TheSettingsPickTheirBackend) {
  CacheSettings s;
  EXPECT_EQ(storage_backend(s)->kind(), CacheStorage::local);
  EXPECT_FALSE(s.shared());
  ASSERT_TRUE(set_cache_url(s, "redis://cache:6379", "x"));
  EXPECT_EQ(storage_backend(s)->kind(), CacheStorage::redis);
  EXPECT_TRUE(s.shared());
  ASSERT_TRUE(set_cache_url(s, "s3://bucket/p", "x"));
  EXPECT_EQ(storage_backend(s)->kind(), CacheStorage::s3);
  EXPECT_TRUE(s.shared());
  ASSERT_TRUE(set_cache_url(s, "/var/cache/cc", "x"));
  EXPECT_EQ(storage_backend(s)->kind(), CacheStorage::local);
  EXPECT_FALSE(s.shared());
}

// ---- descriptions ---------------------------------------------------------------------

TEST(CacheStorage, DescriptionsHoldNoSecret) {
  EXPECT_EQ(LocalStorage("", "").describe(), "local, the tool's default folder");
  EXPECT_EQ(LocalStorage("/var/cache/cc", "20G").describe(), "local /var/cache/cc");
  EXPECT_EQ(RedisStorage("redis://user:s3cret@cache.internal:6390/2").describe(),
            "redis://user:***@cache.internal:6390/2");
  EXPECT_EQ(RedisStorage("rediss://:pw@h:1").describe(), "rediss://:***@h:1");
  EXPECT_EQ(RedisStorage("redis://h:1/0").describe(), "redis://h:1/0");
  EXPECT_EQ(S3Storage("bkt", "a/b", "http://minio:9000", "eu-1").describe(),
            "s3://bkt/a/b (endpoint http://minio:9000, region eu-1)");
  EXPECT_EQ(S3Storage("bkt", "", "", "").describe(), "s3://bkt");
  // set_cache_url refuses an endpoint with a user, but the backend hides one all the same.
  std::string with_user = S3Storage("bkt", "", "https://key:secret@h", "").describe();
  EXPECT_EQ(with_user.find("secret"), std::string::npos) << with_user;
  // A control character in a folder name cannot reach a terminal.
  EXPECT_EQ(LocalStorage("/x\x1b[2J", "").describe().find('\x1b'), std::string::npos);
}

// ---- the variables per tool -------------------------------------------------------------

TEST(CacheStorage, LocalVariablesPerTool) {
  LocalStorage dflt("", "");
  EXPECT_TRUE(
      dflt.tool_environment(CacheTool::sccache)->empty());  // the tool's own folder and size
  LocalStorage set("/var/cache/cc", "20G");
  EXPECT_EQ(*set.tool_environment(CacheTool::ccache),
            (std::map<std::string, std::string>{{"CCACHE_DIR", "/var/cache/cc"},
                                                {"CCACHE_MAXSIZE", "20G"}}));
  EXPECT_EQ(*set.tool_environment(CacheTool::sccache),
            (std::map<std::string, std::string>{{"SCCACHE_DIR", "/var/cache/cc"},
                                                {"SCCACHE_CACHE_SIZE", "20G"}}));
  EXPECT_FALSE(set.tool_environment(CacheTool::none));
}

TEST(CacheStorage, RedisVariablesPerTool) {
  RedisStorage r("redis://:pw@cache:6379/1");
  EXPECT_EQ(
      *r.tool_environment(CacheTool::ccache),
      (std::map<std::string, std::string>{{"CCACHE_REMOTE_STORAGE", "redis://:pw@cache:6379/1"}}));
  // sccache prefers S3 to Redis: a bucket in the caller's environment is emptied.
  EXPECT_EQ(*r.tool_environment(CacheTool::sccache),
            (std::map<std::string, std::string>{
                {"SCCACHE_REDIS_ENDPOINT", "redis://:pw@cache:6379/1"}, {"SCCACHE_BUCKET", ""}}));
}

TEST(CacheStorage, S3VariablesForSccacheAndAnErrorForCcache) {
  S3Storage s("bkt", "ci/x", "https://minio.internal", "");
  EXPECT_EQ(*s.tool_environment(CacheTool::sccache),
            (std::map<std::string, std::string>{{"SCCACHE_BUCKET", "bkt"},
                                                {"SCCACHE_S3_KEY_PREFIX", "ci/x"},
                                                {"SCCACHE_ENDPOINT", "https://minio.internal"},
                                                {"SCCACHE_S3_USE_SSL", "true"},
                                                {"SCCACHE_REGION", "auto"}}));
  auto cc = s.tool_environment(CacheTool::ccache);
  ASSERT_FALSE(cc);
  EXPECT_EQ(cc.error().message,
            "ccache cannot use s3 storage (s3://bkt/ci/x (endpoint https://minio.internal)); use "
            "sccache");
}

// Where a build checks that an S3 storage answers: the endpoint's host and port, the
// scheme's port when none, AWS's host (from the data) when no endpoint.
TEST(CacheStorage, S3AddressFromTheEndpointOrAws) {
  using HostPort = std::pair<std::string, std::string>;
  EXPECT_EQ(S3Storage("b", "", "http://minio.internal:9000/x", "").address(),
            (HostPort{"minio.internal", "9000"}));
  EXPECT_EQ(S3Storage("b", "", "https://r2.example.com", "").address(),
            (HostPort{"r2.example.com", "443"}));
  EXPECT_EQ(S3Storage("b", "", "http://[::1]:9000", "").address(), (HostPort{"::1", "9000"}));
  EXPECT_EQ(S3Storage("b", "", "http://[::1]", "").address(), (HostPort{"::1", "80"}));
  EXPECT_EQ(S3Storage("b", "", "", "").address(), (HostPort{"s3.amazonaws.com", "443"}));
  EXPECT_EQ(S3Storage("b", "", "", "eu-west-1").address(),
            (HostPort{"s3.eu-west-1.amazonaws.com", "443"}));
}

// ---- checks: outage against refusal -------------------------------------------------------

// Nothing listening is an outage (the build goes on uncached), the same for Redis and S3.
TEST(CacheStorage, NobodyListeningIsAnOutageForRedisAndS3) {
  auto port = free_loopback_port();
  ASSERT_TRUE(port);
  auto redis = RedisStorage(loopback(*port)).check(500ms);
  ASSERT_TRUE(redis) << redis.error().message;
  EXPECT_FALSE(redis->reachable);
  EXPECT_NE(redis->detail.find("cannot connect"), std::string::npos) << redis->detail;
  auto s3 = S3Storage("bucket", "p", "http://127.0.0.1:" + std::to_string(*port), "").check(500ms);
  ASSERT_TRUE(s3) << s3.error().message;
  EXPECT_FALSE(s3->reachable);
  EXPECT_NE(s3->detail.find("cannot connect"), std::string::npos) << s3->detail;
  // check_shared_storage is the settings' backend's check.
  CacheSettings s;
  ASSERT_TRUE(set_cache_url(s, loopback(*port), "x"));
  auto via_settings = check_shared_storage(s, 500ms);
  ASSERT_TRUE(via_settings);
  EXPECT_FALSE(via_settings->reachable);
}

TEST(CacheStorage, S3EndpointThatListensIsReachable) {
  ScriptedListener listener({""});
  auto s3 = S3Storage("bucket", "", "http://127.0.0.1:" + std::to_string(listener.port) + "/", "")
                .check(2000ms);
  ASSERT_TRUE(s3) << s3.error().message;
  EXPECT_TRUE(s3->reachable) << s3->detail;
  EXPECT_EQ(s3->detail, "127.0.0.1:" + std::to_string(listener.port) + " accepts connections");
}

TEST(CacheStorage, RedisThatRefusesIsAnError) {
  ScriptedListener listener({"-NOAUTH Authentication required.\r\n"});
  auto redis = RedisStorage(loopback(listener.port)).check(2000ms);
  ASSERT_FALSE(redis);
  EXPECT_NE(redis.error().message.find("NOAUTH"), std::string::npos) << redis.error().message;
}

TEST(CacheStorage, RedisThatSaysNothingIsAnErrorNotAnOutage) {
  // Something listens and never answers PING: a server to look at, not a down storage.
  ScriptedListener listener({""});
  auto redis =
      RedisStorage(loopback(listener.port)).check(100ms);  // the listener holds on for 200 ms
  ASSERT_FALSE(redis);
  EXPECT_NE(redis.error().message.find("(no reply)"), std::string::npos) << redis.error().message;
}

TEST(CacheStorage, RedisAuthThenPing) {
  ScriptedListener listener({"+OK\r\n", "+PONG\r\n"});
  auto redis = RedisStorage("redis://builder:pw1@127.0.0.1:" + std::to_string(listener.port) + "/0")
                   .check(2000ms);
  ASSERT_TRUE(redis) << redis.error().message;
  EXPECT_TRUE(redis->reachable);
  EXPECT_EQ(redis->detail, "answers PING");
  // RESP arrays: AUTH with the user and password, then PING.
  const std::string sent = listener.what_was_sent();
  EXPECT_EQ(sent.rfind("*3\r\n$4\r\nAUTH\r\n$7\r\nbuilder\r\n$3\r\npw1\r\n", 0), 0u) << sent;
  EXPECT_NE(sent.find("*1\r\n$4\r\nPING\r\n"), std::string::npos) << sent;
}

TEST(CacheStorage, RedisTlsIsLeftToSccache) {
  auto port = free_loopback_port();
  ASSERT_TRUE(port);
  auto tls = RedisStorage("rediss://127.0.0.1:" + std::to_string(*port)).check(200ms);
  ASSERT_TRUE(tls);
  EXPECT_TRUE(tls->reachable);  // nothing listens, but no connection was tried
  EXPECT_NE(tls->detail.find("TLS"), std::string::npos);
}

TEST(CacheStorage, RedisPingNamesWhatFailed) {
  auto port = free_loopback_port();
  ASSERT_TRUE(port);
  bool unreachable = false;
  auto r = redis_ping(loopback(*port), 500ms, &unreachable);
  ASSERT_FALSE(r);
  EXPECT_TRUE(unreachable);
  EXPECT_NE(r.error().message.find("cannot connect"), std::string::npos) << r.error().message;
  EXPECT_FALSE(redis_ping("rediss://127.0.0.1:6379", 100ms));
  auto other = redis_ping("http://u:pw@x", 100ms);
  ASSERT_FALSE(other);
  EXPECT_EQ(other.error().message.find("pw"), std::string::npos) << other.error().message;
  EXPECT_FALSE(redis_ping("redis://no-such-host.invalid:6379", 500ms));
}

// The real Redis: PING answers; with a password, the wrong one is refused (an error: a
// setting to fix) and the right one answers.
TEST(CacheStorage, RealRedisAnswersAndRefusesAWrongPassword) {
  const std::string server = find_in_path("redis-server");
  if (server.empty()) GTEST_SKIP() << "redis-server not installed";
  {
    RealRedis open(server);
    ASSERT_GT(open.pid, 0);
    auto ok = RedisStorage(loopback(open.port)).check(2000ms);
    ASSERT_TRUE(ok) << ok.error().message;
    EXPECT_TRUE(ok->reachable);
    EXPECT_EQ(ok->detail, "answers PING");
  }
  RealRedis locked(server, "right-pw");
  ASSERT_GT(locked.pid, 0);
  const std::string at = "@127.0.0.1:" + std::to_string(locked.port);
  auto wrong = RedisStorage("redis://:wrong-pw" + at).check(2000ms);
  ASSERT_FALSE(wrong);
  EXPECT_NE(wrong.error().message.find("AUTH refused"), std::string::npos) << wrong.error().message;
  EXPECT_EQ(wrong.error().message.find("wrong-pw"), std::string::npos) << wrong.error().message;
  auto none = RedisStorage("redis://127.0.0.1:" + std::to_string(locked.port)).check(2000ms);
  ASSERT_FALSE(none);  // NOAUTH
  EXPECT_NE(none.error().message.find("NOAUTH"), std::string::npos) << none.error().message;
  auto right = RedisStorage("redis://:right-pw" + at).check(2000ms);
  ASSERT_TRUE(right) << right.error().message;
  EXPECT_TRUE(right->reachable);
}

// A local folder is never an outage: there and writable, or made later in a writable one;
// a folder that cannot be (a file in the way) is an error naming it.
TEST(CacheStorage, LocalFolderChecks) {
  tailor::test::TempDir tmp("storage_local");
  auto dflt = LocalStorage("", "").check(0ms);
  ASSERT_TRUE(dflt);
  EXPECT_TRUE(dflt->reachable);
  EXPECT_EQ(dflt->detail, "the tool's default folder");

  auto there = LocalStorage(tmp.path.string(), "").check(0ms);
  ASSERT_TRUE(there) << there.error().message;
  EXPECT_TRUE(there->reachable);
  EXPECT_EQ(there->detail, "a folder tailor can write in");

  auto later = LocalStorage((tmp.path / "a" / "b").string(), "").check(0ms);
  ASSERT_TRUE(later) << later.error().message;
  EXPECT_TRUE(later->reachable);
  EXPECT_EQ(later->detail, "made in " + tmp.path.string() + " when the tool first writes");

  std::ofstream(tmp.path / "file") << "x";
  auto blocked = LocalStorage((tmp.path / "file" / "cache").string(), "").check(0ms);
  ASSERT_FALSE(blocked);
  EXPECT_EQ(blocked.error().message, (tmp.path / "file" / "cache").string() + ": " +
                                         (tmp.path / "file").string() + " is not a folder");
  CacheSettings s;
  ASSERT_TRUE(set_cache_url(s, (tmp.path / "file").string(), "x"));
  EXPECT_FALSE(check_shared_storage(s, 0ms));
}
