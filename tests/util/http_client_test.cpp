// The bounded HTTP client against a one-shot loopback server that answers a canned reply:
// Content-Length and chunked bodies, a 2xx body streamed to a sink, and the bounds (a body
// over max_body, a reply that ends early, no reply in time) as one error line each.
#include "util/http_client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

using namespace tailor;

namespace {

// Listens on a free loopback port, takes one connection, reads the request head (and the body
// its Content-Length names), keeps it, and writes `reply` (after `delay`).
class OneShotServer {
 public:
  explicit OneShotServer(std::string reply, std::chrono::milliseconds delay = {})
      : m_reply(std::move(reply)) {
    m_listener = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(m_listener, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    ::getsockname(m_listener, reinterpret_cast<sockaddr*>(&a), &len);
    m_port = ntohs(a.sin_port);
    ::listen(m_listener, 1);
    m_thread = std::thread([this, delay] {
      int c = ::accept(m_listener, nullptr, nullptr);
      if (c < 0) return;
      char buf[4096];
      for (;;) {
        ssize_t n = ::recv(c, buf, sizeof buf, 0);
        if (n <= 0) break;
        m_request.append(buf, static_cast<size_t>(n));
        auto end = m_request.find("\r\n\r\n");
        if (end == std::string::npos) continue;
        size_t length = 0;
        if (auto at = m_request.find("Content-Length: "); at != std::string::npos)
          length = std::stoul(m_request.substr(at + 16));
        if (m_request.size() >= end + 4 + length) break;
      }
      std::this_thread::sleep_for(delay);
      ::send(c, m_reply.data(), m_reply.size(), MSG_NOSIGNAL);
      ::close(c);
    });
  }
  ~OneShotServer() {
    ::shutdown(m_listener, SHUT_RDWR);
    ::close(m_listener);
    m_thread.join();
  }
  std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(m_port) + path;
  }
  const std::string& request() const { return m_request; }

 private:
  std::string m_reply, m_request;
  int m_listener = -1, m_port = 0;
  std::thread m_thread;
};

}  // namespace

TEST(HttpUrl, PartsAndRefusals) {
  auto u = parse_http_url("https://[::1]:9000/b/k?x=1");
  ASSERT_TRUE(u) << u.error().message;
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->port, "9000");
  EXPECT_EQ(u->target, "/b/k?x=1");
  EXPECT_EQ(parse_http_url("http://h")->target, "/");
  EXPECT_EQ(parse_http_url("http://h")->port, "80");
  EXPECT_FALSE(parse_http_url("ftp://h/x"));
  EXPECT_FALSE(parse_http_url("http://user:pw@h/x"));
  EXPECT_FALSE(parse_http_url("http://h/a b"));
  EXPECT_FALSE(parse_http_url("http://h/a#frag"));
  EXPECT_FALSE(parse_http_url("http://h:99999/"));
  EXPECT_EQ(uri_encode("files/sm90/a-1.0+cu130 x.whl", true), "files/sm90/a-1.0%2Bcu130%20x.whl");
  EXPECT_EQ(uri_encode("a/b", false), "a%2Fb");
}

TEST(HttpClient, ContentLengthBodyAndTheRequestSent) {
  OneShotServer server("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nETag: \"abc\"\r\n\r\nhello");
  HttpRequest r;
  r.method = "PUT";
  r.url = server.url("/bucket/key");
  r.body = "payload";
  r.headers = {{"If-None-Match", "*"}};
  auto reply = http_send(r);
  ASSERT_TRUE(reply) << reply.error().message;
  EXPECT_EQ(reply->status, 200);
  EXPECT_EQ(reply->body, "hello");
  EXPECT_EQ(reply->header("etag"), "\"abc\"");
  EXPECT_EQ(server.request().rfind("PUT /bucket/key HTTP/1.1\r\n", 0), 0u) << server.request();
  EXPECT_NE(server.request().find("\r\nContent-Length: 7\r\n"), std::string::npos);
  EXPECT_NE(server.request().find("\r\nIf-None-Match: *\r\n"), std::string::npos);
  EXPECT_EQ(server.request().substr(server.request().size() - 7), "payload");
}

TEST(HttpClient, ChunkedBodyToASink) {
  OneShotServer server(
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nwhee\r\n3\r\nl!!\r\n0\r\n\r\n");
  std::string got;
  HttpRequest r;
  r.url = server.url("/w.whl");
  r.sink = [&](Bytes b) -> Expected<void> {
    got.append(reinterpret_cast<const char*>(b.data()), b.size());
    return {};
  };
  auto reply = http_send(r);
  ASSERT_TRUE(reply) << reply.error().message;
  EXPECT_EQ(got, "wheel!!");
  EXPECT_EQ(reply->body, "");
  EXPECT_EQ(reply->body_bytes, 7u);
}

TEST(HttpClient, AnErrorStatusKeepsItsBodyOutOfTheSink) {
  OneShotServer server("HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nNoSuchKey");
  bool sunk = false;
  HttpRequest r;
  r.url = server.url("/x");
  r.sink = [&](Bytes) -> Expected<void> {
    sunk = true;
    return {};
  };
  auto reply = http_send(r);
  ASSERT_TRUE(reply) << reply.error().message;
  EXPECT_EQ(reply->status, 404);
  EXPECT_EQ(reply->body, "NoSuchKey");
  EXPECT_FALSE(sunk);
}

TEST(HttpClient, BoundsAreOneErrorLine) {
  {
    OneShotServer server("HTTP/1.1 200 OK\r\nContent-Length: 100000000\r\n\r\nxx");
    HttpRequest r;
    r.url = server.url("/huge");
    r.max_body = 1024;
    auto reply = http_send(r);
    ASSERT_FALSE(reply);
    EXPECT_NE(reply.error().message.find("over the bound of 1024 bytes"), std::string::npos)
        << reply.error().message;
  }
  {
    OneShotServer server("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" +
                         std::string("800\r\n") + std::string(2048, 'x') + "\r\n0\r\n\r\n");
    HttpRequest r;
    r.url = server.url("/huge-chunks");
    r.max_body = 1024;
    ASSERT_FALSE(http_send(r));
  }
  {
    OneShotServer server("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort");
    HttpRequest r;
    r.url = server.url("/short");
    auto reply = http_send(r);
    ASSERT_FALSE(reply);
    EXPECT_NE(reply.error().message.find("ended after 5 of 10 bytes"), std::string::npos)
        << reply.error().message;
  }
  {
    OneShotServer server("HTTP/1.1 200 OK\r\n\r\n", std::chrono::milliseconds(1500));
    HttpRequest r;
    r.url = server.url("/slow");
    r.timeout = std::chrono::milliseconds(300);
    auto reply = http_send(r);
    ASSERT_FALSE(reply);
  }
  {
    OneShotServer server("SSH-2.0-OpenSSH\r\n\r\n");
    HttpRequest r;
    r.url = server.url("/");
    auto reply = http_send(r);
    ASSERT_FALSE(reply);
    EXPECT_NE(reply.error().message.find("not an HTTP reply"), std::string::npos);
  }
}
