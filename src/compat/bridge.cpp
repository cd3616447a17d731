#include "compat/bridge.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "compat/file_edits.h"
#include "util/files.h"
#include "util/strings.h"
#include "util/user_file.h"
#include "util/version.h"

namespace tailor::compat {
namespace fs = std::filesystem;
using namespace detail;

std::string SourceChange::text() const {
  return fmt::format("{}:{}: {} -> {} ({})", file, line, from, to,
                     note.empty() ? "removed in " + removed_in : note);
}

namespace detail {

void FileWork::read_includes() {
  header_names.clear();
  for (size_t i = 0; i + 1 < tokens.size(); ++i)
    if (is_include(i) && tokens[i + 1].kind == TokenKind::header_name) {
      std::string_view h = text(i + 1);
      if (h.size() >= 2) header_names.emplace_back(h.substr(1, h.size() - 2));
    }
}

bool FileWork::includes_header(std::string_view header) const {
  for (const auto& h : header_names)
    if (h == header) return true;
  return false;
}

void FileWork::add_include(const std::string& header) {
  const std::string line = "<" + header + ">";
  if (std::find(add_includes.begin(), add_includes.end(), line) == add_includes.end())
    add_includes.push_back(line);
}

std::string FileWork::rewritten() const {
  std::vector<Edit> sorted = edits;
  std::sort(sorted.begin(), sorted.end(),
            [](const Edit& a, const Edit& b) { return a.begin < b.begin; });
  std::string out;
  for (const auto& h : add_includes) out += "#include " + h + "\n";
  // The package's lines keep their numbers in compiler messages.
  if (!add_includes.empty()) out += "#line 1\n";
  size_t at = 0;
  for (const auto& e : sorted) {
    if (e.begin < at) continue;  // overlapping: the first edit stands
    out.append(file->text, at, e.begin - at);
    out += e.text;
    at = e.end;
  }
  out.append(file->text, at);
  return out;
}

}  // namespace detail

namespace {

bool applies(const RemovalInfo& info, const StackVersions& stack) {
  const std::string& have = info.library == Library::torch ? stack.torch : stack.cuda;
  return !have.empty() && compare_versions(have, info.removed_in) >= 0;
}

std::vector<std::string> token_texts(std::string_view text) {
  std::vector<std::string> out;
  for (const auto& t : tokenize(text)) out.emplace_back(token_text(text, t));
  return out;
}

// The index of the `)` that closes the `(` at `open`, or tokens.size().
size_t closing_paren(const FileWork& w, size_t open) {
  int depth = 0;
  for (size_t i = open; i < w.tokens.size(); ++i) {
    std::string_view t = w.text(i);
    if (t == "(" || t == "[" || t == "{") ++depth;
    if ((t == ")" || t == "]" || t == "}") && --depth == 0) return i;
  }
  return w.tokens.size();
}

// AT_DISPATCH_*(..., x.type(), ...): each top-level argument that ends in `.type()` (and is
// more than that) gets `.scalar_type()`.
void bridge_dispatch_type(FileWork& w, const DispatchType& rule) {
  for (size_t i = 0; i + 1 < w.tokens.size(); ++i) {
    if (w.tokens[i].kind != TokenKind::identifier || !w.text(i).starts_with(rule.macro_prefix) ||
        w.text(i + 1) != "(")
      continue;
    const size_t close = closing_paren(w, i + 1);
    size_t arg_begin = i + 2;
    int depth = 0;
    for (size_t j = i + 2; j <= close && j < w.tokens.size(); ++j) {
      std::string_view t = w.text(j);
      if (t == "(" || t == "[" || t == "{") ++depth;
      if (t == ")" || t == "]" || t == "}") --depth;
      if (!((t == "," && depth == 0) || j == close)) continue;
      // tokens [arg_begin, j): ... . type ( )
      if (j >= arg_begin + 5 && w.text(j - 1) == ")" && w.text(j - 2) == "(" &&
          w.text(j - 3) == "type" && (w.text(j - 4) == "." || w.text(j - 4) == "->")) {
        const Token& type = w.tokens[j - 3];
        const std::string expr(w.file->text.substr(
            w.tokens[arg_begin].begin, w.tokens[j - 4].begin - w.tokens[arg_begin].begin));
        const std::string dot(w.text(j - 4));
        w.edits.push_back({type.begin, type.end, rule.to});
        w.changes.push_back({w.file->path, type.line, rule.info.id,
                             fmt::format("{}({}{}type(), ...)", w.text(i), expr, dot),
                             fmt::format("{}{}{}()", expr, dot, rule.to),
                             rule.info.removed_label()});
      }
      arg_begin = j + 1;
    }
  }
}

void bridge_rename(FileWork& w, const Rename& rule) {
  const auto from = token_texts(rule.from);
  if (from.empty()) return;
  for (size_t i = 0; i + from.size() <= w.tokens.size(); ++i) {
    bool match = true;
    for (size_t k = 0; k < from.size() && match; ++k) match = w.text(i + k) == from[k];
    if (!match) continue;
    std::string_view before = i > 0 ? w.text(i - 1) : std::string_view();
    // A member (x.AT_CHECK) or another namespace's name (foo::cub::Sum) is not the API.
    if (before == "." || before == "->") continue;
    if (!rule.after.empty() && before != rule.after) continue;
    std::string to = rule.to;
    if (before == "::") {
      if (i > 1 && w.tokens[i - 2].kind == TokenKind::identifier) continue;
      if (to.starts_with("::")) to = to.substr(2);
    }
    const Token& first = w.tokens[i];
    const Token& last = w.tokens[i + from.size() - 1];
    w.edits.push_back({first.begin, last.end, to});
    w.changes.push_back({w.file->path, first.line, rule.info.id,
                         std::string(w.file->text.substr(first.begin, last.end - first.begin)),
                         rule.to, rule.info.removed_label()});
    if (!rule.include.empty() && !w.includes_header(rule.include)) w.add_include(rule.include);
    i += from.size() - 1;
  }
}

// cub::DeviceScan::ExclusiveSum(a, b, ..., stream, debug_synchronous): the last top-level
// argument dropped, with its comma, where it is exactly one of the rule's spellings.
void bridge_drop_argument(FileWork& w, const DropArgument& rule) {
  for (size_t i = 0; i + 5 < w.tokens.size(); ++i) {
    if (w.text(i) != rule.ns || w.text(i + 1) != "::" ||
        w.tokens[i + 2].kind != TokenKind::identifier || !w.text(i + 2).starts_with(rule.prefix) ||
        w.text(i + 3) != "::" || w.tokens[i + 4].kind != TokenKind::identifier)
      continue;
    // Another namespace's cub (mine::cub::Device...) is not the API; ::cub:: is.
    if (i > 1 && w.text(i - 1) == "::" && w.tokens[i - 2].kind == TokenKind::identifier) continue;
    size_t open = i + 5;
    if (w.text(open) == "<") {  // explicit template arguments: F<T, U>(...)
      int angle = 0;
      for (; open < w.tokens.size(); ++open) {
        if (w.text(open) == "<") ++angle;
        if (w.text(open) == ">" && --angle == 0) break;
      }
      ++open;
    }
    if (open >= w.tokens.size() || w.text(open) != "(") continue;
    const size_t close = closing_paren(w, open);
    if (close >= w.tokens.size()) continue;
    size_t comma = w.tokens.size();
    int depth = 0;
    for (size_t j = open; j < close; ++j) {
      std::string_view t = w.text(j);
      if (t == "(" || t == "[" || t == "{") ++depth;
      if (t == ")" || t == "]" || t == "}") --depth;
      if (t == "," && depth == 1) comma = j;
    }
    if (comma == w.tokens.size() || comma + 2 != close) continue;  // one token after the comma
    const std::string last(w.text(comma + 1));
    if (std::find(rule.last.begin(), rule.last.end(), last) == rule.last.end()) continue;
    // A line break between the two stays (the lines keep their numbers); a space goes.
    const Token &c = w.tokens[comma], &a = w.tokens[comma + 1];
    if (w.file->text.substr(c.end, a.begin - c.end).find('\n') == std::string::npos) {
      w.edits.push_back({c.begin, a.end, ""});
    } else {
      w.edits.push_back({c.begin, c.end, ""});
      w.edits.push_back({a.begin, a.end, ""});
    }
    const std::string call = fmt::format("{}::{}::{}", rule.ns, w.text(i + 2), w.text(i + 4));
    w.changes.push_back({w.file->path, w.tokens[comma + 1].line, rule.info.id,
                         fmt::format("{}(..., {})", call, last), fmt::format("{}(...)", call),
                         rule.info.removed_label()});
    i = close;
  }
}

// #include <THC/THC.h> -> #include "<relative>/tailor_compat/THC/THC.h"; true when used.
bool bridge_shim(FileWork& w, const Shim& shim) {
  bool used = false;
  for (size_t i = 0; i + 1 < w.tokens.size(); ++i) {
    if (!w.is_include(i) || w.tokens[i + 1].kind != TokenKind::header_name) continue;
    std::string_view h = w.text(i + 1);
    if (h.size() < 2 || h.substr(1, h.size() - 2) != shim.header) continue;
    const fs::path dir = fs::path(w.file->path).parent_path();
    const std::string target = (fs::path("tailor_compat") / shim.header)
                                   .lexically_relative(dir.empty() ? "." : dir)
                                   .string();
    const Token& t = w.tokens[i + 1];
    w.edits.push_back({t.begin, t.end, "\"" + target + "\""});
    w.changes.push_back({w.file->path, t.line, shim.info.id, "#include " + std::string(h),
                         "#include \"" + target + "\" (tailor's stand-in)",
                         shim.info.removed_label()});
    used = true;
  }
  return used;
}

PackageFacts package_facts(const std::vector<FileWork>& all) {
  PackageFacts facts;
  for (size_t f = 0; f < all.size(); ++f) {
    const FileWork& w = all[f];
    facts.paths.push_back(w.file->path);
    facts.by_path[w.file->path] = f;
    facts.by_name[fs::path(w.file->path).filename().string()].push_back(f);
    for (size_t i = 0; i + 1 < w.tokens.size(); ++i) {
      std::string_view t = w.text(i);
      const bool directive = i > 0 && w.tokens[i - 1].line_start && w.text(i - 1) == "#" &&
                             (t == "define" || t == "ifdef" || t == "ifndef" || t == "undef");
      if (directive || t == "defined") {
        size_t n = w.text(i + 1) == "(" ? i + 2 : i + 1;
        if (n < w.tokens.size() && w.tokens[n].kind == TokenKind::identifier)
          facts.defined.emplace(w.text(n));
      }
    }
  }
  return facts;
}

bool has_file_ending(const PackageFacts& facts, const std::string& suffix) {
  return std::any_of(facts.paths.begin(), facts.paths.end(), [&](const std::string& p) {
    return p == suffix || p.ends_with("/" + suffix);
  });
}

}  // namespace

Bridged bridge_files(std::vector<SourceFile>& files, std::vector<SourceFile>& added,
                     const StackVersions& stack, const Removals& table) {
  std::vector<FileWork> work(files.size());
  for (size_t f = 0; f < files.size(); ++f) {
    work[f].file = &files[f];
    work[f].tokens = tokenize(files[f].text);
    work[f].read_includes();
  }
  const PackageFacts facts = package_facts(work);
  Bridged out;
  std::vector<const Rename*> renames;
  for (const auto& r : table.renames) {
    if (!applies(r.info, stack)) continue;
    if (!r.unless_defined.empty() && facts.defined.count(r.unless_defined)) {
      out.left_alone.push_back(
          fmt::format("{}: the package defines {} itself", r.info.id, r.unless_defined));
      continue;
    }
    if (!r.unless_file.empty() && has_file_ending(facts, r.unless_file)) {
      out.left_alone.push_back(
          fmt::format("{}: the package has its own {}", r.info.id, r.unless_file));
      continue;
    }
    renames.push_back(&r);
  }
  // The package's own older -std flags, raised by the build driver where nothing in its
  // files would read otherwise.
  for (const auto& c : table.cxx_standards)
    if (applies(c.info, stack))
      if (auto raise = cxx_raise_for(work, c, out.left_alone); !raise.from.empty())
        out.cxx_raise = std::move(raise);
  std::vector<const Shim*> shims_used;
  for (auto& w : work) {
    for (const auto& d : table.dispatch_types)
      if (applies(d.info, stack)) bridge_dispatch_type(w, d);
    for (const Rename* r : renames) bridge_rename(w, *r);
    for (const auto& d : table.drop_arguments)
      if (applies(d.info, stack)) bridge_drop_argument(w, d);
    for (const auto& s : table.shims) {
      if (!applies(s.info, stack) || has_file_ending(facts, s.header)) continue;
      if (bridge_shim(w, s) &&
          std::find(shims_used.begin(), shims_used.end(), &s) == shims_used.end())
        shims_used.push_back(&s);
    }
    for (const auto& a : table.asm_cache_hints)
      if (applies(a.info, stack)) bridge_asm_cache_hint(w, a, out.left_alone);
    add_missing_std_headers(w, work, facts, table);
  }
  // Each shim used, and those it includes itself, written once.
  for (size_t i = 0; i < shims_used.size(); ++i)
    for (const auto& header : shims_used[i]->also)
      for (const auto& s : table.shims)
        if (s.header == header &&
            std::find(shims_used.begin(), shims_used.end(), &s) == shims_used.end())
          shims_used.push_back(&s);
  for (const Shim* s : shims_used)
    added.push_back({(fs::path("tailor_compat") / s->header).string(), s->text});
  for (size_t f = 0; f < files.size(); ++f) {
    if (work[f].changes.empty()) continue;
    std::string text = work[f].rewritten();
    std::sort(work[f].changes.begin(), work[f].changes.end(),
              [](const SourceChange& a, const SourceChange& b) { return a.line < b.line; });
    for (auto& c : work[f].changes) out.changes.push_back(std::move(c));
    files[f].text = std::move(text);
  }
  return out;
}

namespace {

bool is_source_name(const std::string& name) {
  static const std::vector<std::string> k_ext = {".c",   ".cc",  ".cpp", ".cxx",  ".cu",
                                                 ".cuh", ".h",   ".hh",  ".hpp",  ".hxx",
                                                 ".inl", ".ipp", ".tcc", ".cuinl"};
  const std::string ext = fs::path(name).extension().string();
  return std::find(k_ext.begin(), k_ext.end(), ext) != k_ext.end();
}

struct ReadTree {
  std::vector<SourceFile> files;
  std::vector<fs::file_time_type> times;
};

Expected<ReadTree> read_tree(const std::string& dir) {
  ReadTree tree;
  std::error_code ec;
  size_t seen = 0;
  for (auto it =
           fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator() && ++seen <= 20000; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (it->is_directory(ec)) {
      if (name.starts_with(".") || name == "build" || name == "dist" || name == "tailor_compat")
        it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file(ec) || it->is_symlink(ec) || !is_source_name(name)) continue;
    auto text = read_text_file(it->path().string(), uint64_t{4} << 20);
    if (!text) continue;  // over the bound or unreadable: not bridged
    tree.files.push_back({fs::relative(it->path(), dir, ec).string(), std::move(*text)});
    tree.times.push_back(fs::last_write_time(it->path(), ec));
  }
  if (ec) return make_error(fmt::format("{}: cannot read: {}", dir, ec.message()));
  // In path order, whatever order the file system lists them in: the changes (and the
  // build's fingerprint of them) are the same on every machine.
  std::vector<size_t> order(tree.files.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return tree.files[a].path < tree.files[b].path; });
  ReadTree sorted;
  for (size_t i : order) {
    sorted.files.push_back(std::move(tree.files[i]));
    sorted.times.push_back(tree.times[i]);
  }
  return sorted;
}

}  // namespace

Expected<Bridged> bridge_source(const std::string& source_dir, const StackVersions& stack) {
  auto tree = read_tree(source_dir);
  if (!tree) return tree.error();
  std::vector<std::string> before;
  before.reserve(tree->files.size());
  for (const auto& f : tree->files) before.push_back(f.text);
  std::vector<SourceFile> added;
  Bridged out = bridge_files(tree->files, added, stack, removals());
  std::error_code ec;
  for (size_t f = 0; f < tree->files.size(); ++f) {
    if (tree->files[f].text == before[f]) continue;
    const std::string path = (fs::path(source_dir) / tree->files[f].path).string();
    if (auto w = write_file_atomic(path, tree->files[f].text); !w) return w.error();
    // The source's time stays: a later build compares it with its objects as before (the
    // build's fingerprint names the changes, so a different set rebuilds).
    fs::last_write_time(path, tree->times[f], ec);
  }
  // A shim's time is fixed, so a later build does not recompile what includes it; a shim of
  // other text changes the build's fingerprint instead (workflow hashes `added`).
  const auto shim_time = fs::file_time_type::clock::now() - std::chrono::hours(24 * 365 * 10);
  for (const auto& a : added) {
    const fs::path path = fs::path(source_dir) / a.path;
    fs::create_directories(path.parent_path(), ec);
    if (auto w = write_file_atomic(path.string(), a.text); !w) return w.error();
    fs::last_write_time(path, shim_time, ec);
  }
  out.added = std::move(added);
  return out;
}

}  // namespace tailor::compat
