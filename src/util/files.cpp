#include "util/files.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdlib>

#include <cstdio>
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

Expected<void> write_file_atomic(const std::string& path, std::string_view text) {
  const std::string tmp = path + ".tailor-tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      return make_error(tmp + ": cannot write");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    return make_error(path + ": cannot replace: " + ec.message());
  }
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

std::string user_cache_dir(std::string_view what) {
  std::string w(what);
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::string(xdg) + "/tailor/" + w;
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/tailor/" + w;
  return "/tmp/tailor-" + w;
}

}  // namespace tailor
