// An in-memory DiskInterface (util/disk_interface.h): the one builder's files without a
// disk. Folders exist once made or once a file is written below them; each write gets the
// next tick as its modification time, so "newest" is the order of writes.
#pragma once
#include <map>
#include <memory>
#include <set>
#include <string>

#include "util/disk_interface.h"

namespace tailor::test {

class MemoryDisk : public DiskInterface {
 public:
  std::map<std::string, std::string> files;
  std::map<std::string, std::string> links;  ///< link -> target
  std::set<std::string> dirs{"/"};
  std::map<std::string, int64_t> mtimes;
  std::set<std::string> executable;
  int64_t tick = 0;

  bool exists(const std::string& path) override {
    return files.count(path) || dirs.count(path) || links.count(path);
  }
  bool is_directory(const std::string& path) override { return dirs.count(path) > 0; }
  std::optional<std::string> read(const std::string& path, uint64_t max_bytes) override {
    auto it = files.find(path);
    if (it == files.end() || it->second.size() > max_bytes) return std::nullopt;
    return it->second;
  }
  Expected<void> write(const std::string& path, std::string_view text, bool exec) override {
    if (!dirs.count(parent(path))) return make_error(path + ": no such folder");
    files[path] = std::string(text);
    mtimes[path] = ++tick;
    if (exec) executable.insert(path);
    return {};
  }
  Expected<std::unique_ptr<LogFile>> create_log(const std::string& path) override {
    if (!dirs.count(parent(path))) return make_error(path + ": cannot write the build log");
    files[path].clear();
    mtimes[path] = ++tick;
    return std::unique_ptr<LogFile>(std::make_unique<Log>(*this, path));
  }
  Expected<void> point_link(const std::string& link, const std::string& target) override {
    links[link] = target;
    return {};
  }
  std::vector<std::string> list(const std::string& dir) override {
    std::set<std::string> names;
    auto add = [&](const std::string& path) {
      if (parent(path) == dir) names.insert(path.substr(dir.size() + 1));
    };
    for (const auto& [p, _] : files) add(p);
    for (const auto& [p, _] : links) add(p);
    for (const auto& p : dirs) add(p);
    return {names.begin(), names.end()};
  }
  std::vector<DiskFile> find_files(const std::string& root, std::string_view name, int max_depth,
                                   size_t max_seen) override {
    std::vector<DiskFile> out;
    const std::string prefix = root + "/";
    size_t seen = 0;
    for (const auto& [path, text] : files) {
      if (path.rfind(prefix, 0) != 0 || ++seen > max_seen) continue;
      const std::string rest = path.substr(prefix.size());
      const auto depth = std::count(rest.begin(), rest.end(), '/');
      if (depth > max_depth || rest.substr(rest.rfind('/') + 1) != name) continue;
      out.push_back({path, text.size(), mtimes[path]});
    }
    return out;
  }
  Expected<void> make_dirs(const std::string& path) override {
    for (std::string p = path; !p.empty() && p != "/"; p = parent(p)) dirs.insert(p);
    return {};
  }
  void remove(const std::string& path) override {
    files.erase(path);
    links.erase(path);
  }
  void remove_all(const std::string& path) override {
    auto under = [&](const std::string& p) { return p == path || p.rfind(path + "/", 0) == 0; };
    std::erase_if(files, [&](const auto& kv) { return under(kv.first); });
    std::erase_if(links, [&](const auto& kv) { return under(kv.first); });
    std::erase_if(dirs, [&](const std::string& d) { return under(d); });
  }

 private:
  static std::string parent(const std::string& path) {
    auto slash = path.rfind('/');
    return slash == 0 ? "/" : slash == std::string::npos ? "" : path.substr(0, slash);
  }
  class Log : public LogFile {
   public:
    Log(MemoryDisk& disk, std::string path) : m_disk(disk), m_path(std::move(path)) {}
    void append(std::string_view text) override { m_disk.files[m_path] += text; }
    void flush() override {}
    Expected<void> close() override { return {}; }

   private:
    MemoryDisk& m_disk;
    std::string m_path;
  };
};

}  // namespace tailor::test
