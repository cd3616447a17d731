#include "util/user_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "util/files.h"
#include "util/strings.h"

namespace tailor {

namespace {

Error binary_error(const std::string& name, int64_t offset) {
  char hex[24];
  std::snprintf(hex, sizeof hex, "%llx", static_cast<unsigned long long>(offset));
  return make_error(name + ": binary data (a NUL byte at offset 0x" + hex + "), not text");
}

constexpr size_t k_binary_window = 64 * 1024;

// Reads until EOF or until more than max_bytes arrived (then returns max_bytes + 1 bytes).
Expected<std::string> read_bounded(int fd, const std::string& name, uint64_t max_bytes,
                                   uint64_t size_hint, BinaryData binary) {
  std::string out;
  char buf[64 * 1024];
  bool checked = binary == BinaryData::allowed;
  if (checked && size_hint > 0 && size_hint <= max_bytes) out.reserve(size_hint + 1);
  while (out.size() <= max_bytes) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return make_error(name + ": read failed: " + errno_text(errno));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (!checked && (out.size() >= k_binary_window)) {
      checked = true;
      if (const void* nul = std::memchr(out.data(), '\0', k_binary_window))
        return binary_error(name, static_cast<const char*>(nul) - out.data());
      // Known size: one allocation for the rest (reserve after the check, not before).
      if (size_hint > out.size() && size_hint <= max_bytes) out.reserve(size_hint + 1);
    }
  }
  if (!checked)
    if (const void* nul = std::memchr(out.data(), '\0', out.size()))
      return binary_error(name, static_cast<const char*>(nul) - out.data());
  return out;
}

Error too_large(const std::string& name, uint64_t size, uint64_t max_bytes, bool exact) {
  return make_error(name + ": " +
                    (exact ? human_bytes(size) : "more than " + human_bytes(max_bytes)) +
                    ", larger than the " + human_bytes(max_bytes) + " tailor reads");
}

/// What kind of thing a non-regular file is, for messages: "a FIFO", "a directory",
/// "a character device", "a block device", "a socket".
std::string file_kind_name(unsigned mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a plain file";
}

}  // namespace

Expected<RegularFile> RegularFile::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return make_error(path + ": " + errno_text(errno));
  RegularFile f;
  f.m_path = path;
  f.m_fd = fd;  // closed by f's destructor on every error below
  struct stat st {};
  if (::fstat(fd, &st) != 0) return make_error(path + ": " + errno_text(errno));
  if (!S_ISREG(st.st_mode))
    return make_error(path + ": not a regular file (" + file_kind_name(st.st_mode) + ")");
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0)
    return make_error(path + ": " + errno_text(errno));
  f.m_size = static_cast<uint64_t>(st.st_size);
  return f;
}

Expected<RegularFile> RegularFile::adopt(int fd, const std::string& name) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return make_error(name + ": " + errno_text(errno));
  if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode))
    return make_error(name + ": not a regular file or a pipe (" + file_kind_name(st.st_mode) + ")");
  RegularFile f;
  f.m_path = name;
  f.m_fd = fd;
  f.m_owned = false;
  f.m_size = S_ISREG(st.st_mode) ? static_cast<uint64_t>(st.st_size) : 0;
  return f;
}

RegularFile::RegularFile(RegularFile&& o) noexcept
    : m_path(std::move(o.m_path)),
      m_fd(std::exchange(o.m_fd, -1)),
      m_size(o.m_size),
      m_owned(o.m_owned) {}

RegularFile& RegularFile::operator=(RegularFile&& o) noexcept {
  if (this != &o) {
    if (m_fd >= 0 && m_owned) ::close(m_fd);
    m_path = std::move(o.m_path);
    m_fd = std::exchange(o.m_fd, -1);
    m_size = o.m_size;
    m_owned = o.m_owned;
  }
  return *this;
}

RegularFile::~RegularFile() {
  if (m_fd >= 0 && m_owned) ::close(m_fd);
}

Expected<std::string> read_text_file(const std::string& path, uint64_t max_bytes,
                                     BinaryData binary) {
  const bool stdin_path = path == "-";
  auto file =
      stdin_path ? RegularFile::adopt(STDIN_FILENO, "standard input") : RegularFile::open(path);
  if (!file) return file.error();
  if (file->size() > max_bytes) return too_large(file->path(), file->size(), max_bytes, true);
  TAILOR_TRY(text, read_bounded(file->fd(), file->path(), max_bytes, file->size(), binary));
  if (text.size() > max_bytes) return too_large(file->path(), text.size(), max_bytes, false);
  return text;
}

Expected<std::string> read_file_head(const std::string& path, size_t count) {
  TAILOR_TRY(file, RegularFile::open(path));
  std::string out(count, '\0');
  size_t got = 0;
  while (got < count) {
    ssize_t n = ::read(file.fd(), out.data() + got, count - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      return make_error(path + ": read failed: " + errno_text(errno));
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  out.resize(got);
  return out;
}

}  // namespace tailor
