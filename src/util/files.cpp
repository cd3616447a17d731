#include "util/files.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace tailor {

std::optional<std::string> read_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return std::nullopt;  // opens, reads as ""
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return ss.str();
}

std::string errno_text(int error_number) {
  if (error_number == EACCES || error_number == EPERM) return "permission denied";
  if (error_number == ENOENT) return "no such file or directory";
  return std::strerror(error_number);
}

namespace {
Expected<void> write_all(int fd, std::string_view text) {
  for (size_t done = 0; done < text.size();) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return make_error(errno_text(n < 0 ? errno : EIO));
    done += static_cast<size_t>(n);
  }
  return {};
}
}  // namespace

Expected<void> write_file_atomic(const std::string& path, std::string_view text, mode_t mode) {
  const std::string tmp = path + ".tailor-tmp";
  // A leftover of an interrupted run goes first: O_EXCL then never follows a link there.
  ::unlink(tmp.c_str());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) return make_error(tmp + ": cannot write: " + errno_text(errno));
  auto written = write_all(fd, text);
  if (::close(fd) != 0 && written) written = make_error(errno_text(errno));
  if (!written) {
    ::unlink(tmp.c_str());
    return make_error(tmp + ": cannot write: " + written.error().message);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = errno_text(errno);
    ::unlink(tmp.c_str());
    return make_error(path + ": cannot replace: " + why);
  }
  return {};
}

Expected<AtomicFile> AtomicFile::beside(const std::string& dest) {
  std::filesystem::path d(dest);
  std::filesystem::path dir =
      d.parent_path().empty() ? std::filesystem::path(".") : d.parent_path();
  AtomicFile f;
  f.m_dest = dest;
  f.m_path = (dir / ("." + d.filename().string() + ".tailor-tmp-XXXXXX")).string();
  f.m_fd = ::mkostemp(f.m_path.data(), O_CLOEXEC);
  if (f.m_fd < 0) {
    f.m_path.clear();
    return make_error(dest + ": cannot create a temporary file beside it: " + errno_text(errno));
  }
  return f;
}

AtomicFile::AtomicFile(AtomicFile&& o) noexcept
    : m_dest(std::move(o.m_dest)), m_path(std::move(o.m_path)), m_fd(o.m_fd) {
  o.m_fd = -1;
  o.m_path.clear();
}

AtomicFile& AtomicFile::operator=(AtomicFile&& o) noexcept {
  if (this != &o) {
    discard();
    m_dest = std::move(o.m_dest);
    m_path = std::move(o.m_path);
    m_fd = o.m_fd;
    o.m_fd = -1;
    o.m_path.clear();
  }
  return *this;
}

AtomicFile::~AtomicFile() { discard(); }

void AtomicFile::discard() {
  if (m_fd >= 0) ::close(m_fd);
  m_fd = -1;
  if (!m_path.empty()) ::unlink(m_path.c_str());
  m_path.clear();
}

Expected<void> AtomicFile::commit(mode_t mode) {
  if (m_fd < 0) return make_error(m_dest + ": the file beside it is already closed");
  if (::fchmod(m_fd, mode & 07777) != 0 || ::fsync(m_fd) != 0) {
    std::string why = errno_text(errno);
    std::string tmp = m_path;
    discard();
    return make_error(tmp + ": cannot finish: " + why);
  }
  int closed = ::close(m_fd);
  m_fd = -1;
  if (closed != 0) {
    std::string why = errno_text(errno);
    std::string tmp = m_path;
    discard();
    return make_error(tmp + ": cannot close: " + why);
  }
  if (::rename(m_path.c_str(), m_dest.c_str()) != 0) {
    std::string why = errno_text(errno);
    std::string tmp = m_path;
    discard();
    return make_error(m_dest + ": cannot move " + tmp + " into place: " + why);
  }
  m_path.clear();
  return {};
}

ExclusiveFileLock::ExclusiveFileLock(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  m_fd = ::open((path + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (m_fd >= 0 && ::flock(m_fd, LOCK_EX) != 0) {
    ::close(m_fd);
    m_fd = -1;
  }
}

ExclusiveFileLock::~ExclusiveFileLock() {
  if (m_fd >= 0) ::close(m_fd);
}

ExclusiveFolderLock::ExclusiveFolderLock(const std::string& dir) {
  m_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  while (m_fd >= 0 && ::flock(m_fd, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    ::close(m_fd);
    m_fd = -1;
  }
}

ExclusiveFolderLock::~ExclusiveFolderLock() {
  if (m_fd >= 0) ::close(m_fd);
}

std::string user_cache_dir(std::string_view what) {
  std::string w(what);
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/tailor/" + w;
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/tailor/" + w;
  return "/tmp/tailor-" + w;
}

}  // namespace tailor
