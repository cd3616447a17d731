#include "util/mapped_file.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "util/user_file.h"

namespace tailor {

Expected<MappedFile> MappedFile::open(const std::string& path) {
  // Opened without blocking and refused unless regular: a FIFO named x.so never hangs us.
  TAILOR_TRY(file, RegularFile::open(path));
  MappedFile f;
  f.m_path = path;
  f.m_size = static_cast<size_t>(file.size());
  if (f.m_size > 0) {
    void* p = ::mmap(nullptr, f.m_size, PROT_READ, MAP_PRIVATE, file.fd(), 0);
    if (p == MAP_FAILED) return make_error(path + ": mmap: " + std::strerror(errno));
    f.m_data = p;
  }
  return f;
}

MappedFile::MappedFile(MappedFile&& o) noexcept
    : m_path(std::move(o.m_path)),
      m_data(std::exchange(o.m_data, nullptr)),
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
