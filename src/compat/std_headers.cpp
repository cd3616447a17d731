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

// The package file an #include names, when it is one: beside the including file, at the
// top of the package, else the one package file whose path ends with it.
const FileWork* resolve(const std::string& header, const FileWork& from,
                        const std::vector<FileWork>& all, const PackageFacts& facts) {
  const fs::path dir = fs::path(from.file->path).parent_path();
  for (const fs::path& p : {(dir / header).lexically_normal(), fs::path(header).lexically_normal()})
    if (auto it = facts.by_path.find(p.string()); it != facts.by_path.end())
      return &all[it->second];
  const FileWork* found = nullptr;
  for (const auto& w : all)
    if (w.file->path.ends_with("/" + header)) {
      if (found) return nullptr;  // two candidates: not known which
      found = &w;
    }
  return found;
}

// Every header the file includes, through the package's own headers too.
std::vector<std::string> include_closure(const FileWork& start, const std::vector<FileWork>& all,
                                         const PackageFacts& facts) {
  std::vector<std::string> out;
  std::vector<const FileWork*> seen;
  std::function<void(const FileWork&)> walk = [&](const FileWork& w) {
    if (std::find(seen.begin(), seen.end(), &w) != seen.end() || seen.size() > 512) return;
    seen.push_back(&w);
    for (const auto& h : w.includes()) {
      out.push_back(h);
      if (const FileWork* inner = resolve(h, w, all, facts)) walk(*inner);
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

// The first use of one of the header's names: its token index, or tokens.size(). A bare
// name counts unless it is a member or qualified by another namespace.
size_t first_use(const FileWork& w, const StdHeader& h, bool& qualified) {
  for (size_t i = 0; i < w.tokens.size(); ++i) {
    if (w.tokens[i].kind != TokenKind::identifier) continue;
    std::string_view before = i > 0 ? w.text(i - 1) : std::string_view();
    for (const auto& name : h.names) {
      if (name.starts_with("std::")) {
        if (w.text(i) == "std" && w.text(i + 1) == "::" && w.text(i + 2) == name.substr(5) &&
            !(before == "::" && i > 1 && w.tokens[i - 2].kind == TokenKind::identifier)) {
          qualified = true;
          return i;
        }
      } else if (w.text(i) == name && before != "." && before != "->" && before != "::") {
        qualified = false;
        return i;
      }
    }
  }
  return w.tokens.size();
}

}  // namespace

void add_missing_std_headers(FileWork& w, const std::vector<FileWork>& all,
                             const PackageFacts& facts, const Removals& table) {
  const std::string ext = fs::path(w.file->path).extension().string();
  if (ext == ".c") return;  // C: not libstdc++'s
  const bool cuda_file = ext == ".cu" || ext == ".cuh";
  std::vector<std::string> closure;
  bool closure_made = false;
  for (const auto& h : table.std_headers) {
    bool qualified = false;
    const size_t use = first_use(w, h, qualified);
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
