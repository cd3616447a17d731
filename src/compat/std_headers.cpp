// Standard headers newer libstdc++ no longer includes from its other headers: a file that
// uses a name of one without including it (itself, through the package's own headers it
// includes, or through a header that brings it: torch's, pybind11's) gets the #include.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <functional>

#include "compat/file_edits.h"

namespace tailor::compat::detail {
namespace fs = std::filesystem;

namespace {

// The package files an #include may name: the one beside the including file or at the top
// of the package, else every package file whose path ends with it (an include folder the
// build adds; when several match, any of them may be the one, so all count as included).
std::vector<const FileWork*> resolve(const std::string& header, const FileWork& from,
                                     const std::vector<FileWork>& all, const PackageFacts& facts) {
  const fs::path dir = fs::path(from.file->path).parent_path();
  for (const fs::path& p : {(dir / header).lexically_normal(), fs::path(header).lexically_normal()})
    if (auto it = facts.by_path.find(p.string()); it != facts.by_path.end())
      return {&all[it->second]};
  std::vector<const FileWork*> found;
  const auto named = facts.by_name.find(fs::path(header).filename().string());
  if (named == facts.by_name.end()) return found;
  for (size_t i : named->second)
    if (all[i].file->path.ends_with("/" + header)) found.push_back(&all[i]);
  return found;
}

// Every header the file includes, through the package's own headers too.
std::vector<std::string> include_closure(const FileWork& start, const std::vector<FileWork>& all,
                                         const PackageFacts& facts) {
  std::vector<std::string> out;
  std::vector<const FileWork*> seen;
  std::function<void(const FileWork&)> walk = [&](const FileWork& w) {
    if (std::find(seen.begin(), seen.end(), &w) != seen.end() || seen.size() > 4096) return;
    seen.push_back(&w);
    for (const auto& h : w.header_names) {
      out.push_back(h);
      for (const FileWork* inner : resolve(h, w, all, facts)) walk(*inner);
    }
  };
  walk(start);
  return out;
}

bool covers(const StdHeader& h, const std::vector<std::string>& closure, bool cuda_file) {
  for (const auto& inc : closure) {
    if (inc == h.header || std::find(h.same_as.begin(), h.same_as.end(), inc) != h.same_as.end())
      return true;
    for (const auto& prefix : h.covered_by)
      if (inc.starts_with(prefix)) return true;
  }
  // nvcc includes cuda_runtime.h into every CUDA file first.
  return cuda_file && std::find(h.covered_by.begin(), h.covered_by.end(), "cuda_runtime.h") !=
                          h.covered_by.end();
}

// A name of a header's list, as the tokens show it: "unique_ptr" qualified by std::, or a
// bare "uint32_t".
struct NameKey {
  size_t header;
  bool in_std;
};

// The first use of each header's names in one pass: token index per header (tokens.size()
// for none) and whether that use was std::-qualified. A bare name counts unless it is a
// member or qualified by another namespace; std::X unless that std is another's member.
void first_uses(const FileWork& w, const Removals& table, std::vector<size_t>& at,
                std::vector<bool>& qualified) {
  std::map<std::string_view, std::vector<NameKey>> keys;
  for (size_t h = 0; h < table.std_headers.size(); ++h)
    for (const auto& name : table.std_headers[h].names) {
      const bool in_std = name.starts_with("std::");
      keys[in_std ? std::string_view(name).substr(5) : std::string_view(name)].push_back(
          {h, in_std});
    }
  at.assign(table.std_headers.size(), w.tokens.size());
  qualified.assign(table.std_headers.size(), false);
  for (size_t i = 0; i < w.tokens.size(); ++i) {
    if (w.tokens[i].kind != TokenKind::identifier) continue;
    auto it = keys.find(w.text(i));
    if (it == keys.end()) continue;
    std::string_view before = i > 0 ? w.text(i - 1) : std::string_view();
    const bool std_qualified =
        before == "::" && i > 1 && w.text(i - 2) == "std" &&
        !(i > 3 && w.text(i - 3) == "::" && w.tokens[i - 4].kind == TokenKind::identifier);
    const bool bare = before != "." && before != "->" && before != "::";
    for (const NameKey& k : it->second) {
      if (at[k.header] != w.tokens.size() || !(k.in_std ? std_qualified : bare)) continue;
      at[k.header] = k.in_std ? i - 2 : i;
      qualified[k.header] = k.in_std;
    }
  }
}

}  // namespace

void add_missing_std_headers(FileWork& w, const std::vector<FileWork>& all,
                             const PackageFacts& facts, const Removals& table) {
  const std::string ext = fs::path(w.file->path).extension().string();
  if (ext == ".c") return;  // C: not libstdc++'s
  const bool cuda_file = ext == ".cu" || ext == ".cuh";
  std::vector<std::string> closure;
  bool closure_made = false;
  std::vector<size_t> uses;
  std::vector<bool> qualified_uses;
  first_uses(w, table, uses, qualified_uses);
  for (size_t hi = 0; hi < table.std_headers.size(); ++hi) {
    const StdHeader& h = table.std_headers[hi];
    const size_t use = uses[hi];
    const bool qualified = qualified_uses[hi];
    if (use == w.tokens.size()) continue;
    if (!closure_made) {
      closure = include_closure(w, all, facts);
      closure_made = true;
    }
    if (covers(h, closure, cuda_file)) continue;
    // A bare C name (uint32_t) from the C header, which C and C++ alike read; std:: names
    // from the C++ one.
    const std::string header = !qualified && !h.same_as.empty() ? h.same_as.front() : h.header;
    w.add_include(header);
    const std::string name =
        qualified ? "std::" + std::string(w.text(use + 2)) : std::string(w.text(use));
    w.changes.push_back(
        {w.file->path, w.tokens[use].line, "std-header-" + h.header,
         fmt::format("{} without #include <{}>", name, header), "#include added",
         h.gcc.empty() ? "newer libstdc++" : "GCC " + h.gcc,
         fmt::format("{} no longer includes it from other headers",
                     h.gcc.empty() ? "newer libstdc++" : "GCC " + h.gcc + "'s libstdc++")});
  }
}

}  // namespace tailor::compat::detail
