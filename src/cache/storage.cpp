#include "cache/storage.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <initializer_list>

#include "util/files.h"
#include "util/net.h"
#include "util/strings.h"
#include "util/text_escape.h"

namespace tailor::cache {

namespace {

/// The error of a tool asked to use a storage it has no variables for.
Error cannot_use(CacheTool tool, const CacheStorageBackend& storage) {
  return Error{fmt::format("{} cannot use {} storage ({}); use sccache", cache_tool_name(tool),
                           cache_storage_name(storage.kind()), storage.describe())};
}

Expected<std::string> need_variable(CacheTool tool, std::string_view what,
                                    const CacheStorageBackend& storage) {
  std::string name = cache_tool_variable(tool, what);
  if (name.empty()) return cannot_use(tool, storage);
  return name;
}

/// An endpoint's host and port ("http://h:9000/x" -> h, 9000; the scheme's port when none;
/// brackets of an IPv6 host removed). `rest` is the endpoint without its scheme.
std::pair<std::string, std::string> endpoint_host_port(std::string_view rest,
                                                       std::string_view default_port) {
  std::string_view authority = rest.substr(0, rest.find_first_of("/?#"));
  std::string_view host = authority, port = default_port;
  if (auto colon = authority.rfind(':');
      colon != std::string_view::npos && authority.find(']', colon) == std::string_view::npos) {
    host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  }
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  return {std::string(host), std::string(port)};
}

}  // namespace

// ---- local ------------------------------------------------------------------------------

std::string LocalStorage::describe() const {
  return m_dir.empty() ? std::string("local, the tool's default folder")
                       : "local " + terminal_safe(m_dir);
}

Expected<std::map<std::string, std::string>> LocalStorage::tool_environment(CacheTool tool) const {
  if (tool == CacheTool::none) return make_error("'none' is not a compiler cache");
  std::map<std::string, std::string> env;
  if (!m_dir.empty()) env[cache_tool_variable(tool, "dir")] = m_dir;
  if (!m_size.empty()) env[cache_tool_variable(tool, "size")] = m_size;
  return env;
}

Expected<StorageCheck> LocalStorage::check(std::chrono::milliseconds) const {
  if (m_dir.empty()) return StorageCheck{true, "the tool's default folder"};
  namespace fs = std::filesystem;
  // The nearest folder that is there: the tool makes the rest when it first writes.
  fs::path existing(m_dir);
  std::error_code ec;
  while (!fs::exists(existing, ec) && existing.has_parent_path() &&
         existing != existing.parent_path())
    existing = existing.parent_path();
  const std::string where = terminal_safe(existing.string());
  if (!fs::is_directory(existing, ec))
    return make_error(fmt::format("{}: {} is not a folder", terminal_safe(m_dir), where));
  if (::access(existing.c_str(), W_OK | X_OK) != 0)
    return make_error(
        fmt::format("{}: cannot write in {}: {}", terminal_safe(m_dir), where, errno_text(errno)));
  if (existing == fs::path(m_dir)) return StorageCheck{true, "a folder tailor can write in"};
  return StorageCheck{true, fmt::format("made in {} when the tool first writes", where)};
}

// ---- Redis ------------------------------------------------------------------------------

std::string RedisStorage::describe() const { return terminal_safe(hide_url_passwords(m_url)); }

Expected<std::map<std::string, std::string>> RedisStorage::tool_environment(CacheTool tool) const {
  if (tool == CacheTool::none) return make_error("'none' is not a compiler cache");
  TAILOR_TRY(name, need_variable(tool, "redis", *this));
  std::map<std::string, std::string> env{{name, m_url}};
  // sccache prefers S3 to Redis: a bucket in the caller's environment would win.
  if (auto bucket = cache_tool_variable(tool, "bucket"); !bucket.empty()) env[bucket] = "";
  return env;
}

Expected<StorageCheck> RedisStorage::check(std::chrono::milliseconds timeout) const {
  if (m_url.starts_with("rediss://"))
    return StorageCheck{true, "TLS: sccache checks it when the build starts"};
  bool unreachable = false;
  auto pong = redis_ping(m_url, timeout, &unreachable);
  if (pong) return StorageCheck{true, "answers PING"};
  if (unreachable) return StorageCheck{false, pong.error().message};
  return pong.error();
}

Expected<std::string> redis_ping(const std::string& url, std::chrono::milliseconds timeout,
                                 bool* unreachable) {
  if (unreachable) *unreachable = false;
  if (url.starts_with("rediss://"))
    return make_error(
        "a TLS (rediss://) server is not checked here; sccache checks it when a build starts");
  if (!url.starts_with("redis://"))
    return make_error(
        fmt::format("'{}' is not a redis:// URL", terminal_safe(hide_url_passwords(url))));
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
  auto send_line = [&](const std::string& cmd) {
    return ::send(fd, cmd.data(), cmd.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(cmd.size());
  };
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
      if (::poll(&p, 1, static_cast<int>(timeout.count())) != 1)
        return line.empty() ? "(no reply)" : line;
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
      return make_error(
          fmt::format("{}:{}: AUTH refused ({})", host, port, terminal_safe(trim(reply))));
    }
  }
  send_line(resp({"PING"}));
  reply = read_line();
  ::close(fd);
  if (reply == "+PONG") return std::string("PONG");
  return make_error(fmt::format("{}:{}: PING answered '{}'", host, port,
                                terminal_safe(trim(reply).substr(0, 200))));
}

// ---- S3 ---------------------------------------------------------------------------------

std::string S3Storage::describe() const {
  std::string out = "s3://" + m_bucket + (m_prefix.empty() ? "" : "/" + m_prefix);
  std::vector<std::string> extra;
  if (!m_endpoint.empty()) extra.push_back("endpoint " + hide_url_passwords(m_endpoint));
  if (!m_region.empty()) extra.push_back("region " + m_region);
  if (!extra.empty()) out += " (" + join(extra, ", ") + ")";
  return terminal_safe(out);
}

Expected<std::map<std::string, std::string>> S3Storage::tool_environment(CacheTool tool) const {
  if (tool == CacheTool::none) return make_error("'none' is not a compiler cache");
  TAILOR_TRY(bucket, need_variable(tool, "bucket", *this));
  std::map<std::string, std::string> env{{bucket, m_bucket}};
  // Set even when empty (sccache reads an empty variable as unset): the caller's own
  // SCCACHE_S3_KEY_PREFIX or SCCACHE_ENDPOINT must not move the objects elsewhere.
  env[cache_tool_variable(tool, "prefix")] = m_prefix;
  env[cache_tool_variable(tool, "endpoint")] = m_endpoint;
  // The scheme says it: sccache's own flag would override it.
  env[cache_tool_variable(tool, "use_ssl")] = m_endpoint.empty()                   ? ""
                                              : m_endpoint.starts_with("https://") ? "true"
                                                                                   : "false";
  // AWS without a region: the caller's SCCACHE_REGION or AWS_REGION (or ~/.aws) says.
  if (!m_region.empty())
    env[cache_tool_variable(tool, "region")] = m_region;
  else if (!m_endpoint.empty())
    env[cache_tool_variable(tool, "region")] = s3_facts().endpoint_region;
  return env;
}

std::pair<std::string, std::string> S3Storage::address() const {
  if (m_endpoint.empty()) {
    std::string host = m_region.empty() ? s3_facts().aws_host : s3_facts().aws_region_host;
    if (auto at = host.find("{region}"); at != std::string::npos) host.replace(at, 8, m_region);
    return {host, "443"};
  }
  if (m_endpoint.starts_with("http://"))
    return endpoint_host_port(std::string_view(m_endpoint).substr(7), "80");
  if (m_endpoint.starts_with("https://"))
    return endpoint_host_port(std::string_view(m_endpoint).substr(8), "443");
  return endpoint_host_port(m_endpoint, "80");  // refused by set_cache_url before it gets here
}

Expected<StorageCheck> S3Storage::check(std::chrono::milliseconds timeout) const {
  auto [host, port] = address();
  auto connected = connect_tcp(host, port, timeout);
  if (!connected) return StorageCheck{false, connected.error().message};
  ::close(*connected);
  return StorageCheck{true, fmt::format("{}:{} accepts connections", host, port)};
}

// ---- the settings' backend --------------------------------------------------------------

std::unique_ptr<CacheStorageBackend> storage_backend(const CacheSettings& s) {
  switch (s.storage) {
    case CacheStorage::redis:
      return std::make_unique<RedisStorage>(s.url);
    case CacheStorage::s3:
      return std::make_unique<S3Storage>(s.bucket, s.prefix, s.endpoint, s.region);
    case CacheStorage::local:
      break;
  }
  return std::make_unique<LocalStorage>(s.dir, s.size);
}

Expected<StorageCheck> check_shared_storage(const CacheSettings& settings,
                                            std::chrono::milliseconds timeout) {
  return storage_backend(settings)->check(timeout);
}

}  // namespace tailor::cache
