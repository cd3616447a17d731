#include "workpath/fixed_folder.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>

#include "util/files.h"
#include "util/strings.h"

namespace tailor::workpath {

namespace fs = std::filesystem;

namespace {

/// `path` as a folder that is not a link, owned by root or this user (`owner_only`: by
/// this user alone), made with `mode` when missing.
Expected<void> own_folder(const std::string& path, mode_t mode, bool owner_only) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) return make_error(fmt::format("{}: {}", path, errno_text(errno)));
    if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST)
      return make_error(fmt::format("{}: cannot make it: {}", path, errno_text(errno)));
    (void)::chmod(path.c_str(), mode);  // the umask does not decide: the root is for every user
    if (::lstat(path.c_str(), &st) != 0)
      return make_error(fmt::format("{}: {}", path, errno_text(errno)));
  }
  if (S_ISLNK(st.st_mode)) return make_error(fmt::format("{} is a link, not a folder", path));
  if (!S_ISDIR(st.st_mode)) return make_error(fmt::format("{} is not a folder", path));
  const uid_t me = ::geteuid();
  if (st.st_uid != me && (owner_only || st.st_uid != 0))
    return make_error(fmt::format("{} belongs to uid {} (another user could change a build there)",
                                  path, st.st_uid));
  return {};
}

/// Atime and mtime of `st` onto `path` (not following a link), to the nanosecond.
void keep_times(const std::string& path, const struct stat& st) {
  const timespec times[2] = {st.st_atim, st.st_mtim};
  (void)::utimensat(AT_FDCWD, path.c_str(), times, AT_SYMLINK_NOFOLLOW);
}

/// A copy of the tree at `from` (a file, a link or a folder) at `to`, with modes and times;
/// fifos, sockets and devices are left out.
Expected<void> copy_tree(const std::string& from, const std::string& to) {
  struct stat st {};
  if (::lstat(from.c_str(), &st) != 0)
    return make_error(fmt::format("{}: {}", from, errno_text(errno)));
  std::error_code ec;
  if (S_ISLNK(st.st_mode)) {
    fs::copy_symlink(from, to, ec);
  } else if (S_ISREG(st.st_mode)) {
    fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
    if (!ec) (void)::chmod(to.c_str(), st.st_mode & 07777);
  } else if (S_ISDIR(st.st_mode)) {
    fs::create_directory(to, ec);
    if (!ec) {
      for (const auto& e : fs::directory_iterator(from, ec))
        TAILOR_TRY_VOID(
            copy_tree(e.path().string(), (fs::path(to) / e.path().filename()).string()));
      (void)::chmod(to.c_str(), st.st_mode & 07777);
    }
  } else {
    return {};
  }
  if (ec) return make_error(fmt::format("copying {} to {}: {}", from, to, ec.message()));
  keep_times(to, st);  // a folder's last, after its entries changed it
  return {};
}

/// `from` to `to` (which must not exist): a rename, or across file systems a copy and
/// the original removed.
Expected<void> move_entry(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) == 0) return {};
  if (errno != EXDEV)
    return make_error(fmt::format("moving {} to {}: {}", from, to, errno_text(errno)));
  TAILOR_TRY_VOID(copy_tree(from, to));
  std::error_code ec;
  fs::remove_all(from, ec);
  if (ec)
    return make_error(fmt::format("{}: cannot remove after copying it: {}", from, ec.message()));
  return {};
}

Expected<void> remove_entry(const std::string& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
  if (ec) return make_error(fmt::format("{}: cannot remove: {}", path, ec.message()));
  return {};
}

/// The names in `dir`, without "." and "..".
Expected<std::vector<std::string>> names_in(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) out.push_back(e.path().filename().string());
  if (ec) return make_error(fmt::format("{}: cannot list: {}", dir, ec.message()));
  return out;
}

}  // namespace

bool stays_in_work_folder(const std::string& name) {
  return name == ".tailor.lock" || name == "build.log" || name.starts_with(".build.log.") ||
         (name.starts_with("build-") && name.ends_with(".log"));
}

Expected<void> check_fixed_root(const std::string& root) {
  TAILOR_TRY_VOID(own_folder(root, 01777, false));
  if (::access(root.c_str(), W_OK | X_OK) != 0)
    return make_error(fmt::format("{}: cannot write there: {}", root, errno_text(errno)));
  return {};
}

Expected<void> check_fixed_folder(const std::string& fixed) {
  TAILOR_TRY_VOID(check_fixed_root(fs::path(fixed).parent_path().string()));
  return own_folder(fixed, 0700, true);
}

Expected<FixedFolder> FixedFolder::acquire(const std::string& real, const std::string& fixed,
                                           bool wait, std::FILE* note) {
  TAILOR_TRY_VOID(check_fixed_folder(fixed));
  TAILOR_TRY(lock, FolderLock::acquire(fixed, FolderLock::Place::inside, wait, note));
  return FixedFolder(std::move(lock), real, fixed);
}

// What a run killed with -9 left in the fixed folder goes back to the work folder its
// marker names, where that folder has no entry of the same name (one it has wins): a
// --source tree is the user's own, and a build tree is hours of work.
Expected<void> FixedFolder::return_left_contents() {
  const std::string marker = (fs::path(m_fixed) / k_moved_from_marker).string();
  auto text = read_file(marker);
  if (!text) return {};
  const std::string origin(trim(*text));
  std::error_code ec;
  if (!origin.empty() && fs::is_directory(origin, ec)) {
    TAILOR_TRY(left, names_in(m_fixed));
    for (const auto& name : left) {
      if (stays_in_work_folder(name) || name == k_moved_from_marker) continue;
      const std::string to = (fs::path(origin) / name).string();
      if (fs::exists(fs::symlink_status(to, ec))) continue;
      TAILOR_TRY_VOID(move_entry((fs::path(m_fixed) / name).string(), to));
    }
  }
  return remove_entry(marker);
}

Expected<void> FixedFolder::move_in() {
  TAILOR_TRY_VOID(return_left_contents());
  TAILOR_TRY(left, names_in(m_fixed));
  for (const auto& name : left)
    if (!stays_in_work_folder(name))
      TAILOR_TRY_VOID(remove_entry((fs::path(m_fixed) / name).string()));
  m_linked.clear();
  // Where the contents come from, before the first moves: a run killed from here on leaves
  // them for return_left_contents.
  TAILOR_TRY_VOID(
      write_file_atomic((fs::path(m_fixed) / k_moved_from_marker).string(), m_real + "\n"));
  TAILOR_TRY(names, names_in(m_real));
  for (const auto& name : names) {
    if (stays_in_work_folder(name)) continue;
    const std::string from = (fs::path(m_real) / name).string(),
                      to = (fs::path(m_fixed) / name).string();
    struct stat st {};
    if (::lstat(from.c_str(), &st) != 0) continue;
    // A fifo or socket is held open by tailor (the jobserver): it stays, and is linked.
    if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) {
      std::error_code ec;
      fs::create_symlink(from, to, ec);
      if (ec) return make_error(fmt::format("linking {} from {}: {}", from, to, ec.message()));
      m_linked.push_back(name);
      continue;
    }
    TAILOR_TRY_VOID(move_entry(from, to));
  }
  return {};
}

Expected<void> FixedFolder::move_out() {
  TAILOR_TRY(names, names_in(m_fixed));
  for (const auto& name : names) {
    if (stays_in_work_folder(name) || name == k_moved_from_marker) continue;
    const std::string from = (fs::path(m_fixed) / name).string(),
                      to = (fs::path(m_real) / name).string();
    if (std::find(m_linked.begin(), m_linked.end(), name) != m_linked.end()) {
      TAILOR_TRY_VOID(remove_entry(from));
      continue;
    }
    TAILOR_TRY_VOID(remove_entry(to));
    TAILOR_TRY_VOID(move_entry(from, to));
  }
  m_linked.clear();
  return remove_entry((fs::path(m_fixed) / k_moved_from_marker).string());
}

}  // namespace tailor::workpath
