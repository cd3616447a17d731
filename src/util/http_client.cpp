#include "util/http_client.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>

#include "util/files.h"
#include "util/mapped_file.h"
#include "util/net.h"
#include "util/strings.h"

namespace tailor {

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t k_max_head = 64 * 1024;

bool bad_url_char(char c) {
  auto u = static_cast<unsigned char>(c);
  return u <= 0x20 || u == 0x7f || c == '"' || c == '\\' || c == '<' || c == '>';
}

std::string ssl_error_text() {
  unsigned long e = ERR_get_error();
  if (e == 0) return "the connection closed";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return buf;
}

// One connection: a socket with a deadline, with TLS over it for https.
class Connection {
 public:
  Connection(const HttpUrl& url, Clock::time_point deadline) : m_url(url), m_deadline(deadline) {}
  ~Connection() {
    if (m_ssl) SSL_free(m_ssl);
    if (m_ctx) SSL_CTX_free(m_ctx);
    if (m_fd >= 0) ::close(m_fd);
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  Expected<void> open() {
    TAILOR_TRY(fd, connect_tcp(m_url.host, m_url.port, left()));
    m_fd = fd;
    // Blocking from here on, each read and write bounded by what is left of the deadline.
    ::fcntl(m_fd, F_SETFL, ::fcntl(m_fd, F_GETFL) & ~O_NONBLOCK);
    if (m_url.scheme != "https") return {};
    arm_timeouts();
    m_ctx = SSL_CTX_new(TLS_client_method());
    if (!m_ctx || SSL_CTX_set_default_verify_paths(m_ctx) != 1)
      return fail("TLS: " + ssl_error_text());
    SSL_CTX_set_verify(m_ctx, SSL_VERIFY_PEER, nullptr);
    SSL_CTX_set_min_proto_version(m_ctx, TLS1_2_VERSION);
    m_ssl = SSL_new(m_ctx);
    if (!m_ssl || SSL_set_fd(m_ssl, m_fd) != 1 ||
        SSL_set_tlsext_host_name(m_ssl, m_url.host.c_str()) != 1 ||
        SSL_set1_host(m_ssl, m_url.host.c_str()) != 1)
      return fail("TLS: " + ssl_error_text());
    if (SSL_connect(m_ssl) != 1) {
      long verify = SSL_get_verify_result(m_ssl);
      if (verify != X509_V_OK)
        return fail(fmt::format("TLS: the certificate is not trusted: {}",
                                X509_verify_cert_error_string(verify)));
      return fail("TLS handshake failed: " + ssl_error_text());
    }
    return {};
  }

  Expected<void> send_all(std::string_view data) {
    while (!data.empty()) {
      arm_timeouts();
      ssize_t n;
      if (m_ssl) {
        int r =
            SSL_write(m_ssl, data.data(), static_cast<int>(std::min<size_t>(data.size(), 1 << 20)));
        n = r > 0 ? r : -1;
        if (r <= 0) return fail("send failed: " + ssl_error_text());
      } else {
        n = ::send(m_fd, data.data(), data.size(), MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return fail(errno == EAGAIN ? std::string("timed out") : errno_text(errno));
      }
      data.remove_prefix(static_cast<size_t>(n));
    }
    return {};
  }

  /// Up to `cap` bytes into `buf`; 0 at the end of the stream.
  Expected<size_t> recv_some(char* buf, size_t cap) {
    for (;;) {
      arm_timeouts();
      if (m_ssl) {
        int r = SSL_read(m_ssl, buf, static_cast<int>(cap));
        if (r > 0) return static_cast<size_t>(r);
        int e = SSL_get_error(m_ssl, r);
        if (e == SSL_ERROR_ZERO_RETURN) return size_t{0};
        // A server that closes without close_notify: the end of a Connection: close reply.
        if (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0 && errno == 0) return size_t{0};
        if (e == SSL_ERROR_SSL &&
            ERR_GET_REASON(ERR_peek_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
          ERR_clear_error();
          return size_t{0};
        }
        return fail("receive failed: " +
                    (errno == EAGAIN ? std::string("timed out") : ssl_error_text()));
      }
      ssize_t n = ::recv(m_fd, buf, cap, 0);
      if (n >= 0) return static_cast<size_t>(n);
      if (errno == EINTR) continue;
      return fail(errno == EAGAIN ? std::string("timed out") : errno_text(errno));
    }
  }

  std::string where() const { return m_url.host + ":" + m_url.port; }

  std::chrono::milliseconds left() const {
    return std::max(
        std::chrono::milliseconds(1),
        std::chrono::duration_cast<std::chrono::milliseconds>(m_deadline - Clock::now()));
  }
  bool expired() const { return Clock::now() >= m_deadline; }

 private:
  void arm_timeouts() {
    auto ms = left().count();
    timeval tv{static_cast<time_t>(ms / 1000), static_cast<suseconds_t>((ms % 1000) * 1000)};
    ::setsockopt(m_fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(m_fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    errno = 0;
  }
  Error fail(const std::string& why) const { return Error{fmt::format("{}: {}", where(), why)}; }

  HttpUrl m_url;
  Clock::time_point m_deadline;
  int m_fd = -1;
  SSL_CTX* m_ctx = nullptr;
  SSL* m_ssl = nullptr;
};

// The reply's bytes as they arrive, read line by line or by count.
class ReplyReader {
 public:
  explicit ReplyReader(Connection& c) : m_c(c) {}

  Expected<bool> fill() {
    if (m_c.expired()) return make_error(m_c.where() + ": no complete reply in time");
    char buf[64 * 1024];
    TAILOR_TRY(n, m_c.recv_some(buf, sizeof buf));
    if (n == 0) return false;
    m_buf.append(buf, n);
    return true;
  }

  /// One line without its CRLF, at most k_max_head long.
  Expected<std::string> line() {
    for (;;) {
      if (auto eol = m_buf.find("\r\n", m_at); eol != std::string::npos) {
        std::string out = m_buf.substr(m_at, eol - m_at);
        m_at = eol + 2;
        return out;
      }
      if (m_buf.size() - m_at > k_max_head)
        return make_error(m_c.where() + ": a reply line longer than 64 KiB");
      TAILOR_TRY(more, fill());
      if (!more) return make_error(m_c.where() + ": the reply ended early");
    }
  }

  /// Up to `n` bytes (fewer only at the end of the stream) handed to `out`.
  Expected<uint64_t> take(uint64_t n, const std::function<Expected<void>(std::string_view)>& out) {
    uint64_t got = 0;
    while (got < n) {
      if (m_at == m_buf.size()) {
        m_buf.clear();
        m_at = 0;
        TAILOR_TRY(more, fill());
        if (!more) break;
      }
      size_t k = static_cast<size_t>(std::min<uint64_t>(n - got, m_buf.size() - m_at));
      TAILOR_TRY_VOID(out(std::string_view(m_buf).substr(m_at, k)));
      m_at += k;
      got += k;
    }
    return got;
  }

 private:
  Connection& m_c;
  std::string m_buf;
  size_t m_at = 0;
};

Expected<void> send_request(Connection& c, const HttpUrl& u, const HttpRequest& r) {
  std::optional<MappedFile> file;
  if (!r.body_file.empty()) {
    auto m = MappedFile::open(r.body_file);
    if (!m) return m.error();
    file.emplace(std::move(*m));
  }
  Bytes fbytes = file ? file->bytes() : Bytes();
  const uint64_t length = file ? fbytes.size() : r.body.size();
  bool default_port =
      (u.scheme == "http" && u.port == "80") || (u.scheme == "https" && u.port == "443");
  std::string host = u.host.find(':') != std::string::npos ? "[" + u.host + "]" : u.host;
  std::string head = fmt::format("{} {} HTTP/1.1\r\nHost: {}{}\r\nConnection: close\r\n", r.method,
                                 u.target, host, default_port ? "" : ":" + u.port);
  if (length > 0 || r.method == "PUT" || r.method == "POST")
    head += fmt::format("Content-Length: {}\r\n", length);
  for (const auto& [name, value] : r.headers) {
    if (name.find_first_of("\r\n:") != std::string::npos ||
        value.find_first_of("\r\n") != std::string::npos)
      return make_error(fmt::format("{}: a request header with a line break", c.where()));
    head += name + ": " + value + "\r\n";
  }
  head += "\r\n";
  TAILOR_TRY_VOID(c.send_all(head));
  if (file)
    return c.send_all(
        std::string_view(reinterpret_cast<const char*>(fbytes.data()), fbytes.size()));
  return c.send_all(r.body);
}

}  // namespace

Expected<HttpUrl> parse_http_url(std::string_view url) {
  HttpUrl u;
  std::string_view rest;
  if (url.starts_with("http://")) {
    u.scheme = "http";
    rest = url.substr(7);
  } else if (url.starts_with("https://")) {
    u.scheme = "https";
    rest = url.substr(8);
  } else {
    return make_error(fmt::format("'{}' is not an http:// or https:// URL", url.substr(0, 200)));
  }
  if (std::any_of(url.begin(), url.end(), bad_url_char) || url.find('#') != std::string_view::npos)
    return make_error("a URL with a space, control character, quote or fragment");
  std::string_view authority = rest.substr(0, rest.find_first_of("/?"));
  std::string_view target = rest.substr(authority.size());
  if (authority.find('@') != std::string_view::npos)
    return make_error("a URL with a user or password in it");
  if (authority.starts_with("[")) {
    auto close = authority.find(']');
    if (close == std::string_view::npos) return make_error("an IPv6 host without its ']'");
    u.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty() && !after.starts_with(":")) return make_error("a bad host in the URL");
    u.port = after.empty() ? "" : std::string(after.substr(1));
  } else {
    auto colon = authority.find(':');
    u.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) u.port = std::string(authority.substr(colon + 1));
  }
  if (u.host.empty()) return make_error("a URL without a host");
  if (u.port.empty()) u.port = u.scheme == "https" ? "443" : "80";
  if (u.port.size() > 5 || !std::all_of(u.port.begin(), u.port.end(), ::isdigit) ||
      std::stoi(u.port) < 1 || std::stoi(u.port) > 65535)
    return make_error(fmt::format("the port '{}' is not 1-65535", u.port));
  u.target = target.empty() ? "/" : (target.front() == '?' ? "/" : "") + std::string(target);
  return u;
}

std::string uri_encode(std::string_view text, bool keep_slash) {
  std::string out;
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '-' || c == '.' || c == '_' || c == '~' || (keep_slash && c == '/'))
      out += c;
    else
      out += fmt::format("%{:02X}", u);
  }
  return out;
}

Expected<HttpReply> http_send(const HttpRequest& r) {
  TAILOR_TRY(u, parse_http_url(r.url));
  Connection c(u, Clock::now() + r.timeout);
  TAILOR_TRY_VOID(c.open());
  TAILOR_TRY_VOID(send_request(c, u, r));
  ReplyReader in(c);
  HttpReply reply;
  TAILOR_TRY(status_line, in.line());
  if (!status_line.starts_with("HTTP/1.") || status_line.size() < 12)
    return make_error(c.where() + ": not an HTTP reply");
  reply.status = std::atoi(status_line.substr(9, 3).c_str());
  size_t head_bytes = status_line.size();
  for (;;) {
    TAILOR_TRY(h, in.line());
    if (h.empty()) break;
    head_bytes += h.size();
    if (head_bytes > k_max_head) return make_error(c.where() + ": reply headers over 64 KiB");
    auto colon = h.find(':');
    if (colon == std::string::npos) continue;
    std::string value = h.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.erase(0, 1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.pop_back();
    reply.headers[to_lower(h.substr(0, colon))] = value;
  }
  if (r.method == "HEAD" || reply.status == 204 || reply.status == 304) return reply;
  const bool to_sink = r.sink && reply.status >= 200 && reply.status < 300;
  auto out = [&](std::string_view piece) -> Expected<void> {
    reply.body_bytes += piece.size();
    if (reply.body_bytes > r.max_body)
      return make_error(
          fmt::format("{}: a reply body over the bound of {} bytes", c.where(), r.max_body));
    if (to_sink)
      return r.sink(Bytes(reinterpret_cast<const std::byte*>(piece.data()), piece.size()));
    reply.body.append(piece);
    return {};
  };
  if (to_lower(reply.header("transfer-encoding")).find("chunked") != std::string::npos) {
    for (;;) {
      TAILOR_TRY(size_line, in.line());
      char* end = nullptr;
      uint64_t n = std::strtoull(size_line.c_str(), &end, 16);
      if (end == size_line.c_str()) return make_error(c.where() + ": a bad chunk size");
      if (n == 0) break;
      if (n > r.max_body)
        return make_error(fmt::format("{}: a chunk over {} bytes", c.where(), r.max_body));
      TAILOR_TRY(got, in.take(n, out));
      if (got != n) return make_error(c.where() + ": the reply ended inside a chunk");
      TAILOR_TRY(crlf, in.line());
      (void)crlf;
    }
    return reply;
  }
  if (auto len = reply.header("content-length"); !len.empty()) {
    uint64_t n = std::strtoull(len.c_str(), nullptr, 10);
    if (n > r.max_body)
      return make_error(fmt::format("{}: a reply body of {} bytes, over the bound of {} bytes",
                                    c.where(), n, r.max_body));
    TAILOR_TRY(got, in.take(n, out));
    if (got != n)
      return make_error(fmt::format("{}: the reply ended after {} of {} bytes", c.where(), got, n));
    return reply;
  }
  TAILOR_TRY(got, in.take(UINT64_MAX, out));
  (void)got;
  return reply;
}

}  // namespace tailor
