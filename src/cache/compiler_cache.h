// Compiler caches (ccache, sccache) as processes: sccache's version gate, a build's own
// sccache server (its statistics are the build's alone), the server's process, sccache's
// startup errors as one line, and the wrappers torch needs around a cached compiler. The
// statistics' one reader is cache/cache_stats.h; the storages' backends and checks are
// cache/storage.h (both included here, for the callers of this header).
#pragma once
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "cache/cache_settings.h"
#include "cache/cache_stats.h"
#include "cache/storage.h"
#include "util/expected.h"
#include "util/net.h"
#include "util/process.h"

namespace tailor::cache {

/// `sccache --version` ("sccache 0.16.0"): "0.16.0"; empty when it does not answer so.
std::string sccache_version(const std::string& executable, CommandRunner& runner);

/// Whether `executable` is an sccache tailor can use: data/cache/caches.toml's
/// `min_version` (from 0.9 on sccache splits nvcc into its steps and caches each). An older
/// one is an error naming both versions; a version that cannot be read is let through (the
/// server's start then says what is wrong). Returns the version read.
Expected<std::string> check_sccache_version(const std::string& executable, CommandRunner& runner);

/// A build's own sccache server, so its statistics are this build's alone and two builds
/// at once do not share one server's configuration. Started on a free loopback port with
/// the storage variables (SCCACHE_REDIS_ENDPOINT, ...) and an idle timeout; every step of
/// the build gets `env()` so its sccache calls reach this server. Stopped by stop() or the
/// destructor; after an interrupt the runner's sweep kills it (it carries the run marker).
class SccacheServer {
 public:
  /// An sccache older than data/cache/caches.toml's `min_version` is refused first
  /// (check_sccache_version).
  /// `launcher`: what `sccache --start-server` runs behind (the build's private mount
  /// namespace, so the server sees the work folder where the build's compiles name it);
  /// empty: nothing.
  static Expected<std::unique_ptr<SccacheServer>> start(
      const std::string& executable, std::map<std::string, std::string> storage_env,
      CommandRunner& runner, const std::vector<std::string>& launcher = {});
  ~SccacheServer();
  SccacheServer(const SccacheServer&) = delete;
  SccacheServer& operator=(const SccacheServer&) = delete;

  /// The storage variables plus SCCACHE_SERVER_PORT and SCCACHE_IDLE_TIMEOUT.
  const std::map<std::string, std::string>& env() const { return m_env; }
  int port() const { return m_port; }
  /// `sccache --show-stats --stats-format json` of this server (read_tool_stats): all it
  /// says, and its counts alone (what a build report takes).
  Expected<ToolStats> tool_stats();
  Expected<CacheStats> stats();
  /// `sccache --stop-server`; idempotent.
  void stop();
  /// The server's process (it daemonizes out of tailor's tree): the `sccache` process
  /// whose environment has this server's SCCACHE_SERVER_PORT; nullopt when none is found.
  /// The memory governor counts its children as the build's compile jobs.
  std::optional<pid_t> server_pid() const;

 private:
  SccacheServer(std::string executable, std::map<std::string, std::string> env, int port,
                CommandRunner& runner)
      : m_executable(std::move(executable)),
        m_env(std::move(env)),
        m_port(port),
        m_runner(runner) {}
  CommandSpec spec(std::vector<std::string> args) const;
  std::string m_executable;
  std::map<std::string, std::string> m_env;
  int m_port = 0;
  CommandRunner& m_runner;
  bool m_running = true;
};

/// The sccache server listening on loopback `port` (it daemonizes out of tailor's tree):
/// the process whose environment has SCCACHE_SERVER_PORT=`port` and whose name is one of
/// `names` (empty: sccache_process_names(), data/cache/caches.toml: the server is the
/// client's own executable), found under `proc_root`; nullopt when none is.
std::optional<pid_t> sccache_server_pid(int port, const std::string& proc_root = "/proc",
                                        const std::vector<std::string>& names = {});

/// What sccache printed when its server did not start (the error, then opendal's Context,
/// Source and a backtrace, over many lines) as one line: the error without opendal's kind
/// and operation ("ConfigInvalid (permanent) at read => "), an S3 error as its code and
/// message, the first line of the Source ("... Connection refused (os error 111)"), and a
/// hint in tailor's terms where the data has one (a missing region, bucket or credentials).
std::string sccache_startup_error(std::string_view output);

/// A compiler the build runs through the compiler cache, as the plan decided it: the
/// cache's executable launches the compiler. Never one "ccache g++" text.
struct CompilerLaunch {
  std::string variable;  ///< "CC", "CXX": where the build reads its compiler
  std::string launcher;  ///< the cache tool's path
  std::string compiler;  ///< "g++", or the caller's own compiler
  bool operator==(const CompilerLaunch&) const = default;
};

/// torch.utils.cpp_extension checks the host compiler by running `$CXX -dumpfullversion`
/// and by its name, so CXX="ccache g++" fails ("ccache (0.0.0) is less than the minimum
/// required version"). Each launch becomes a wrapper script named after the compiler,
/// written into `dir`, that runs `<launcher> <absolute compiler> "$@"`; returns each
/// launch's variable with its wrapper's path.
Expected<std::map<std::string, std::string>> wrap_cached_compilers(
    const std::vector<CompilerLaunch>& launches, const std::string& dir);

}  // namespace tailor::cache
