// An inline-PTX L2 cache-policy hint the toolchain miscompiles ([[asm_cache_hint]] in
// data/compat/removals.toml), dropped from the asm statement's template: the
// `createpolicy.fractional` instruction goes, and each cp.async that took its register as the
// cache-policy operand loses `.L2::cache_hint` and that operand. Only where the register is
// the statement's own (declared there, not an operand from C++) and has no other use.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <iterator>
#include <regex>

#include "compat/file_edits.h"

namespace tailor::compat::detail {
namespace {

// A template this long is not a copy helper: left alone (libstdc++'s regex recurses per
// character matched, so the text it sees stays short).
constexpr size_t k_max_template = 8 * 1024;

bool ptx_ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$';
}

// The whole-word uses of `reg` in `text`.
size_t uses_of(const std::string& text, const std::string& reg) {
  size_t n = 0;
  for (size_t at = text.find(reg); at != std::string::npos; at = text.find(reg, at + 1)) {
    const bool before = at > 0 && (ptx_ident_char(text[at - 1]) || text[at - 1] == '%');
    const bool after = at + reg.size() < text.size() && ptx_ident_char(text[at + reg.size()]);
    if (!before && !after) ++n;
  }
  return n;
}

size_t count_matches(const std::string& text, const std::regex& re) {
  return static_cast<size_t>(
      std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator()));
}

std::string regex_quote(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '$') out += '\\';
    out += c;
  }
  return out;
}

// `createpolicy.fractional.L2::<priority>{.L2::<secondary>}.b64 REG{, fraction};` with REG as
// given (a regex) and the blanks after it.
std::string policy_pattern(const std::string& reg) {
  return R"(createpolicy\.fractional\.L2::evict_(?:first|last|normal|unchanged)(?:\.L2::evict_(?:first|unchanged))?\.b64\s+)" +
         reg + R"(\s*(?:,\s*[0-9.eE+\-]+\s*)?;[ \t]*)";
}

struct Literal {
  size_t token;
  std::string body;  // between the quotes, escapes as written
};

}  // namespace

void bridge_asm_cache_hint(FileWork& w, const AsmCacheHint& rule,
                           std::vector<std::string>& left_alone) {
  static const std::regex policy(policy_pattern("([A-Za-z_$][A-Za-z0-9_$]*)"));
  const size_t n = w.tokens.size();
  for (size_t i = 0; i < n; ++i) {
    const std::string_view kw = w.text(i);
    if (w.tokens[i].kind != TokenKind::identifier ||
        (kw != "asm" && kw != "__asm__" && kw != "__asm"))
      continue;
    size_t j = i + 1;
    while (j < n && w.tokens[j].kind == TokenKind::identifier &&
           (w.text(j) == "volatile" || w.text(j) == "__volatile__" || w.text(j) == "inline" ||
            w.text(j) == "goto"))
      ++j;
    if (w.text(j) != "(") continue;
    // The template: the adjacent plain string literals right after the `(`.
    std::vector<Literal> lits;
    size_t size = 0;
    for (size_t k = j + 1; k < n && w.tokens[k].kind == TokenKind::literal; ++k) {
      const std::string_view t = w.text(k);
      if (t.size() < 2 || t.front() != '"' || t.back() != '"') break;
      lits.push_back({k, std::string(t.substr(1, t.size() - 2))});
      size += t.size();
    }
    if (lits.empty() || size > k_max_template) continue;
    i = lits.back().token;
    std::string whole;
    for (const auto& l : lits) whole += l.body + "\n";  // a literal never joins the next's words
    if (whole.find("createpolicy") == std::string::npos) continue;
    std::vector<std::string> regs;
    for (auto it = std::sregex_iterator(whole.begin(), whole.end(), policy);
         it != std::sregex_iterator(); ++it)
      if (std::find(regs.begin(), regs.end(), (*it)[1].str()) == regs.end())
        regs.push_back((*it)[1].str());
    for (const auto& reg : regs) {
      const std::string r = regex_quote(reg);
      const std::regex its_policy(policy_pattern(r));
      const std::regex copy(
          R"((cp\.async\.(?:ca|cg)\.shared(?:::cta)?\.global(?:\.L2::(?:64B|128B|256B))?)\.L2::cache_hint(\s*\[[^\]\[]*\]\s*,\s*\[[^\]\[]*\]\s*,\s*[^,;\[\]]+?(?:\s*,\s*[^,;\[\]]+?)?)\s*,\s*)" +
          r + R"(\s*;)");
      const std::regex decl(R"(\.reg\s+\.b64\s+)" + r + R"(\s*;)");
      const size_t policies = count_matches(whole, its_policy);
      const size_t copies = count_matches(whole, copy);
      const size_t decls = count_matches(whole, decl);
      const size_t line = w.tokens[lits.front().token].line;
      // An instruction split over two literals is not rewritten (the counts would differ).
      size_t in_literals = 0;
      for (const auto& l : lits)
        in_literals += count_matches(l.body, its_policy) + count_matches(l.body, copy) +
                       count_matches(l.body, decl);
      if (in_literals != policies + copies + decls || decls != 1 || copies == 0 ||
          uses_of(whole, reg) != policies + copies + decls) {
        left_alone.push_back(
            fmt::format("{}: {}:{}: the cache-policy register {} is not only the hint of this asm "
                        "statement's cp.async copies",
                        rule.info.id, w.file->path, line, reg));
        continue;
      }
      std::string from;
      size_t from_line = line;
      for (auto& l : lits) {
        std::smatch m;
        if (from.empty() && std::regex_search(l.body, m, its_policy)) {
          from = m.str();
          from_line = w.tokens[l.token].line;
        }
        l.body = std::regex_replace(std::regex_replace(l.body, its_policy, ""), copy, "$1$2;");
      }
      while (!from.empty() && (from.back() == ' ' || from.back() == '\t')) from.pop_back();
      w.changes.push_back({w.file->path, from_line, rule.info.id,
                           fmt::format("{} + .L2::cache_hint on {} cp.async", from, copies),
                           "the cp.async without the hint", rule.info.removed_label(), rule.note});
    }
    // One edit per literal changed, after every register of the statement.
    for (const auto& l : lits) {
      const Token& t = w.tokens[l.token];
      const std::string now = "\"" + l.body + "\"";
      if (now != w.text(t)) w.edits.push_back({t.begin, t.end, now});
    }
  }
}

}  // namespace tailor::compat::detail
