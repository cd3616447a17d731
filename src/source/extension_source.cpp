#include "source/extension_source.h"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <regex>
#include <set>
#include <span>

#include "data/data_files.h"
#include "data/toml_document.h"
#include "formats/zip.h"
#include "util/files.h"
#include "util/mapped_file.h"
#include "util/sha256.h"
#include "util/strings.h"
#include "util/user_file.h"

namespace tailor::source {
namespace fs = std::filesystem;

bool is_sdist_name(std::string_view s) {
  return s.ends_with(".tar.gz") || s.ends_with(".tgz") || s.ends_with(".zip") ||
         s.ends_with(".tar.bz2") || s.ends_with(".tar.xz");
}

namespace {

// The package's own metadata files (setup.py, pyproject.toml, ...): bounded, regular files only.
std::string read_text(const fs::path& p) {
  auto text = read_text_file(p.string(), uint64_t{16} << 20);
  return text ? std::move(*text) : std::string();
}

/// "causal_conv1d-1.5.2.tar.gz" -> "causal_conv1d".
std::string name_from_sdist(std::string_view file) {
  std::string base = fs::path(std::string(file)).filename().string();
  auto dash = base.rfind('-');
  return dash == std::string::npos ? base : base.substr(0, dash);
}

// The command's last words, on one line (an error line is one line: a raw newline would
// reach the terminal as \x0a): its last six non-blank lines, trimmed, joined by "; ".
std::string tail_of(const CommandResult& r) {
  if (!r.started) return "could not start the command";
  std::string text = !r.err.empty() ? r.err : r.out;
  std::vector<std::string> lines;
  for (const auto& l : split_any(text, "\r\n"))
    if (auto t = trim(l); !t.empty()) lines.emplace_back(t);
  if (lines.size() > 6) lines.erase(lines.begin(), lines.end() - 6);
  return join(lines, "; ");
}

}  // namespace

Expected<std::string> run_source_command(CommandRunner& runner, std::vector<std::string> argv,
                                         std::optional<std::string> cwd,
                                         std::chrono::seconds timeout) {
  CommandSpec spec;
  spec.argv = argv;
  spec.cwd = std::move(cwd);
  spec.timeout = timeout;
  CommandResult r = runner.run(spec);
  if (r.ok()) return std::move(r.out);
  return make_error(fmt::format(
      "`{}` failed{}: {}", join(argv, " "),
      r.timed_out ? " (timed out)" : fmt::format(" (exit {})", r.exit_code), tail_of(r)));
}

Expected<std::string> sdist_top_folder(const std::string& sdist, CommandRunner& runner) {
  std::vector<std::string> names;
  if (sdist.ends_with(".zip")) {
    TAILOR_TRY(map, MappedFile::open(sdist));
    auto zip = formats::parse_zip(map.bytes());
    if (!zip) return make_error(sdist + ": " + zip.error().message);
    for (const auto& e : zip->entries) names.push_back(e.name);
  } else {
    TAILOR_TRY(listing, run_source_command(runner, {"tar", "-tf", sdist}, std::nullopt,
                                           std::chrono::seconds(120)));
    names = split_any(listing, "\n");
  }
  std::string top;
  for (auto name : names) {
    while (name.starts_with("./")) name.erase(0, 2);
    const std::string first = name.substr(0, name.find('/'));
    if (first.empty()) continue;
    if (name.find('/') == std::string::npos && !name.ends_with("/"))
      return std::string();  // a file
    if (!top.empty() && first != top) return std::string();
    top = first;
  }
  return top;
}

namespace {

/// The single top-level folder an sdist unpacks to (or the folder itself when several).
std::string single_child_dir(const fs::path& dir) {
  std::vector<fs::path> entries;
  for (const auto& e : fs::directory_iterator(dir)) entries.push_back(e.path());
  if (entries.size() == 1 && fs::is_directory(entries[0])) return entries[0].string();
  return dir.string();
}

// Bounds of an sdist's unpacking (data/build/unpack_sdist.py): a few MB that unpack to
// gigabytes, or a million members, are refused before the disk fills.
constexpr uint64_t k_max_unpacked_bytes = uint64_t{2} << 30;
constexpr int k_max_unpacked_members = 200000;

// Unpacked by tailor's own bounded extraction (data/build/unpack_sdist.py): never outside
// `dest`, no link leaving it, at most k_max_unpacked_bytes and k_max_unpacked_members; a
// refusal is one line naming the member (the same for a tar and a zip).
Expected<std::string> unpack_sdist(const std::string& sdist, const fs::path& dest,
                                   const std::string& python, CommandRunner& runner) {
  std::error_code ec;
  fs::create_directories(dest, ec);
  if (ec) return make_error(fmt::format("{}: cannot create: {}", dest.string(), ec.message()));
  auto script = data::file("build/unpack_sdist.py");
  if (!script) throw data::DataError(script.error().message);
  CommandSpec spec;
  spec.argv = {python,
               "-c",
               std::string(*script),
               sdist,
               dest.string(),
               std::to_string(k_max_unpacked_bytes),
               std::to_string(k_max_unpacked_members)};
  spec.cwd = dest.string();
  spec.timeout = std::chrono::seconds(600);
  CommandResult r = runner.run(spec);
  if (!r.ok()) {
    std::string why = r.timed_out  ? "unpacking timed out after 600 s"
                      : !r.started ? "could not start " + python
                                   : tail_of(r);
    if (why.empty()) why = fmt::format("unpacking failed (exit {})", r.exit_code);
    return make_error(fmt::format("{}: {}", fs::path(sdist).filename().string(), why));
  }
  return single_child_dir(dest);
}

/// Makes `to` a copy of `from` without touching what is already equal: a file whose size
/// and modification time match is kept, others are copied with the source's modification
/// time (so a build system comparing times sees exactly the files that changed), and
/// entries gone from `from` are removed. Top-level names for which `skip` is true are
/// neither copied nor removed (the copy's own build/ stays for the next run).
Expected<void> sync_tree(const std::string& from, const std::string& to,
                         const std::function<bool(const std::string&)>& skip) {
  std::error_code ec;
  auto sync_dir = [&](auto& self, const fs::path& a, const fs::path& b,
                      bool top) -> Expected<void> {
    fs::create_directories(b, ec);
    if (ec) return make_error(fmt::format("{}: cannot create: {}", b.string(), ec.message()));
    std::set<std::string> names;
    for (const auto& e : fs::directory_iterator(a, ec)) {
      std::string n = e.path().filename().string();
      if (top && skip(n)) continue;
      names.insert(n);
      fs::path dest = b / n;
      auto st = e.symlink_status(ec);
      auto dst = fs::symlink_status(dest, ec);
      if (fs::is_symlink(st)) {
        fs::remove_all(dest, ec);
        fs::copy_symlink(e.path(), dest, ec);
      } else if (fs::is_directory(st)) {
        if (fs::exists(dst) && !fs::is_directory(dst)) fs::remove_all(dest, ec);
        if (auto r = self(self, e.path(), dest, false); !r) return r;
      } else if (fs::is_regular_file(st)) {
        auto mtime = fs::last_write_time(e.path(), ec);
        bool same = fs::is_regular_file(dst) &&
                    fs::file_size(dest, ec) == fs::file_size(e.path(), ec) &&
                    fs::last_write_time(dest, ec) == mtime;
        if (!same) {
          if (fs::exists(dst)) fs::remove_all(dest, ec);
          fs::copy_file(e.path(), dest, fs::copy_options::overwrite_existing, ec);
          if (!ec) fs::last_write_time(dest, mtime, ec);
        }
      }
      if (ec)
        return make_error(fmt::format("{}: cannot copy into {}: {}", e.path().string(), b.string(),
                                      ec.message()));
    }
    if (ec) return make_error(fmt::format("{}: cannot read: {}", a.string(), ec.message()));
    std::vector<fs::path> stale;
    for (const auto& e : fs::directory_iterator(b, ec)) {
      std::string n = e.path().filename().string();
      if (top && skip(n)) continue;
      if (!names.count(n)) stale.push_back(e.path());
    }
    for (const auto& p : stale) fs::remove_all(p, ec);
    return {};
  };
  return sync_dir(sync_dir, fs::path(from), fs::path(to), true);
}

}  // namespace

Expected<void> check_source_links(const std::string& root,
                                  const std::function<bool(const std::string&)>& skip_top) {
  std::error_code ec;
  const fs::path top = fs::canonical(root, ec);
  if (ec) return make_error(fmt::format("{}: cannot read: {}", root, ec.message()));
  auto leaves = [&](const fs::path& rel) {
    return rel.empty() || rel.is_absolute() || *rel.begin() == "..";
  };
  for (auto it = fs::recursive_directory_iterator(top, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it.depth() == 0 && skip_top && skip_top(it->path().filename().string())) {
      it.disable_recursion_pending();
      continue;
    }
    if (!it->is_symlink(ec)) continue;
    const fs::path link = it->path(), member = link.lexically_relative(top);
    const fs::path target = fs::read_symlink(link, ec);
    if (ec) break;
    // Where the link points, read as written (a link through `..` leaves however the folders
    // it names resolve) and as the kernel resolves it in this tree (d -> ., e -> d/..).
    const fs::path written = (member.parent_path() / target).lexically_normal();
    const fs::path resolved = fs::weakly_canonical(link, ec);
    if (ec) break;
    if (target.is_absolute() || leaves(written) || leaves(resolved.lexically_relative(top)))
      return make_error(fmt::format(
          "source member '{}' is a link to '{}', outside the source tree: refused (a wheel "
          "would carry the build machine's file)",
          member.string(), target.string()));
  }
  if (ec) return make_error(fmt::format("{}: cannot read: {}", root, ec.message()));
  return {};
}

std::string_view source_kind_name(SourceKind kind) {
  switch (kind) {
    case SourceKind::example:
      return "example";
    case SourceKind::directory:
      return "directory";
    case SourceKind::sdist:
      return "sdist";
    case SourceKind::index:
      return "index";
    case SourceKind::git:
      return "git";
  }
  return "directory";
}

bool split_git_url(std::string_view text, std::string& url, std::string& ref) {
  std::string t(text);
  bool explicit_git = false;
  if (t.rfind("git+", 0) == 0) {
    t = t.substr(4);
    explicit_git = true;
  }
  bool remote = t.rfind("https://", 0) == 0 || t.rfind("http://", 0) == 0 ||
                t.rfind("ssh://", 0) == 0 || t.rfind("git://", 0) == 0 || t.rfind("git@", 0) == 0 ||
                t.rfind("file://", 0) == 0;
  if (!remote) return false;
  // The ref follows the last '@' or '#' after the last '/' (pip's `URL@ref` form).
  auto slash = t.find_last_of('/');
  auto at = t.find_last_of("@#");
  std::string u = t, r;
  if (at != std::string::npos && slash != std::string::npos && at > slash) {
    u = t.substr(0, at);
    r = t.substr(at + 1);
  }
  if (!explicit_git && !u.ends_with(".git") && r.empty() && t.rfind("git@", 0) != 0 &&
      t.rfind("git://", 0) != 0)
    return false;
  url = u;
  ref = r;
  return true;
}

Expected<SourceSpec> classify_source(std::string_view text_in, const std::string& example_dir) {
  SourceSpec s;
  std::string text(trim(text_in));
  s.text = text;
  if (text.empty()) {
    if (example_dir.empty())
      return make_error(
          "no SOURCE given and this is not tailor's repository (where it builds the bundled "
          "example); "
          "name a source folder, an sdist, NAME==VERSION or a git URL@ref");
    s.kind = SourceKind::example;
    s.path = example_dir;
    s.name = "fused_ops";
    return s;
  }
  std::string url, ref;
  if (split_git_url(text, url, ref)) {
    s.kind = SourceKind::git;
    s.url = url;
    s.ref = ref;
    std::string base = fs::path(url).filename().string();
    if (base.ends_with(".git")) base.resize(base.size() - 4);
    s.name = base;
    return s;
  }
  std::error_code ec;
  if (fs::is_directory(text, ec)) {
    s.kind = SourceKind::directory;
    s.path = fs::absolute(text).lexically_normal().string();
    if (!s.path.empty() && s.path.back() == '/') s.path.pop_back();
    return s;
  }
  if (is_sdist_name(text)) {
    if (!fs::is_regular_file(text, ec))
      return make_error(fmt::format("{}: no such sdist file", text));
    s.kind = SourceKind::sdist;
    s.path = fs::absolute(text).lexically_normal().string();
    s.name = name_from_sdist(text);
    return s;
  }
  // A file that is no source: say what it is and what build takes.
  constexpr std::string_view k_takes =
      "build takes a source folder, an sdist (.tar.gz, .zip), NAME==VERSION or a git URL "
      "(git+https://...@ref)";
  if (text.ends_with(".whl")) {
    if (!fs::exists(text, ec))
      return make_error(fmt::format(
          "SOURCE '{}': no such file, and a .whl is a wheel, which is already built; {}", text,
          k_takes));
    return make_error(
        fmt::format("SOURCE '{}': a wheel, which is already built; {}. To look inside the wheel: "
                    "tailor inspect {}",
                    text, k_takes, text));
  }
  if (auto st = fs::status(text, ec); fs::exists(st)) {
    std::string what = "a file that is not a source";
    if (!fs::is_regular_file(st))
      what = "not a folder or a regular file";
    else if (std::string head(4, '\0');
             std::ifstream(text, std::ios::binary).read(head.data(), 4) && head ==
                                                                               "\x7f"
                                                                               "ELF")
      what = "an ELF file (a built library or program), not a source";
    return make_error(fmt::format("SOURCE '{}': {}; {}", text, what, k_takes));
  }
  static const std::regex k_pinned(
      R"(^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9][A-Za-z0-9.+!_-]*)$)");
  std::smatch m;
  if (std::regex_match(text, m, k_pinned)) {
    // PyTorch itself is no extension package: it has its own build.
    if (to_lower(m[1].str()) == "torch")
      return make_error(fmt::format(
          "SOURCE '{}': PyTorch itself is built by `tailor build torch --torch {}` (with --arch "
          "or --gpu); `tailor build SOURCE` builds extension packages",
          text, m[2].str().substr(0, m[2].str().find('+'))));
    s.kind = SourceKind::index;
    s.name = m[1];
    s.version = m[2];
    return s;
  }
  if (text.find("==") == std::string::npos && text.find('/') == std::string::npos &&
      std::regex_match(text, std::regex(R"(^[A-Za-z0-9][A-Za-z0-9._-]*$)")))
    return make_error(fmt::format(
        "SOURCE '{}': no such folder or file; for the package index give an exact version, "
        "e.g. {}==1.2.3 ({})",
        text, text, k_takes));
  return make_error(fmt::format("SOURCE '{}': no such folder or file; {}", text, k_takes));
}

std::string find_bundled_example(const std::string& start) {
  std::error_code ec;
  fs::path p = fs::absolute(start, ec);
  if (ec) return {};
  for (; !p.empty(); p = p.parent_path()) {
    fs::path example = p / "examples" / "fused_ops";
    // tailor's repository: the example beside the build module's sources.
    if (fs::exists(example / "setup.py", ec) &&
        fs::exists(p / "src" / "source" / "extension_source.h", ec))
      return example.string();
    if (p == p.root_path()) break;
  }
  return {};
}

/// The `name="..."` argument of the last top-level `setup(` call in a setup.py, read at the
/// call's own nesting level: apex's Extension(name="distributed_adam_cuda", ...) entries
/// come before setup(name="apex"), and an inline ext_modules=[Extension(name=...)] sits
/// inside the call.
static std::optional<std::string> setup_call_name(std::string_view text) {
  static const std::regex k_call(R"((^|\n)[ \t]*(setuptools\.)?setup\()");
  std::string str(text);
  size_t start = std::string::npos;
  for (auto it = std::sregex_iterator(str.begin(), str.end(), k_call); it != std::sregex_iterator();
       ++it)
    start = static_cast<size_t>(it->position(0) + it->length(0));
  if (start == std::string::npos) return std::nullopt;
  int depth = 0;
  for (size_t i = start; i < text.size(); ++i) {
    char c = text[i];
    if (c == '#') {  // a comment runs to the end of the line
      while (i < text.size() && text[i] != '\n') ++i;
    } else if (c == '"' || c == '\'') {  // skip a string literal
      for (++i; i < text.size() && text[i] != c; ++i)
        if (text[i] == '\\') ++i;
    } else if (c == '(' || c == '[' || c == '{') {
      ++depth;
    } else if (c == ')' || c == ']' || c == '}') {
      if (depth-- == 0) return std::nullopt;  // the end of the call
    } else if (depth == 0 && text.compare(i, 4, "name") == 0 &&
               (i == 0 ||
                !(std::isalnum(static_cast<unsigned char>(text[i - 1])) || text[i - 1] == '_'))) {
      size_t j = i + 4;
      while (j < text.size() && (text[j] == ' ' || text[j] == '\t')) ++j;
      if (j >= text.size() || text[j] != '=' || (j + 1 < text.size() && text[j + 1] == '='))
        continue;
      ++j;
      while (j < text.size() && (text[j] == ' ' || text[j] == '\t' || text[j] == '\n')) ++j;
      if (j >= text.size() || (text[j] != '"' && text[j] != '\''))
        return std::nullopt;  // a variable
      char q = text[j];
      size_t end = text.find(q, j + 1);
      if (end == std::string_view::npos || end == j + 1 || end - j > 200) return std::nullopt;
      return std::string(text.substr(j + 1, end - j - 1));
    }
  }
  return std::nullopt;
}

namespace {

// The package's own files under `source_dir`, at most 20,000 entries looked at, leaving out
// hidden folders and build/ and dist/ (what an earlier build left): the first path, relative
// to `source_dir`, for which `found` returns a text, and that text; "" when none does.
std::string first_package_file(
    const std::string& source_dir,
    const std::function<std::string(const fs::directory_entry&, const std::string&)>& found) {
  std::error_code ec;
  size_t seen = 0;
  for (auto it = fs::recursive_directory_iterator(
           source_dir, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator() && ++seen <= 20000; it.increment(ec)) {
    if (it->is_directory(ec)) {
      const std::string name = it->path().filename().string();
      if (name.starts_with(".") || name == "build" || name == "dist")
        it.disable_recursion_pending();
      continue;
    }
    std::string text = found(*it, fs::relative(it->path(), source_dir, ec).string());
    if (!text.empty()) return text;
  }
  return {};
}

}  // namespace

std::string first_cuda_source(const std::string& source_dir) {
  return first_package_file(source_dir, [](const fs::directory_entry& e, const std::string& rel) {
    const std::string ext = e.path().extension().string();
    return ext == ".cu" || ext == ".cuh" ? rel : std::string();
  });
}

std::string jit_compile_site(const std::string& source_dir) {
  return first_package_file(source_dir, [](const fs::directory_entry& e, const std::string& rel) {
    std::error_code ec;
    if (e.path().extension() != ".py" || !e.is_regular_file(ec) || e.file_size(ec) > (1u << 20))
      return std::string();
    int number = 0;
    for (const auto& line : split_any(read_text(e.path()), "\n")) {
      ++number;
      const std::string_view l = line;
      const bool takes_load = l.find("cpp_extension") != std::string_view::npos &&
                              l.find("load") != std::string_view::npos;
      if (takes_load && !trim(l).starts_with("#")) return fmt::format("{}:{}", rel, number);
    }
    return std::string();
  });
}

std::string detect_package_name(const std::string& source_dir) {
  fs::path dir(source_dir);
  static const std::regex k_pkg_info_name(R"((^|\n)Name:\s*([^\r\n]+))");
  std::smatch m;
  std::string pkg_info = read_text(dir / "PKG-INFO");
  if (std::regex_search(pkg_info, m, k_pkg_info_name)) return std::string(trim(m[2].str()));
  std::string pyproject = read_text(dir / "pyproject.toml");
  if (!pyproject.empty()) {
    try {
      auto tbl = toml::parse(pyproject);
      if (auto name = tbl["project"]["name"].value<std::string>()) return *name;
    } catch (const toml::parse_error&) {
      // A broken pyproject is pip's to report; keep looking elsewhere.
    }
  }
  static const std::regex k_cfg_name(R"(\[metadata\][^\[]*?\n\s*name\s*=\s*([^\r\n]+))");
  std::string cfg = read_text(dir / "setup.cfg");
  if (std::regex_search(cfg, m, k_cfg_name)) return std::string(trim(m[1].str()));
  std::string setup = read_text(dir / "setup.py");
  if (auto name = setup_call_name(setup)) return *name;
  static const std::regex k_setup_name(R"(\bname\s*=\s*["']([A-Za-z0-9][A-Za-z0-9._-]*)["'])");
  if (std::regex_search(setup, m, k_setup_name)) return m[1].str();
  return {};
}

std::string default_work_root() { return user_cache_dir("extensions"); }

std::string work_dir_for(const SourceSpec& spec, const std::string& root) {
  std::string key = std::string(source_kind_name(spec.kind)) + "\n" + spec.path + "\n" + spec.name +
                    "\n" + spec.version + "\n" + spec.url + "\n" + spec.ref;
  auto digest = Sha256::of(std::as_bytes(std::span(key.data(), key.size())));
  std::string name = spec.name.empty() ? fs::path(spec.path).filename().string() : spec.name;
  if (name.empty()) name = "source";
  for (auto& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  return (fs::path(root) / (name + "-" + Sha256::hex(digest).substr(0, 12))).string();
}

std::string stable_work_dir_for(const SourceSpec& spec, const std::string& root) {
  std::string name = spec.name.empty() ? fs::path(spec.path).filename().string() : spec.name;
  // An sdist's file name carries its version: fused_ops-0.1.0.tar.gz -> fused_ops.
  if (spec.name.empty() && spec.kind != SourceKind::example && spec.kind != SourceKind::directory) {
    if (auto dash = name.find('-'); dash != std::string::npos) name = name.substr(0, dash);
  }
  if (name.empty() || name == "." || name == "..") name = "source";
  for (auto& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  return (fs::path(root) / name).string();
}

// Earlier in-tree builds of the user's folder must not leak into the copy; the copy's own
// (tailor's earlier run there) stays.
static bool skip_in_copy(const std::string& n) {
  return n == "build" || n == "dist" || n.ends_with(".egg-info") || n == "__pycache__" ||
         n == ".pytest_cache";
}

static Expected<std::string> copy_source(const SourceSpec& spec, const std::string& work_dir,
                                         const std::string& python, CommandRunner& runner) {
  std::error_code ec;
  fs::path work(work_dir), src = work / "src";
  fs::create_directories(work, ec);
  if (ec)
    return make_error(
        fmt::format("{}: cannot create the work folder: {}", work.string(), ec.message()));
  // A folder is synchronised into the copy (see sync_tree) so the copy's own build/
  // objects from an earlier, perhaps interrupted, run stay usable; other kinds start over.
  if (spec.kind != SourceKind::example && spec.kind != SourceKind::directory) {
    fs::remove_all(src, ec);
    if (ec)
      return make_error(
          fmt::format("{}: cannot clear the old copy: {}", src.string(), ec.message()));
  }
  switch (spec.kind) {
    case SourceKind::example:
    case SourceKind::directory: {
      if (auto synced = sync_tree(spec.path, src.string(), skip_in_copy); !synced)
        return synced.error();
      return src.string();
    }
    case SourceKind::sdist:
      return unpack_sdist(spec.path, src, python, runner);
    case SourceKind::index: {
      fs::path dl = work / "download";
      fs::remove_all(dl, ec);
      fs::create_directories(dl, ec);
      // --no-build-isolation: preparing the sdist's metadata runs its setup.py, which
      // imports torch; an isolated environment would download torch for that.
      auto r = run_source_command(
          runner,
          {python, "-m", "pip", "download", "--no-deps", "--no-binary",
           ":all:", "--no-build-isolation", "-d", dl.string(), spec.name + "==" + spec.version},
          work.string(), std::chrono::seconds(1800));
      if (!r) return r.error();
      for (const auto& e : fs::directory_iterator(dl, ec))
        if (is_sdist_name(e.path().filename().string()))
          return unpack_sdist(e.path().string(), src, python, runner);
      return make_error(
          fmt::format("pip download {}=={}: no sdist in {}", spec.name, spec.version, dl.string()));
    }
    case SourceKind::git: {
      std::vector<std::string> argv = {
          "git", "clone", "--depth", "1", "--recurse-submodules", "--shallow-submodules"};
      if (!spec.ref.empty()) {
        argv.push_back("--branch");
        argv.push_back(spec.ref);
      }
      argv.push_back(spec.url);
      argv.push_back(src.string());
      auto r = run_source_command(runner, argv, work.string(), std::chrono::seconds(3600));
      if (!r) return r.error();
      return src.string();
    }
  }
  return make_error("unknown source kind");
}

Expected<std::string> prepare_source(const SourceSpec& spec, const std::string& work_dir,
                                     const std::string& python, CommandRunner& runner) {
  TAILOR_TRY(src, copy_source(spec, work_dir, python, runner));
  // A link out of the tree would carry a host file (/etc/passwd, a key) into the wheel.
  const bool folder = spec.kind == SourceKind::example || spec.kind == SourceKind::directory;
  TAILOR_TRY_VOID(check_source_links(src, folder ? skip_in_copy : nullptr));
  return src;
}

}  // namespace tailor::source
