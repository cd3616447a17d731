// Distributed compilation over sccache-dist: a scheduler and build servers on this machine
// (`tailor dist up|status|down`), the client configuration a build hands to sccache
// (SCCACHE_CONF) and the checks that can be made before a build starts.
//
// Layout of a state folder (default ${XDG_CACHE_HOME:-~/.cache}/tailor/dist, mode 0700):
//   token               the shared secret (clients and servers), 0600
//   scheduler.toml      scheduler config, 0600; scheduler.log, scheduler.pid
//   server-<i>/         server.toml (0600), toolchains/, build/; server-<i>.log/.pid
//   client.toml         what builds use (SCCACHE_CONF), 0600
//   remote-server.toml  a template for a build server on another machine, 0600
// The daemons run detached (their own session, no tie to tailor's lifetime) until
// `tailor dist down`, which stops exactly the processes named by the pid files (a pid
// file records the process's start time, so a recycled pid is never signalled).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cache/cache_stats.h"
#include "util/expected.h"
#include "util/net.h"
#include "util/process.h"

namespace tailor::cache::dist {

/// The default state folder.
std::string default_state_dir();

// ---- configuration files (pure renderers; values are quoted as TOML basic strings) ----
std::string render_scheduler_config(const std::string& listen_addr, const std::string& token);
struct ServerConfigInput {
  std::string cache_dir, build_dir, bwrap_path;
  std::string public_addr;    ///< host:port clients and the scheduler reach this server at
  std::string scheduler_url;  ///< http://host:port
  std::string token;
};
std::string render_server_config(const ServerConfigInput& in);
std::string render_client_config(const std::string& scheduler_url, const std::string& token);

/// What a client config says (the part tailor uses).
struct ClientConfig {
  std::string path;
  std::string scheduler_url;
  std::string token;  ///< empty: no token auth configured
};
/// Parses a client config (TOML text); errors name `path` and the key.
Expected<ClientConfig> parse_client_config(std::string_view text, const std::string& path);
/// `--dist ARG`: a state folder (its client.toml) or a client config file; empty: the
/// variable TAILOR_DIST, else the default state folder. Returns the absolute path.
Expected<std::string> resolve_client_config_path(const std::string& arg, const char* env_value);
Expected<ClientConfig> load_client_config(const std::string& arg, const char* env_value);

// ---- statistics -------------------------------------------------------------------------
// DistStats and dist_stats_delta: cache/cache_stats.h, whose one sccache parser reads them.
/// parse_sccache_show_stats's dist counts: compilations, dist_errors, the requests sccache
/// could not distribute and dist_compiles (an object, server -> count).
Expected<DistStats> parse_dist_stats_json(std::string_view text);

/// The scheduler's GET /api/v1/scheduler/status as JSON.
struct SchedulerStatus {
  uint64_t num_servers = 0, num_cpus = 0, in_progress = 0;
};
Expected<SchedulerStatus> parse_scheduler_status_json(std::string_view text);
/// `sccache --dist-status` output: {"SchedulerStatus":[url,{...}]}, {"NotConnected":[url,why]},
/// {"Disabled":...}; the status or the reason as an error.
Expected<SchedulerStatus> parse_sccache_dist_status(std::string_view text);

// ---- the scheduler over HTTP ----------------------------------------------------------
struct HttpReply {
  int status = 0;
  std::string body;
};
/// One HTTP/1.1 request to an http:// or https:// URL (util/http_client), bounded: `timeout`
/// for connect and reply, at most 64 KiB of reply.
Expected<HttpReply> http_request(const std::string& base_url, const std::string& method,
                                 const std::string& path, const std::vector<std::string>& headers,
                                 std::chrono::milliseconds timeout);
Expected<SchedulerStatus> scheduler_status(const std::string& scheduler_url);
/// Whether the scheduler accepts `token` from clients: an allocation request with no body
/// is refused with 401 for a wrong token and 400 (no job) for a right one.
Expected<bool> scheduler_accepts_token(const std::string& scheduler_url, const std::string& token);

// ---- checks (doctor and the preflight of build --dist) ---------------------------------
struct DistCheck {
  std::string name;  ///< "config", "scheduler", "auth", "servers", "bwrap", "sccache", "nvcc"
  enum class Level { ok, warning, fail } level = Level::ok;
  std::string line;  ///< one line: what was found, or what is wrong and the fix
};
std::string_view level_name(DistCheck::Level level);
/// Everything checkable before a build: the config, the scheduler (reachable, the token
/// accepted, at least one server), local servers (alive, bubblewrap runs), sccache's
/// version and what it does with nvcc.
std::vector<DistCheck> check_dist(const std::string& arg, const char* env_value,
                                  CommandRunner& runner);
bool checks_ok(const std::vector<DistCheck>& checks);

// ---- a build's own sccache client ------------------------------------------------------
/// The variables a build gets: SCCACHE_CONF and a free SCCACHE_SERVER_PORT, so the sccache
/// server its compilers talk to is its own and starts with the dist config.
Expected<std::map<std::string, std::string>> client_environment(const ClientConfig& config);

/// One build's sccache server: started (`sccache --start-server`) under client_environment,
/// its statistics read at the start and the end, stopped (`--stop-server`) at the end.
struct BuildSession {
  ClientConfig config;
  /// SCCACHE_CONF, SCCACHE_SERVER_PORT, SCCACHE_IDLE_TIMEOUT and the storage's variables
  std::map<std::string, std::string> env;
  std::string sccache;
  int port = 0;              ///< the server's loopback port
  std::string stats_before;  ///< `--show-stats --stats-format json` after the start
};
/// Starts the build's own sccache server with the client config and `storage_env` (the
/// compiler cache's variables: a Redis or S3 storage, SCCACHE_DIR, SCCACHE_BASEDIRS), so a
/// distributed build reads and fills the shared cache and sends only its misses out.
Expected<BuildSession> start_build_session(const ClientConfig& config,
                                           const std::map<std::string, std::string>& storage_env,
                                           CommandRunner& runner);
/// The statistics at the end (JSON text); the server is stopped whether or not they could be read.
Expected<std::string> finish_build_session(const BuildSession& session, CommandRunner& runner);
/// What ran locally and why, from a build's counts, for the report (one line each).
std::vector<std::string> dist_notes(const DistStats& delta);

// ---- the local cluster -----------------------------------------------------------------
struct UpOptions {
  std::string state_dir;
  int servers = 1;
  int port = 10600;                  ///< the scheduler's; servers take port+1 .. port+N
  std::string listen = "127.0.0.1";  ///< the scheduler's address (0.0.0.0 for other machines)
  std::optional<int> cores;          ///< CPUs per server (taskset; sccache-dist counts them)
  std::chrono::seconds wait{60};     ///< for the servers to register
};
struct ProcessEntry {
  std::string name;  ///< "scheduler", "server-1", ...
  std::string pid_file, log_file;
  long pid = 0;
  bool alive = false;
};
struct UpResult {
  std::string state_dir, client_config, scheduler_url, remote_server_config;
  std::vector<ProcessEntry> processes;
  SchedulerStatus status;
  std::string add_server_help;  ///< how to add a build server on another machine
};
/// Starts the scheduler and servers (detached), waits until the scheduler reports all
/// servers and `sccache --dist-status` with the client config sees them. On failure what
/// was started is stopped again and the error quotes the failing log's last lines.
Expected<UpResult> up(const UpOptions& options, CommandRunner& runner);
/// The processes the state folder names, and whether each is still the one started.
std::vector<ProcessEntry> processes_of(const std::string& state_dir);
/// Stops every process the state folder names (SIGTERM to its group, SIGKILL after
/// `grace`) and removes the pid files; returns those it stopped.
std::vector<ProcessEntry> down(const std::string& state_dir,
                               std::chrono::milliseconds grace = std::chrono::seconds(5));

}  // namespace tailor::cache::dist
