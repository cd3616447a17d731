#include "util/disk_interface.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>

#include "util/files.h"
#include "util/user_file.h"

namespace tailor {
namespace fs = std::filesystem;
namespace {

class RealLogFile : public LogFile {
 public:
  RealLogFile(std::string path, std::FILE* f) : m_path(std::move(path)), m_file(f) {}
  ~RealLogFile() override {
    if (m_file) std::fclose(m_file);
  }
  void append(std::string_view text) override {
    if (std::fwrite(text.data(), 1, text.size(), m_file) != text.size() && m_error == 0)
      m_error = errno;
  }
  void flush() override { std::fflush(m_file); }
  Expected<void> close() override {
    std::FILE* f = std::exchange(m_file, nullptr);
    if (!f) return {};
    if (std::fclose(f) != 0 && m_error == 0) m_error = errno;
    if (m_error != 0)
      return make_error(
          fmt::format("{}: cannot write the build log: {}", m_path, errno_text(m_error)));
    return {};
  }

 private:
  std::string m_path;
  std::FILE* m_file;
  int m_error = 0;
};

}  // namespace

bool RealDiskInterface::exists(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

bool RealDiskInterface::is_directory(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

std::optional<std::string> RealDiskInterface::read(const std::string& path, uint64_t max_bytes) {
  auto text = read_text_file(path, max_bytes);
  if (!text) return std::nullopt;
  return std::move(*text);
}

Expected<void> RealDiskInterface::write(const std::string& path, std::string_view text,
                                        bool executable) {
  return write_file_atomic(path, text, executable ? 0777 : 0666);
}

Expected<std::unique_ptr<LogFile>> RealDiskInterface::create_log(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f)
    return make_error(fmt::format("{}: cannot write the build log: {}", path, errno_text(errno)));
  return std::unique_ptr<LogFile>(std::make_unique<RealLogFile>(path, f));
}

Expected<void> RealDiskInterface::point_link(const std::string& link, const std::string& target) {
  std::error_code ec;
  const fs::path tmp = fs::path(link).parent_path() /
                       fmt::format(".{}.{}", fs::path(link).filename().string(), getpid());
  fs::remove(tmp, ec);
  fs::create_symlink(target, tmp, ec);
  if (!ec) fs::rename(tmp, link, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    return make_error(fmt::format("{}: cannot point it at {}: {}", link, target, ec.message()));
  }
  return {};
}

std::vector<std::string> RealDiskInterface::list(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    names.push_back(it->path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<DiskFile> RealDiskInterface::find_files(const std::string& root, std::string_view name,
                                                    int max_depth, size_t max_seen) {
  std::vector<DiskFile> out;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return out;
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
  for (size_t seen = 0; !ec && it != end && seen < max_seen; it.increment(ec), ++seen) {
    if (it.depth() >= max_depth) it.disable_recursion_pending();
    std::error_code fec;
    if (it->path().filename() != name || !it->is_regular_file(fec)) continue;
    DiskFile f;
    f.path = it->path().string();
    f.size = it->file_size(fec);
    f.mtime_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                     it->last_write_time(fec).time_since_epoch())
                     .count();
    out.push_back(std::move(f));
  }
  std::sort(out.begin(), out.end(),
            [](const DiskFile& a, const DiskFile& b) { return a.path < b.path; });
  return out;
}

Expected<void> RealDiskInterface::make_dirs(const std::string& path) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) return make_error(fmt::format("{}: cannot create: {}", path, ec.message()));
  return {};
}

void RealDiskInterface::remove(const std::string& path) {
  std::error_code ec;
  fs::remove(path, ec);
}

void RealDiskInterface::remove_all(const std::string& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
}

}  // namespace tailor
