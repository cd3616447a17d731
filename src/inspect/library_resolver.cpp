#include "inspect/library_resolver.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "data/toml_document.h"
#include "inspect/library_classifier.h"

namespace tailor::inspect {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view k_file = "manylinux/loader.toml";

// One directory of a search path after $ORIGIN substitution.
struct SearchDir {
  bool in_tree =
      false;  // a folder of the wheel's install tree ("" = its root); else an absolute path
  std::string dir;
  std::string label;        // "RUNPATH $ORIGIN/../lib"
  size_t owner = 0;         // the library whose RUNPATH/RPATH this is
  mutable int exists = -1;  // on disk: whether the folder exists (-1: not yet looked at)
};

struct LibrarySearch {
  bool has_runpath = false;
  std::vector<SearchDir> own;  // RUNPATH, or RPATH when there is no RUNPATH
  std::vector<std::string> warnings;
};

// Lexically normalizes a '/'-separated path (keeps a leading '/'); nullopt when ".." climbs
// above the root.
std::optional<std::string> normalize(std::string_view path) {
  const bool absolute = !path.empty() && path[0] == '/';
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string_view::npos) slash = path.size();
    auto part = path.substr(start, slash - start);
    if (part == "..") {
      if (parts.empty()) return std::nullopt;
      parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    start = slash + 1;
  }
  std::string out = absolute ? "/" : "";
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += '/';
    out += parts[i];
  }
  return out;
}

// The install path of a wheel member: "<dist>.data/purelib/x" and ".../platlib/x" install
// to the same root as the top-level files.
std::string install_path(const std::string& member) {
  auto slash = member.find('/');
  if (slash == std::string::npos) return member;
  std::string_view first(member.data(), slash);
  if (first.size() > 5 && first.substr(first.size() - 5) == ".data") {
    for (std::string_view scheme : {"purelib/", "platlib/"})
      if (member.compare(slash + 1, scheme.size(), scheme) == 0)
        return member.substr(slash + 1 + scheme.size());
  }
  return member;
}

std::string parent_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Substitutes $ORIGIN / ${ORIGIN}. Sets `token` when the entry uses $LIB or $PLATFORM
// (they depend on the loading system), `starts_at_origin` when the entry begins with
// the origin.
std::string substitute(const std::string& entry, const std::string& origin, std::string& token,
                       bool& starts_at_origin) {
  std::string out;
  starts_at_origin = false;
  auto is_name_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  };
  for (size_t i = 0; i < entry.size();) {
    if (entry[i] != '$') {
      out += entry[i++];
      continue;
    }
    std::string name;
    size_t end = i + 1;
    if (end < entry.size() && entry[end] == '{') {
      size_t close = entry.find('}', end);
      if (close == std::string::npos) {
        out += entry[i++];
        continue;
      }
      name = entry.substr(end + 1, close - end - 1);
      end = close + 1;
    } else {
      while (end < entry.size() && is_name_char(entry[end])) ++end;
      name = entry.substr(i + 1, end - i - 1);
    }
    if (name == "ORIGIN") {
      if (i == 0) starts_at_origin = true;
      out += origin;
    } else {
      if ((name == "LIB" || name == "PLATFORM") && token.empty()) token = "$" + name;
      out += entry.substr(i, end - i);
    }
    i = end;
  }
  return out;
}

// Builds one library's own search path: the distinct entries of RUNPATH (or RPATH), capped,
// with $ORIGIN replaced by `origin` (a tree folder when `in_tree`, else an absolute folder).
LibrarySearch search_of(const LibraryReport& lib, size_t index, const std::string& origin,
                        bool in_tree, const LoaderRules& rules) {
  LibrarySearch s;
  s.has_runpath = !lib.runpath.empty();
  // Build-machine folders are worth a warning in either list, even an ignored RPATH.
  for (const auto* list : {&lib.runpath, &lib.rpath}) {
    const char* kind = list == &lib.runpath ? "RUNPATH" : "RPATH";
    std::unordered_set<std::string> flagged;
    for (const auto& e : *list) {
      if (flagged.size() >= 8) break;  // a few examples are enough
      auto prefix = rules.build_machine_prefix(e);
      if (!prefix.empty() && flagged.insert(e).second)
        s.warnings.push_back(
            fmt::format("{} entry '{}' is a folder of the build machine ({}...): it does not exist "
                        "where the wheel is installed, or holds something else there",
                        kind, e, prefix));
    }
  }
  const auto& raw = s.has_runpath ? lib.runpath : lib.rpath;
  const char* kind = s.has_runpath ? "RUNPATH" : "RPATH";
  std::vector<std::string> entries;
  std::unordered_set<std::string_view> seen;
  seen.reserve(std::min<size_t>(raw.size(), 1 << 20));
  size_t distinct = 0;
  for (const auto& e : raw)
    if (seen.insert(e).second) {
      ++distinct;
      if (entries.size() < rules.max_search_entries) entries.push_back(e);
    }
  if (distinct > entries.size())
    s.warnings.push_back(fmt::format(
        "{} has {} entries ({} distinct); only the first {} distinct entries are searched", kind,
        raw.size(), distinct, entries.size()));
  else if (raw.size() > 4 * rules.max_search_entries)
    s.warnings.push_back(
        fmt::format("{} has {} entries but only {} distinct; each is searched once", kind,
                    raw.size(), distinct));
  std::unordered_set<std::string> dirs_seen;
  for (const auto& e : entries) {
    std::string token;
    bool at_origin = false;
    std::string text = substitute(e, origin, token, at_origin);
    if (!token.empty()) {
      s.warnings.push_back(fmt::format(
          "{} entry '{}' uses {}, which the loading system decides: not searched", kind, e, token));
      continue;
    }
    SearchDir d;
    d.owner = index;
    d.label = fmt::format("{} {}", kind, e);
    if (in_tree && at_origin) {
      auto n = normalize("/" + text);  // the tree's root is "/" here; stripped below
      if (!n) {
        s.warnings.push_back(fmt::format(
            "{} entry '{}' climbs above the install root of the wheel: not searched inside it",
            kind, e));
        continue;
      }
      d.in_tree = true;
      d.dir = n->substr(1);
    } else if (!text.empty() && text[0] == '/') {
      auto n = normalize(text);
      d.dir = n ? *n : text;
    } else {
      s.warnings.push_back(fmt::format(
          "{} entry '{}' is relative to the working directory of the process: not searched", kind,
          e));
      continue;
    }
    if (dirs_seen.insert((d.in_tree ? "t:" : "a:") + d.dir).second) s.own.push_back(std::move(d));
  }
  return s;
}

std::string unreached_note(const LibraryReport& lib, const std::string& where) {
  if (!lib.runpath.empty()) return where + ", but no RUNPATH reaches it";
  if (!lib.rpath.empty()) return where + ", but no RPATH reaches it";
  return where + ", but the library has no RUNPATH or RPATH to reach it";
}

// Where files are: the wheel's install tree (hash index by path) or the file system.
class FileSpace {
 public:
  virtual ~FileSpace() = default;
  /// The need found in `d`: its displayed path and the library index when it is one.
  virtual std::optional<std::pair<std::string, std::optional<size_t>>> find(const SearchDir& d,
                                                                            const std::string& name,
                                                                            bool& inside) = 0;
  /// Where a file of that name is, for the "not reached" note ("" when none).
  virtual std::string elsewhere(const std::string& name) const = 0;
};

class WheelSpace : public FileSpace {
 public:
  WheelSpace(const std::vector<std::string>& members,
             const std::vector<std::string>& library_paths) {
    for (const auto& m : members) {
      auto p = install_path(m);
      m_by_path.emplace(p, m);
      m_by_name.emplace(base_of(p), m);  // the first member of each name
    }
    for (size_t i = 0; i < library_paths.size(); ++i) m_library.emplace(library_paths[i], i);
  }
  std::optional<std::pair<std::string, std::optional<size_t>>> find(const SearchDir& d,
                                                                    const std::string& name,
                                                                    bool& inside) override {
    if (!d.in_tree)
      return std::nullopt;  // an absolute folder is the installing system's, not the wheel's
    auto it = m_by_path.find(d.dir.empty() ? name : d.dir + "/" + name);
    if (it == m_by_path.end()) return std::nullopt;
    inside = true;
    std::optional<size_t> lib;
    if (auto l = m_library.find(it->second); l != m_library.end()) lib = l->second;
    return std::pair(it->second, lib);
  }
  std::string elsewhere(const std::string& name) const override {
    auto it = m_by_name.find(name);
    return it == m_by_name.end() ? "" : "a file of that name is in the wheel at " + it->second;
  }

 private:
  std::unordered_map<std::string, std::string> m_by_path;  // install path -> member name
  std::unordered_multimap<std::string, std::string> m_by_name;
  std::unordered_map<std::string, size_t> m_library;  // member name -> library index
};

class DiskSpace : public FileSpace {
 public:
  explicit DiskSpace(const std::vector<std::string>& library_paths) {
    std::error_code ec;
    for (size_t i = 0; i < library_paths.size(); ++i) {
      auto canon = fs::weakly_canonical(library_paths[i], ec);
      m_input.emplace(ec ? library_paths[i] : canon.string(), i);
      m_by_name.emplace(base_of(library_paths[i]), library_paths[i]);
    }
    m_paths = library_paths;
  }
  std::optional<std::pair<std::string, std::optional<size_t>>> find(const SearchDir& d,
                                                                    const std::string& name,
                                                                    bool& inside) override {
    if (d.in_tree) return std::nullopt;
    std::error_code ec;
    if (d.exists < 0) {  // once per folder of each search path, then a field read
      auto [dir_it, fresh] = m_dir_exists.try_emplace(d.dir, false);
      if (fresh) dir_it->second = fs::is_directory(d.dir, ec);
      d.exists = dir_it->second ? 1 : 0;
    }
    if (!d.exists) return std::nullopt;
    fs::path candidate = fs::path(d.dir) / name;
    if (!fs::exists(candidate, ec) || fs::is_directory(candidate, ec)) return std::nullopt;
    auto canon = fs::weakly_canonical(candidate, ec);
    if (!ec)
      if (auto it = m_input.find(canon.string()); it != m_input.end()) {
        inside = true;
        return std::pair(m_paths[it->second], std::optional<size_t>(it->second));
      }
    inside = false;
    return std::pair(candidate.string(), std::optional<size_t>());
  }
  std::string elsewhere(const std::string& name) const override {
    auto it = m_by_name.find(name);
    return it == m_by_name.end() ? "" : "a file of that name is among the inputs at " + it->second;
  }

 private:
  std::unordered_map<std::string, size_t> m_input;  // canonical path -> library index
  std::unordered_multimap<std::string, std::string> m_by_name;
  std::unordered_map<std::string, bool> m_dir_exists;
  std::vector<std::string> m_paths;
};

std::vector<InspectedLibrary> resolve(std::vector<LibraryReport> libraries, FileSpace& space,
                                      const std::vector<std::string>& origins, bool in_tree) {
  const auto& rules = LoaderRules::get();
  const size_t n = libraries.size();
  std::vector<LibrarySearch> searches;
  searches.reserve(n);
  for (size_t i = 0; i < n; ++i)
    searches.push_back(search_of(libraries[i], i, origins[i], in_tree, rules));

  // RPATHs inherited from the objects that load each library (only used by libraries
  // without RUNPATH; passed down through every library).
  std::vector<std::vector<SearchDir>> inherited(n);
  std::vector<std::unordered_set<std::string>> inherited_keys(n);
  std::vector<std::vector<NeedResolution>> results(n);
  std::deque<size_t> queue;
  std::vector<bool> queued(n, true);
  for (size_t i = 0; i < n; ++i) queue.push_back(i);
  size_t budget = 4 * n + 16;  // re-resolutions after inherited paths grow: bounded

  while (!queue.empty()) {
    size_t i = queue.front();
    queue.pop_front();
    queued[i] = false;
    const auto& lib = libraries[i];
    const auto& s = searches[i];
    std::vector<const SearchDir*> dirs;
    for (const auto& d : s.own) dirs.push_back(&d);
    if (!s.has_runpath)
      for (const auto& d : inherited[i]) dirs.push_back(&d);
    auto& res = results[i];
    res.assign(lib.needed.size(), NeedResolution{});
    std::vector<size_t> loaded;
    for (size_t k = 0; k < lib.needed.size(); ++k) {
      const auto& name = lib.needed[k];
      if (name.find('/') != std::string::npos)
        continue;  // a path, not searched (and never in our tree)
      for (const auto* d : dirs) {
        bool inside = false;
        auto hit = space.find(*d, name, inside);
        if (!hit) continue;
        res[k].where = inside ? NeedResolution::Where::inside : NeedResolution::Where::on_disk;
        res[k].path = hit->first;
        res[k].via =
            d->owner == i ? d->label : fmt::format("{} of {}", d->label, libraries[d->owner].path);
        if (hit->second && *hit->second != i) loaded.push_back(*hit->second);
        break;
      }
      if (res[k].where == NeedResolution::Where::nowhere) {
        auto where = space.elsewhere(name);
        if (!where.empty()) {
          res[k].where = NeedResolution::Where::unreached;
          res[k].path = where;
          res[k].note = unreached_note(lib, where);
        }
      }
    }
    // What this library passes to the ones it loads: its RPATH (none when it has RUNPATH)
    // and what it inherited.
    std::vector<const SearchDir*> pass;
    if (!s.has_runpath)
      for (const auto& d : s.own) pass.push_back(&d);
    for (const auto& d : inherited[i]) pass.push_back(&d);
    for (size_t j : loaded) {
      bool grew = false;
      for (const auto* d : pass) {
        if (inherited[j].size() >= rules.max_search_entries) break;
        if (inherited_keys[j].insert((d->in_tree ? "t:" : "a:") + d->dir).second) {
          inherited[j].push_back(*d);
          grew = true;
        }
      }
      if (grew && !queued[j] && budget > 0) {
        --budget;
        queued[j] = true;
        queue.push_back(j);
      }
    }
  }

  std::vector<InspectedLibrary> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    auto& raw = libraries[i];
    // Keep what is stored bounded too: a capped list is the list that was searched.
    auto cap = [&](std::vector<std::string>& list) {
      if (list.size() <= rules.max_search_entries) return;
      std::vector<std::string> kept;
      std::unordered_set<std::string> seen;
      for (auto& e : list)
        if (kept.size() < rules.max_search_entries && seen.insert(e).second)
          kept.push_back(std::move(e));
      list = std::move(kept);
    };
    cap(raw.runpath);
    cap(raw.rpath);
    auto lib = classify_resolved(std::move(raw), results[i]);
    lib.loader_warnings = std::move(searches[i].warnings);
    out.push_back(std::move(lib));
  }
  return out;
}

}  // namespace

const LoaderRules& LoaderRules::get() {
  static const LoaderRules rules = [] {
    LoaderRules r;
    auto doc = data::toml_document(k_file);
    auto max = doc["max_search_entries"];
    if (max.integer() < 1 || max.integer() > 65536) max.fail("expected 1 to 65536");
    r.max_search_entries = static_cast<size_t>(max.integer());
    auto list = doc["build_machine_prefixes"];
    for (const auto& s : list.strings()) {
      if (s.size() < 2 || s[0] != '/' || s.back() != '/')
        list.fail("'" + s + "' is not '/<folder>/'");
      r.build_machine_prefixes.push_back(s);
    }
    return r;
  }();
  return rules;
}

std::string LoaderRules::build_machine_prefix(const std::string& entry) const {
  auto n = normalize(entry);
  if (entry.empty() || entry[0] != '/' || !n) return "";
  std::string path = *n + "/";
  for (const auto& p : build_machine_prefixes)
    if (path.compare(0, p.size(), p) == 0) return p;
  return "";
}

std::vector<InspectedLibrary> resolve_wheel_libraries(
    std::vector<LibraryReport> libraries, const std::vector<std::string>& member_names) {
  std::vector<std::string> paths, origins;
  for (const auto& l : libraries) {
    paths.push_back(l.path);
    origins.push_back(parent_of(install_path(l.path)));
  }
  WheelSpace space(member_names, paths);
  return resolve(std::move(libraries), space, origins, true);
}

std::vector<InspectedLibrary> resolve_installed_libraries(std::vector<LibraryReport> libraries) {
  std::vector<std::string> paths, origins;
  for (const auto& l : libraries) {
    paths.push_back(l.path);
    std::error_code ec;
    auto abs = fs::absolute(l.path, ec);
    origins.push_back((ec ? fs::path(l.path) : abs).parent_path().string());
  }
  DiskSpace space(paths);
  return resolve(std::move(libraries), space, origins, false);
}

}  // namespace tailor::inspect
