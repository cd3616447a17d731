// `tailor dist up|status|down`: a local sccache-dist cluster (a scheduler and build servers
// on this machine) that `tailor build --dist` compiles on. `up` leaves the daemons running,
// detached, until `down` (or, with --foreground, until Ctrl-C / SIGTERM).
#include <fmt/format.h>
#include <poll.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "cache/sccache_dist.h"
#include "cli/commands.h"
#include "util/interrupt.h"
#include "util/process.h"

namespace tailor::cli {
namespace {

struct DistOptions {
  std::string state_dir;
  int servers = 1;
  int port = 10600;
  std::string listen = "127.0.0.1";
  std::optional<int> cores;
  int wait_s = 60;
  bool foreground = false;
  bool json = false;
};

std::string state_of(const DistOptions& o) {
  if (!o.state_dir.empty()) return o.state_dir;
  if (const char* env = std::getenv("TAILOR_DIST"); env && *env) return env;
  return cache::dist::default_state_dir();
}

nlohmann::json processes_json(const std::vector<cache::dist::ProcessEntry>& ps) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& p : ps)
    a.push_back({{"name", p.name}, {"pid", p.pid}, {"alive", p.alive}, {"log", p.log_file}});
  return a;
}

int run_up(const DistOptions& o) {
  // Bad values are usage errors (exit 2), before anything starts.
  if (o.servers < 1 || o.servers > 64)
    return report_error(fmt::format("--servers {}: expected 1 to 64", o.servers));
  if (o.port < 1024 || o.port + o.servers > 65535)
    return report_error(fmt::format("--port {}: expected 1024 to {}", o.port, 65535 - o.servers));
  if (o.cores && (*o.cores < 1 || *o.cores > 4096))
    return report_error(fmt::format("--cores {}: expected 1 to 4096", *o.cores));
  install_interrupt_handlers();
  SystemCommandRunner runner;
  cache::dist::UpOptions u;
  u.state_dir = state_of(o);
  u.servers = o.servers;
  u.port = o.port;
  u.listen = o.listen;
  u.cores = o.cores;
  if (o.wait_s < 1 || o.wait_s > 3600)
    return report_error(fmt::format("--wait {}: expected 1 to 3600 seconds", o.wait_s));
  u.wait = std::chrono::seconds(o.wait_s);
  auto r = cache::dist::up(u, runner);
  if (!r) return report_error(r.error().message, k_exit_failed);
  if (o.foreground)
    for (const auto& p : r->processes)
      supervise_process_group(static_cast<pid_t>(p.pid));  // gone with tailor
  if (o.json) {
    nlohmann::json j{{"state_dir", r->state_dir},
                     {"client_config", r->client_config},
                     {"scheduler_url", r->scheduler_url},
                     {"servers", r->status.num_servers},
                     {"cpus", r->status.num_cpus},
                     {"remote_server_config", r->remote_server_config},
                     {"processes", processes_json(r->processes)},
                     {"foreground", o.foreground}};
    std::printf("%s\n", with_schema(j, "dist").dump(2).c_str());
  } else {
    std::printf("sccache-dist scheduler at %s with %llu build server%s (%llu CPUs)\n",
                r->scheduler_url.c_str(), static_cast<unsigned long long>(r->status.num_servers),
                r->status.num_servers == 1 ? "" : "s",
                static_cast<unsigned long long>(r->status.num_cpus));
    for (const auto& p : r->processes)
      std::printf("  %-10s pid %ld  log %s\n", p.name.c_str(), p.pid, p.log_file.c_str());
    std::printf("client config: %s\n", r->client_config.c_str());
    std::printf("build with:    tailor build --dist %s ...\n", r->state_dir.c_str());
    if (o.foreground)
      std::printf("running in the foreground: Ctrl-C or SIGTERM stops the scheduler and servers\n");
    else
      std::printf(
          "the daemons keep running after this command; stop them with: tailor dist down "
          "--state-dir %s\n",
          r->state_dir.c_str());
    std::printf("\n%s", r->add_server_help.c_str());
  }
  std::fflush(stdout);
  if (!o.foreground) return k_exit_ok;
  // Wait for an interrupt (or for every daemon to die), then stop them all.
  for (;;) {
    pollfd p{interrupt_fd(), POLLIN, 0};
    if (::poll(&p, 1, 1000) > 0 || interrupt_signal() != 0) break;
    bool any = false;
    for (const auto& proc : cache::dist::processes_of(r->state_dir)) any = any || proc.alive;
    if (!any) break;
  }
  cache::dist::down(r->state_dir);
  if (int sig = interrupt_signal(); sig != 0) {
    std::fprintf(stderr, "tailor: interrupted; the scheduler and servers were stopped\n");
    return interrupt_exit_code(sig);
  }
  return report_error("every sccache-dist process exited; see the logs in " + r->state_dir,
                      k_exit_failed);
}

int run_status(const DistOptions& o) {
  std::string state = state_of(o);
  auto procs = cache::dist::processes_of(state);
  auto config = cache::dist::load_client_config(state, nullptr);
  std::optional<cache::dist::SchedulerStatus> st;
  std::string why;
  if (config) {
    if (auto s = cache::dist::scheduler_status(config->scheduler_url))
      st = *s;
    else
      why = s.error().message;
  } else {
    why = config.error().message;
  }
  bool all_alive = !procs.empty();
  for (const auto& p : procs) all_alive = all_alive && p.alive;
  if (o.json) {
    nlohmann::json j{{"state_dir", state}, {"processes", processes_json(procs)}};
    j["scheduler_url"] = config ? nlohmann::json(config->scheduler_url) : nlohmann::json(nullptr);
    j["scheduler"] = st ? nlohmann::json{{"servers", st->num_servers},
                                         {"cpus", st->num_cpus},
                                         {"in_progress", st->in_progress}}
                        : nlohmann::json(nullptr);
    if (!why.empty()) j["error"] = why;
    std::printf("%s\n", with_schema(j, "dist").dump(2).c_str());
  } else {
    std::printf("state folder: %s\n", state.c_str());
    if (procs.empty()) std::printf("  no processes started here (tailor dist up)\n");
    for (const auto& p : procs)
      std::printf("  %-10s pid %ld  %s  log %s\n", p.name.c_str(), p.pid,
                  p.alive ? "running" : "GONE", p.log_file.c_str());
    if (st)
      std::printf("scheduler %s: %llu build servers, %llu CPUs, %llu jobs in progress\n",
                  config->scheduler_url.c_str(), static_cast<unsigned long long>(st->num_servers),
                  static_cast<unsigned long long>(st->num_cpus),
                  static_cast<unsigned long long>(st->in_progress));
    else
      std::printf("scheduler: %s\n", why.c_str());
  }
  return st && all_alive && st->num_servers > 0 ? k_exit_ok : k_exit_failed;
}

int run_down(const DistOptions& o) {
  std::string state = state_of(o);
  auto stopped = cache::dist::down(state);
  bool left = false;
  for (const auto& p : stopped) {
    std::printf("stopped %-10s pid %ld%s\n", p.name.c_str(), p.pid,
                p.alive ? " (STILL RUNNING)" : "");
    left = left || p.alive;
  }
  if (stopped.empty()) std::printf("nothing running in %s\n", state.c_str());
  return left ? k_exit_failed : k_exit_ok;
}

}  // namespace

void setup_dist(CLI::App& sub, RunFn& run) {
  auto o = std::make_shared<DistOptions>();
  sub.require_subcommand(1);
  auto state_opt = [&](CLI::App* app) {
    app->add_option("--state-dir", o->state_dir,
                    "where configs, token, pid files and logs live (default: $TAILOR_DIST, else "
                    "~/.cache/tailor/dist)");
  };
  CLI::App* up = sub.add_subcommand(
      "up",
      "Start an sccache-dist scheduler and build servers on this machine (they keep running)");
  state_opt(up);
  up->add_option("--servers", o->servers, "build servers to start (default 1)");
  up->add_option("--port", o->port,
                 "the scheduler's port; servers take the next ones (default 10600)");
  up->add_option("--listen", o->listen,
                 "the scheduler's address (default 127.0.0.1; 0.0.0.0 to accept other machines)");
  up->add_option("--cores", o->cores, "CPUs each server offers (default: all)");
  up->add_option("--wait", o->wait_s, "seconds to wait for the servers to register (default 60)");
  up->add_flag("--foreground", o->foreground, "stay attached; Ctrl-C or SIGTERM stops everything");
  up->add_flag("--json", o->json, "machine-readable output");
  up->callback([o, &run] { run = [o] { return run_up(*o); }; });
  CLI::App* status = sub.add_subcommand(
      "status", "The scheduler, its servers and the processes `dist up` started");
  state_opt(status);
  status->add_flag("--json", o->json, "machine-readable output");
  status->callback([o, &run] { run = [o] { return run_status(*o); }; });
  CLI::App* down = sub.add_subcommand(
      "down", "Stop the scheduler and servers `dist up` started (by their pid files)");
  state_opt(down);
  down->callback([o, &run] { run = [o] { return run_down(*o); }; });
}

}  // namespace tailor::cli
