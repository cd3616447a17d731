#include "source/source_identity.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <vector>

#include "formats/zip.h"
#include "util/mapped_file.h"
#include "util/sha256.h"
#include "util/strings.h"

namespace tailor::source {
namespace fs = std::filesystem;

namespace {

// Trees are walked with bounds: a source with more files than this is refused rather
// than hashed for hours.
constexpr uint64_t k_max_tree_files = 2'000'000;

// 1980-01-01T00:00:00Z: the first time a zip member can have.
constexpr int64_t k_folder_epoch = 315532800;

/// Skipped by digest_tree: VCS metadata and build leftovers (anywhere), the folders
/// prepare_source does not copy (at the top).
bool skipped_in_tree(const std::string& name, bool is_dir, bool top) {
  if (is_dir && (name == ".git" || name == "__pycache__" || name == ".pytest_cache" ||
                 name == ".hg" || name == ".svn"))
    return true;
  if (!is_dir && (name.ends_with(".pyc") || name.ends_with(".pyo"))) return true;
  if (top && (name == "build" || name == "dist" || name.ends_with(".egg-info"))) return true;
  return false;
}

Expected<std::string> sha256_of_file(const std::string& path) {
  auto mapped = MappedFile::open(path);
  if (!mapped) return mapped.error();
  return Sha256::hex(Sha256::of(mapped->bytes()));
}

struct TreeEntry {
  std::string rel;
  std::string line;
};

Expected<void> walk_tree(const fs::path& root, const fs::path& rel, bool top,
                         std::vector<TreeEntry>& out, int64_t& newest) {
  std::error_code ec;
  std::vector<fs::directory_entry> children;
  for (const auto& e : fs::directory_iterator(root / rel, ec)) children.push_back(e);
  if (ec)
    return make_error(fmt::format("{}: cannot read: {}", (root / rel).string(), ec.message()));
  for (const auto& e : children) {
    std::string name = e.path().filename().string();
    fs::path r = rel / name;
    struct stat st {};
    if (::lstat(e.path().c_str(), &st) != 0)
      return make_error(
          fmt::format("{}: cannot stat: {}", e.path().string(), std::strerror(errno)));
    bool is_dir = S_ISDIR(st.st_mode);
    if (skipped_in_tree(name, is_dir, top)) continue;
    if (is_dir) {
      if (auto w = walk_tree(root, r, false, out, newest); !w) return w;
      continue;
    }
    if (out.size() >= k_max_tree_files)
      return make_error(fmt::format("{}: more than {} files; refusing to hash the tree",
                                    root.string(), k_max_tree_files));
    newest = std::max<int64_t>(newest, st.st_mtime);
    if (S_ISLNK(st.st_mode)) {
      auto target = fs::read_symlink(e.path(), ec);
      if (ec)
        return make_error(
            fmt::format("{}: cannot read the link: {}", e.path().string(), ec.message()));
      out.push_back({r.generic_string(),
                     "link\t" + r.generic_string() + "\t" + target.generic_string() + "\n"});
    } else if (S_ISREG(st.st_mode)) {
      TAILOR_TRY(digest, sha256_of_file(e.path().string()));
      bool exec = (st.st_mode & 0111) != 0;
      out.push_back({r.generic_string(), "file\t" + r.generic_string() + "\t" + (exec ? "x" : "-") +
                                             "\t" + digest + "\n"});
    }
    // Sockets, fifos and devices are no part of a source.
  }
  return {};
}

/// The newest member time of a zip sdist (DOS times, read as UTC).
Expected<int64_t> newest_zip_member_time(const std::string& path) {
  auto mapped = MappedFile::open(path);
  if (!mapped) return mapped.error();
  auto archive = formats::parse_zip(mapped->bytes());
  if (!archive) return make_error(path + ": " + archive.error().message);
  int64_t newest = 0;
  for (const auto& e : archive->entries) {
    auto time = std::optional<uint16_t>(e.dos_time);
    auto date = std::optional<uint16_t>(e.dos_date);
    std::tm tm{};
    tm.tm_year = (*date >> 9) + 80;
    tm.tm_mon = ((*date >> 5) & 15) - 1;
    tm.tm_mday = *date & 31;
    tm.tm_hour = *time >> 11;
    tm.tm_min = (*time >> 5) & 63;
    tm.tm_sec = (*time & 31) * 2;
    newest = std::max<int64_t>(newest, timegm(&tm));
  }
  return newest;
}

Expected<std::string> git_output(CommandRunner& runner, const std::string& dir,
                                 std::vector<std::string> args) {
  std::vector<std::string> argv = {"git", "-C", dir};
  argv.insert(argv.end(), args.begin(), args.end());
  TAILOR_TRY(out, run_source_command(runner, argv, std::nullopt, std::chrono::seconds(60)));
  return std::string(trim(out));
}

Expected<SourceIdentity> identify_git(const std::string& dir, CommandRunner& runner) {
  SourceIdentity id;
  id.digest_kind = "git-commit";
  TAILOR_TRY(commit, git_output(runner, dir, {"rev-parse", "HEAD"}));
  TAILOR_TRY(time, git_output(runner, dir, {"log", "-1", "--format=%ct", "HEAD"}));
  id.digest = commit;
  auto epoch = source_date_epoch_from_env(time.c_str());
  if (!epoch || !*epoch)
    return make_error(fmt::format("{}: git gave no commit time for HEAD ('{}')", dir, time));
  id.source_date_epoch = **epoch;
  id.epoch_from = "the commit time of HEAD";
  return id;
}

// A folder's files carry the times of the copy or checkout that made them (a clone's are
// when it was cloned), never the source's: its epoch is HEAD's commit time when it is a clean
// git checkout (a .git at its top and no tracked file changed: the commit is then what the
// files are; untracked files are left to the tree digest), else the fixed k_folder_epoch. Either
// way, two clones of one commit and a copy of a tree, with or without its times, give the same
// epoch.
Expected<SourceIdentity> identify_folder(const std::string& dir, CommandRunner& runner) {
  TAILOR_TRY(tree, digest_tree(dir));
  SourceIdentity id;
  id.digest_kind = "tree-sha256";
  id.digest = tree.sha256;
  id.source_date_epoch = k_folder_epoch;
  id.epoch_from =
      "fixed at 1980-01-01 (a folder that is no clean git checkout: its files' times "
      "are a copy's)";
  std::error_code ec;
  if (!fs::exists(fs::path(dir) / ".git", ec)) return id;
  auto status = git_output(runner, dir, {"status", "--porcelain", "--untracked-files=no"});
  if (!status) return id;  // no git, or one that refuses the folder: the fixed time
  if (!status->empty()) {
    id.epoch_from =
        "fixed at 1980-01-01 (a git checkout with changes: its commit is not what "
        "the files are)";
    return id;
  }
  auto time = git_output(runner, dir, {"log", "-1", "--format=%ct", "HEAD"});
  if (!time) return id;
  if (auto epoch = source_date_epoch_from_env(time->c_str()); epoch && *epoch) {
    id.source_date_epoch = **epoch;
    id.epoch_from = "the commit time of HEAD (a clean git checkout)";
  }
  return id;
}

Expected<SourceIdentity> identify_sdist(const std::string& sdist, const std::string& unpacked) {
  SourceIdentity id;
  id.digest_kind = "sdist-sha256";
  TAILOR_TRY(digest, sha256_of_file(sdist));
  id.digest = digest;
  if (sdist.ends_with(".zip")) {
    TAILOR_TRY(newest, newest_zip_member_time(sdist));
    id.source_date_epoch = newest;
  } else {
    // tar restores its members' times when it unpacks.
    TAILOR_TRY(tree, digest_tree(unpacked));
    id.source_date_epoch = tree.newest_mtime;
  }
  id.epoch_from = "the newest modification time among the sdist's members";
  return id;
}

SourceIdentity with_override(SourceIdentity id, std::optional<int64_t> epoch_override) {
  if (epoch_override) {
    id.source_date_epoch = *epoch_override;
    id.epoch_from = "SOURCE_DATE_EPOCH in the environment";
  }
  return id;
}

}  // namespace

Expected<std::optional<int64_t>> source_date_epoch_from_env(const char* value) {
  if (!value || !*value) return std::optional<int64_t>{};
  std::string_view v(value);
  int64_t out = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || end != v.data() + v.size() || out < 0)
    return make_error(fmt::format(
        "SOURCE_DATE_EPOCH='{}': not a whole number of seconds since 1970", v.substr(0, 40)));
  return std::optional<int64_t>(out);
}

Expected<TreeDigest> digest_tree(const std::string& dir) {
  std::vector<TreeEntry> entries;
  int64_t newest = 0;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return make_error(fmt::format("{}: not a folder", dir));
  if (auto w = walk_tree(fs::path(dir), fs::path(), true, entries, newest); !w) return w.error();
  std::sort(entries.begin(), entries.end(),
            [](const TreeEntry& a, const TreeEntry& b) { return a.rel < b.rel; });
  Sha256 sha;
  for (const auto& e : entries) sha.update(std::as_bytes(std::span(e.line.data(), e.line.size())));
  TreeDigest d;
  d.sha256 = Sha256::hex(sha.finish());
  d.newest_mtime = newest;
  d.files = entries.size();
  return d;
}

Expected<SourceIdentity> identify_tree(const std::string& dir, CommandRunner& runner,
                                       std::optional<int64_t> epoch_override) {
  std::error_code ec;
  if (fs::exists(fs::path(dir) / ".git", ec)) {
    TAILOR_TRY(id, identify_git(dir, runner));
    return with_override(id, epoch_override);
  }
  TAILOR_TRY(id, identify_folder(dir, runner));
  return with_override(id, epoch_override);
}

Expected<SourceIdentity> identify_source(const SourceSpec& spec, const std::string& prepared_src,
                                         const std::string& work_dir, CommandRunner& runner,
                                         std::optional<int64_t> epoch_override) {
  switch (spec.kind) {
    case SourceKind::git: {
      TAILOR_TRY(id, identify_git(prepared_src, runner));
      return with_override(id, epoch_override);
    }
    case SourceKind::sdist: {
      TAILOR_TRY(id, identify_sdist(spec.path, prepared_src));
      return with_override(id, epoch_override);
    }
    case SourceKind::index: {
      std::error_code ec;
      for (const auto& e : fs::directory_iterator(fs::path(work_dir) / "download", ec))
        if (is_sdist_name(e.path().filename().string())) {
          TAILOR_TRY(id, identify_sdist(e.path().string(), prepared_src));
          return with_override(id, epoch_override);
        }
      return make_error(fmt::format("{}: no downloaded sdist to identify",
                                    (fs::path(work_dir) / "download").string()));
    }
    case SourceKind::example:
    case SourceKind::directory: {
      // The user's folder, not the copy (its git state; the copy has none).
      TAILOR_TRY(id, identify_folder(spec.path, runner));
      return with_override(id, epoch_override);
    }
  }
  return make_error("unknown source kind");
}

}  // namespace tailor::source
