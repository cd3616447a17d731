#include "util/jobserver.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace tailor {

Expected<std::unique_ptr<FifoJobserver>> FifoJobserver::create(const std::string& path,
                                                               size_t tokens) {
  ::unlink(path.c_str());
  if (::mkfifo(path.c_str(), 0600) != 0)
    return make_error(
        fmt::format("{}: cannot create the jobserver fifo: {}", path, std::strerror(errno)));
  // O_RDWR: on Linux a fifo opened for both never blocks and always has a reader and a
  // writer, so clients' non-blocking opens of either end succeed.
  int fd = ::open(path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    ::unlink(path.c_str());
    return make_error(
        fmt::format("{}: cannot open the jobserver fifo: {}", path, std::strerror(e)));
  }
  std::unique_ptr<FifoJobserver> js(new FifoJobserver(path, fd));
  if (js->mint(tokens) != tokens)
    return make_error(
        fmt::format("{}: cannot write {} tokens into the jobserver fifo", path, tokens));
  return js;
}

FifoJobserver::~FifoJobserver() {
  if (m_fd >= 0) ::close(m_fd);
  ::unlink(m_path.c_str());
}

size_t FifoJobserver::mint(size_t n) {
  size_t done = 0;
  std::vector<char> plus(std::min<size_t>(n, 4096), '+');
  while (done < n) {
    ssize_t w = ::write(m_fd, plus.data(), std::min(plus.size(), n - done));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    done += static_cast<size_t>(w);
  }
  m_minted += done;
  return done;
}

size_t FifoJobserver::withdraw(size_t n) {
  size_t done = 0;
  char buf[256];
  while (done < n) {
    ssize_t r = ::read(m_fd, buf, std::min(sizeof buf, n - done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;  // EAGAIN: the pipe is empty, clients hold the rest
    done += static_cast<size_t>(r);
  }
  m_minted -= std::min(m_minted, done);
  return done;
}

std::string FifoJobserver::makeflags(size_t jobs) const {
  return fmt::format(" -j{} --jobserver-auth=fifo:{}", jobs, m_path);
}

}  // namespace tailor
