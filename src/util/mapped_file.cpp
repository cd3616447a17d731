#include "util/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace tailor {

Expected<MappedFile> MappedFile::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return make_error(path + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return make_error(path + ": " + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return make_error(path + ": not a regular file");
  }
  MappedFile f;
  f.m_path = path;
  f.m_size = static_cast<size_t>(st.st_size);
  if (f.m_size > 0) {
    void* p = ::mmap(nullptr, f.m_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      return make_error(path + ": mmap: " + std::strerror(e));
    }
    f.m_data = p;
  }
  ::close(fd);
  return f;
}

MappedFile::MappedFile(MappedFile&& o) noexcept
    : m_path(std::move(o.m_path)), m_data(std::exchange(o.m_data, nullptr)),
      m_size(std::exchange(o.m_size, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    if (m_data) ::munmap(m_data, m_size);
    m_path = std::move(o.m_path);
    m_data = std::exchange(o.m_data, nullptr);
    m_size = std::exchange(o.m_size, 0);
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (m_data) ::munmap(m_data, m_size);
}

}  // namespace tailor
