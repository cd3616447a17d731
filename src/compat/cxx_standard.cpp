// The raise of a package's own older C++ standard (data/compat/removals.toml's
// [[cxx_standard]]): which of its -std flags may become the standard torch needs, given what
// the package's files hold. The build driver does the raise (choices.py, old_std_back).
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "compat/file_edits.h"

namespace tailor::compat::detail {
namespace {

struct Mark {
  std::string where;  ///< "src/a.cu:12"
  std::string what;   ///< "??=" or "1'000"
};

size_t line_of(std::string_view text, size_t at) {
  return 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + at, '\n'));
}

// The first trigraph (??= ??/ ??' ??( ??) ??! ??< ??> ??-) anywhere in a file, comments and
// literals included: the preprocessor converts them before it sees either.
std::optional<Mark> first_trigraph(const std::vector<FileWork>& work) {
  for (const auto& w : work) {
    const std::string& t = w.file->text;
    for (size_t at = t.find("??"); at != std::string::npos; at = t.find("??", at + 1))
      if (at + 2 < t.size() && std::string_view("=/'()!<>-").find(t[at + 2]) != std::string::npos)
        return Mark{fmt::format("{}:{}", w.file->path, line_of(t, at)), t.substr(at, 3)};
  }
  return std::nullopt;
}

std::optional<Mark> first_token(const std::vector<FileWork>& work, auto&& pred) {
  for (const auto& w : work)
    for (size_t i = 0; i < w.tokens.size(); ++i)
      if (pred(w, i))
        return Mark{fmt::format("{}:{}", w.file->path, w.tokens[i].line), std::string(w.text(i))};
  return std::nullopt;
}

bool is_cxx11(const std::string& s) { return s.ends_with("++11") || s.ends_with("++0x"); }

}  // namespace

CxxRaise cxx_raise_for(const std::vector<FileWork>& work, const CxxStandard& rule,
                       std::vector<std::string>& left_alone) {
  CxxRaise raise{rule.info.id, rule.standard, rule.older, rule.info.removed_label()};
  auto refuse = [&](auto&& drop, const Mark& m, std::string_view why) {
    std::vector<std::string> gone;
    for (const auto& s : raise.from)
      if (drop(s)) gone.push_back("-std=" + s);
    std::erase_if(raise.from, drop);
    if (gone.empty()) return;
    std::string list;
    for (const auto& g : gone) list += (list.empty() ? "" : ", ") + g;
    left_alone.push_back(fmt::format("{}: {} not raised to C++{}: {}: {} ({})", rule.info.id, list,
                                     rule.standard, m.where, m.what, why));
  };
  const auto named = first_token(work, [&](const FileWork& w, size_t i) {
    return w.tokens[i].kind == TokenKind::identifier &&
           std::find(rule.refuse_tokens.begin(), rule.refuse_tokens.end(), w.text(i)) !=
               rule.refuse_tokens.end();
  });
  if (named)
    refuse([](const std::string&) { return true; }, *named,
           "its behaviour differs under C++" + rule.standard);
  if (auto tri = first_trigraph(work))
    refuse([](const std::string& s) { return s.starts_with("c++"); }, *tri,
           "a trigraph: a strict -std before C++17 converts it, C++17 does not");
  const auto separator = first_token(work, [](const FileWork& w, size_t i) {
    return w.tokens[i].kind == TokenKind::number && w.text(i).find('\'') != std::string::npos;
  });
  if (separator)
    refuse(is_cxx11, *separator, "a digit separator, which C++11 read as a number and a character");
  return raise;
}

}  // namespace tailor::compat::detail
