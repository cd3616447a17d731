#include "util/net.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tailor {

Expected<int> connect_tcp(const std::string& host, const std::string& port,
                          std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &res); rc != 0)
    return make_error(fmt::format("{}: cannot resolve: {}", host, gai_strerror(rc)));
  std::string last_error = "no address";
  int fd = -1;
  for (addrinfo* a = res; a && fd < 0; a = a->ai_next) {
    int s = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (s < 0) continue;
    if (::connect(s, a->ai_addr, a->ai_addrlen) == 0) {
      fd = s;
      break;
    }
    if (errno == EINPROGRESS) {
      pollfd p{s, POLLOUT, 0};
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (::poll(&p, 1, static_cast<int>(std::max<int64_t>(left.count(), 0))) == 1) {
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err == 0) {
          fd = s;
          break;
        }
        last_error = std::strerror(err);
      } else {
        last_error = "timed out";
      }
    } else {
      last_error = std::strerror(errno);
    }
    ::close(s);
  }
  ::freeaddrinfo(res);
  if (fd < 0) return make_error(fmt::format("cannot connect to {}:{}: {}", host, port, last_error));
  return fd;
}

Expected<int> free_loopback_port() {
  int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return make_error("cannot open a socket");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    ::close(s);
    return make_error("cannot find a free port on 127.0.0.1");
  }
  ::close(s);
  return static_cast<int>(ntohs(a.sin_port));
}

}  // namespace tailor
