// The small bounded HTTP client of `tailor dist`: the scheduler's status and token checks
// over a plain socket (https through curl), and the JSON they answer.
#include "cache/sccache_dist_http.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>

#include "cache/sccache_dist.h"
#include "util/files.h"
#include "util/net.h"
#include "util/strings.h"

namespace tailor::cache::dist {
using namespace std::chrono_literals;

Expected<Url> parse_url(const std::string& url) {
  Url u;
  auto sep = url.find("://");
  if (sep == std::string::npos)
    return make_error(fmt::format("{}: not a URL (http://host:port)", url));
  u.scheme = url.substr(0, sep);
  if (u.scheme != "http" && u.scheme != "https")
    return make_error(fmt::format("{}: only http and https URLs", url));
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
  if (u.host.size() > 2 && u.host.front() == '[' && u.host.back() == ']')
    u.host = u.host.substr(1, u.host.size() - 2);
  return u;
}

namespace {

uint64_t json_u64(const nlohmann::json& obj, const char* key) {
  if (!obj.is_object() || !obj.contains(key)) return 0;
  const auto& v = obj[key];
  return v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0)
             ? v.get<uint64_t>()
             : 0;
}

std::string strip_slash(std::string s) {
  while (!s.empty() && s.back() == '/') s.pop_back();
  return s;
}

Expected<HttpReply> http_over_socket(const Url& u, const std::string& method,
                                     const std::string& path,
                                     const std::vector<std::string>& headers,
                                     std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  auto connected = connect_tcp(u.host, u.port, timeout);
  if (!connected) return connected.error();
  int fd = *connected;
  std::string req =
      fmt::format("{} {} HTTP/1.1\r\nHost: {}:{}\r\nConnection: close\r\nContent-Length: 0\r\n",
                  method, path, u.host, u.port);
  for (const auto& h : headers) req += h + "\r\n";
  req += "\r\n";
  size_t sent = 0;
  std::string reply;
  constexpr size_t k_max_reply = 64 * 1024;
  bool eof = false;
  while (!eof) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      ::close(fd);
      return make_error(
          fmt::format("{}:{}: no reply within {} ms", u.host, u.port, timeout.count()));
    }
    pollfd p{fd, static_cast<short>(sent < req.size() ? POLLOUT : POLLIN), 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    if (sent < req.size()) {
      ssize_t n = ::send(fd, req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno != EAGAIN && errno != EINTR) {
        ::close(fd);
        return make_error(
            fmt::format("{}:{}: send failed: {}", u.host, u.port, std::strerror(errno)));
      }
      if (n > 0) sent += static_cast<size_t>(n);
      continue;
    }
    char buf[4096];
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n == 0)
      eof = true;
    else if (n > 0) {
      reply.append(buf, static_cast<size_t>(n));
      if (reply.size() > k_max_reply) {
        ::close(fd);
        return make_error(
            fmt::format("{}:{}: reply larger than {} bytes", u.host, u.port, k_max_reply));
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
                                   const std::vector<std::string>& headers,
                                   std::chrono::milliseconds timeout) {
  std::string curl = find_in_path("curl");
  if (curl.empty()) return make_error(fmt::format("{}: https needs curl on PATH", url));
  std::vector<std::string> argv = {
      curl, "-s",   "-m", std::to_string(std::max<int64_t>(1, timeout.count() / 1000)),
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

}  // namespace

Expected<SchedulerStatus> parse_scheduler_status_json(std::string_view text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("num_servers"))
    return make_error("the scheduler's status is not the JSON status object");
  return SchedulerStatus{json_u64(j, "num_servers"), json_u64(j, "num_cpus"),
                         json_u64(j, "in_progress")};
}

Expected<SchedulerStatus> parse_sccache_dist_status(std::string_view text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.empty())
    return make_error("sccache --dist-status: not JSON");
  if (j.contains("SchedulerStatus") && j["SchedulerStatus"].is_array() &&
      j["SchedulerStatus"].size() == 2)
    return parse_scheduler_status_json(j["SchedulerStatus"][1].dump());
  auto [kind, value] = *j.items().begin();
  std::string why = value.is_array() && !value.empty() ? value.back().dump() : value.dump();
  if (why.size() >= 2 && why.front() == '"') why = why.substr(1, why.size() - 2);
  return make_error(fmt::format("sccache --dist-status: {}: {}", kind, why));
}

Expected<HttpReply> http_request(const std::string& base_url, const std::string& method,
                                 const std::string& path, const std::vector<std::string>& headers,
                                 std::chrono::milliseconds timeout) {
  TAILOR_TRY(u, parse_url(base_url));
  if (u.scheme == "https")
    return http_over_curl(strip_slash(base_url) + path, method, headers, timeout);
  return http_over_socket(u, method, path, headers, timeout);
}

Expected<SchedulerStatus> scheduler_status(const std::string& scheduler_url) {
  TAILOR_TRY(reply, http_request(scheduler_url, "GET", "/api/v1/scheduler/status",
                                 {"Accept: application/json"}, 5s));
  if (reply.status != 200)
    return make_error(
        fmt::format("{}: status request answered HTTP {}", scheduler_url, reply.status));
  return parse_scheduler_status_json(reply.body);
}

Expected<bool> scheduler_accepts_token(const std::string& scheduler_url, const std::string& token) {
  TAILOR_TRY(reply, http_request(scheduler_url, "POST", "/api/v1/scheduler/alloc_job",
                                 {"Authorization: Bearer " + token}, 5s));
  if (reply.status == 401) return false;
  if (reply.status == 400) return true;
  return make_error(fmt::format("{}: an empty job request answered HTTP {} (expected 400 or 401)",
                                scheduler_url, reply.status));
}

}  // namespace tailor::cache::dist
