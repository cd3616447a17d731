#include "workpath/folder_lock.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "util/byte_reader.h"
#include "util/files.h"
#include "util/interrupt.h"
#include "util/sha256.h"
#include "util/strings.h"

namespace tailor::workpath {
namespace fs = std::filesystem;

namespace {

/// The pid the holder wrote, or 0.
long holder_pid(int fd) {
  char buf[32] = {};
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return 0;
  return std::strtol(buf, nullptr, 10);
}

}  // namespace

std::string folder_lock_path(const std::string& dir, FolderLock::Place place) {
  std::error_code ec;
  fs::path d = fs::absolute(fs::path(dir)).lexically_normal();
  if (!d.has_filename() && d.has_parent_path()) d = d.parent_path();
  if (auto c = fs::weakly_canonical(d, ec); !ec) d = c;
  std::string key = (place == FolderLock::Place::inside ? "work:" : "out:") + d.string();
  return user_cache_dir("locks") + "/" + Sha256::hex(Sha256::of(as_bytes(key))).substr(0, 32) +
         ".lock";
}

Expected<FolderLock> FolderLock::acquire(const std::string& dir, Place place, bool wait,
                                         std::FILE* note) {
  std::error_code ec;
  if (place == Place::inside) {
    fs::create_directories(dir, ec);
    if (ec) return make_error(fmt::format("{}: cannot create: {}", dir, ec.message()));
  }
  std::string path = folder_lock_path(dir, place);
  fs::create_directories(fs::path(path).parent_path(), ec);
  if (ec)
    return make_error(fmt::format("{}: cannot create tailor's lock folder: {}",
                                  fs::path(path).parent_path().string(), ec.message()));
  bool said = false;
  int fd = -1;
  for (;;) {
    // O_CLOEXEC: the build's processes must not inherit the lock and hold it past tailor.
    fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
      return make_error(
          fmt::format("{}: cannot open the lock file: {}", path, std::strerror(errno)));
    for (;;) {
      if (flock(fd, LOCK_EX | LOCK_NB) == 0) break;
      if (errno == EINTR) continue;
      if (errno != EWOULDBLOCK) {
        std::string err = std::strerror(errno);
        close(fd);
        return make_error(fmt::format("{}: cannot lock: {}", path, err));
      }
      long holder = holder_pid(fd);
      std::string who =
          holder > 0 ? fmt::format("tailor build pid {}", holder) : "another tailor build";
      if (!wait) {
        close(fd);
        return make_error(fmt::format("{} is in use by {} (--no-wait: not waiting)", dir, who));
      }
      if (!said && note) {
        std::fprintf(note, "waiting for %s using %s\n", who.c_str(), dir.c_str());
        std::fflush(note);
      }
      said = true;
      // Poll the lock rather than block in flock(): an interrupt must end the wait.
      pollfd pfd{interrupt_fd(), POLLIN, 0};
      poll(&pfd, interrupt_fd() >= 0 ? 1 : 0, 200);
      if (interrupt_signal() != 0) {
        close(fd);
        return make_error(fmt::format("interrupted while waiting for {}", dir));
      }
    }
    // A holder removes its lock file as it lets go (so the folder does not grow): a lock
    // taken on a file no longer at the path is none, and the file at the path is tried.
    struct stat held {
    }, at_path{};
    if (fstat(fd, &held) == 0 && ::stat(path.c_str(), &at_path) == 0 &&
        held.st_dev == at_path.st_dev && held.st_ino == at_path.st_ino)
      break;
    close(fd);
  }
  std::string pid = fmt::format("{}\n", getpid());
  if (ftruncate(fd, 0) != 0 ||
      pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    // The lock holds without the pid; only the waiting message loses its number.
  }
  return FolderLock(fd, path);
}

FolderLock::FolderLock(FolderLock&& other) noexcept
    : m_fd(other.m_fd), m_path(std::move(other.m_path)) {
  other.m_fd = -1;
}

FolderLock::~FolderLock() {
  if (m_fd < 0) return;
  // Removed while still held: a waiter that then gets the old file's lock sees it is gone.
  ::unlink(m_path.c_str());
  close(m_fd);  // closing the only descriptor releases the flock
}

}  // namespace tailor::workpath
