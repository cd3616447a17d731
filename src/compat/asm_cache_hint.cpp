// An inline-PTX L2 cache-policy hint the toolchain miscompiles ([[asm_cache_hint]] in
// data/compat/removals.toml), dropped from the asm statement's template: the
// `createpolicy.fractional` instruction goes, and each cp.async that took its register as the
// cache-policy operand loses `.L2::cache_hint` and that operand. Only where the register is
// the statement's own (declared there, not an operand from C++) and has no other use.
// The template is read instruction by instruction (split at `;`, `{` and `}`), in one pass:
// no backtracking, so a hostile template costs time linear in its length.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "compat/file_edits.h"
#include "util/strings.h"

namespace tailor::compat::detail {
namespace {

// A template this long is not a copy helper: left alone.
constexpr size_t k_max_template = 8 * 1024;

bool ptx_ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$';
}
bool blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// The literal's body with its \n, \t and \r escapes as blanks of the same length, so positions
// in it are positions in the body.
std::string blanked(const std::string& body) {
  std::string out = body;
  for (size_t i = 0; i + 1 < out.size(); ++i)
    if (out[i] == '\\') {
      if (out[i + 1] == 'n' || out[i + 1] == 't' || out[i + 1] == 'r') out[i] = out[i + 1] = ' ';
      ++i;  // an escaped character is never the start of another escape
    }
  return out;
}

// Split at `sep`, each piece trimmed; empty pieces kept (util's split_any drops them, and an
// operand count must see them).
std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t at = 0;
  for (size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == sep) {
      out.emplace_back(trim(s.substr(at, i - at)));
      at = i + 1;
    }
  return out;
}

bool is_register(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), ptx_ident_char);
}

bool is_fraction(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == 'e' || c == 'E' ||
           c == '+' || c == '-';
  });
}

// One instruction of a literal: [begin, semi) is its text without the `;` at `semi`.
struct Instruction {
  size_t begin = 0, semi = 0;
  std::string opcode;                 // "cp.async.cg.shared.global.L2::cache_hint"
  size_t operands_at = 0;             // where the operands start
  std::vector<std::string> operands;  // trimmed, split at commas
};

std::vector<Instruction> instructions(const std::string& text) {
  std::vector<Instruction> out;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '{' || text[i] == '}') start = i + 1;
    if (text[i] != ';') continue;
    Instruction ins;
    ins.begin = start;
    while (ins.begin < i && blank(text[ins.begin])) ++ins.begin;
    ins.semi = i;
    size_t op_end = ins.begin;
    while (op_end < i && !blank(text[op_end])) ++op_end;
    ins.opcode = text.substr(ins.begin, op_end - ins.begin);
    ins.operands_at = op_end;
    ins.operands = split(std::string_view(text).substr(op_end, i - op_end), ',');
    out.push_back(std::move(ins));
    start = i + 1;
  }
  return out;
}

// `createpolicy.fractional.L2::evict_*{.L2::evict_first|unchanged}.b64 REG{, fraction}`: REG.
std::string policy_register(const Instruction& ins) {
  static const std::vector<std::string> primary = {"evict_first", "evict_last", "evict_normal",
                                                   "evict_unchanged"};
  const auto parts = split(ins.opcode, '.');
  if (parts.size() < 4 || parts.size() > 5 || parts[0] != "createpolicy" ||
      parts[1] != "fractional" || parts.back() != "b64")
    return "";
  for (size_t i = 2; i + 1 < parts.size(); ++i) {
    if (!parts[i].starts_with("L2::")) return "";
    const std::string p = parts[i].substr(4);
    const bool ok = i == 2 ? std::find(primary.begin(), primary.end(), p) != primary.end()
                           : (p == "evict_first" || p == "evict_unchanged");
    if (!ok) return "";
  }
  if (ins.operands.empty() || ins.operands.size() > 2 || !is_register(ins.operands[0])) return "";
  if (ins.operands.size() == 2 && !is_fraction(ins.operands[1])) return "";
  return ins.operands[0];
}

// A cp.async global->shared copy with `.L2::cache_hint` whose last operand is `reg`: the
// opcode without the hint; "" for anything else.
std::string unhinted_copy(const Instruction& ins, const std::string& reg) {
  auto parts = split(ins.opcode, '.');
  if (parts.size() < 5 || parts[0] != "cp" || parts[1] != "async" ||
      (parts[2] != "ca" && parts[2] != "cg") ||
      (parts[3] != "shared" && parts[3] != "shared::cta") || parts[4] != "global")
    return "";
  const auto hint = std::find(parts.begin() + 5, parts.end(), "L2::cache_hint");
  if (hint == parts.end()) return "";
  parts.erase(hint);
  for (size_t i = 5; i < parts.size(); ++i)
    if (parts[i] != "L2::64B" && parts[i] != "L2::128B" && parts[i] != "L2::256B") return "";
  // [dst], [src], size{, src-size | ignore-src}, policy
  const auto& ops = ins.operands;
  if (ops.size() < 4 || ops.size() > 5 || ops.back() != reg || !ops[0].starts_with("[") ||
      !ops[1].starts_with("["))
    return "";
  return join(parts, ".");
}

bool is_declaration(const Instruction& ins, const std::string& reg) {
  if (ins.opcode != ".reg" || ins.operands.size() != 1) return false;
  // ".reg .b64 p": the type and the name are the one operand, blank-separated
  const std::string& o = ins.operands[0];
  return o.starts_with(".b64") && trim(std::string_view(o).substr(4)) == reg;
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

struct Literal {
  size_t token;
  std::string body;  // between the quotes, escapes as written
};

// A change to one literal's body: [begin, end) becomes `text`.
struct Splice {
  size_t literal, begin, end;
  std::string text;
};

}  // namespace

void bridge_asm_cache_hint(FileWork& w, const AsmCacheHint& rule,
                           std::vector<std::string>& left_alone) {
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
    std::vector<std::string> text;             // each literal's body, escapes blanked
    std::vector<std::vector<Instruction>> in;  // its instructions
    std::vector<std::string> regs;
    for (const auto& l : lits) {
      text.push_back(blanked(l.body));
      in.push_back(instructions(text.back()));
      for (const auto& ins : in.back())
        if (auto r = policy_register(ins);
            !r.empty() && std::find(regs.begin(), regs.end(), r) == regs.end())
          regs.push_back(r);
    }
    std::string whole;
    for (const auto& t : text) whole += t + "\n";  // a literal never joins the next's words
    if (regs.empty()) {
      // a createpolicy this reading does not see whole (split over two literals): said, not touched
      if (whole.find("createpolicy") != std::string::npos)
        left_alone.push_back(fmt::format(
            "{}: {}:{}: a createpolicy instruction not read whole (split over literals?)",
            rule.info.id, w.file->path, w.tokens[lits.front().token].line));
      continue;
    }
    std::vector<Splice> splices;
    for (const auto& reg : regs) {
      size_t policies = 0, copies = 0, decls = 0;
      std::vector<Splice> mine;
      size_t from_line = w.tokens[lits.front().token].line;
      std::string from;
      for (size_t l = 0; l < lits.size(); ++l)
        for (const auto& ins : in[l]) {
          if (policy_register(ins) == reg) {
            ++policies;
            if (from.empty()) {
              from = lits[l].body.substr(ins.begin, ins.semi + 1 - ins.begin);
              from_line = w.tokens[lits[l].token].line;
            }
            size_t end = ins.semi + 1;  // the `;` and the blanks after it (not escapes)
            while (end < text[l].size() && (lits[l].body[end] == ' ' || lits[l].body[end] == '\t'))
              ++end;
            mine.push_back({l, ins.begin, end, ""});
          } else if (auto op = unhinted_copy(ins, reg); !op.empty()) {
            ++copies;
            // the operands without the last, as written
            const std::string& t = lits[l].body;
            size_t last_comma = ins.semi;
            while (last_comma > ins.operands_at && t[last_comma] != ',') --last_comma;
            size_t keep = last_comma;
            while (keep > ins.operands_at && blank(text[l][keep - 1])) --keep;
            mine.push_back(
                {l, ins.begin, ins.semi, op + t.substr(ins.operands_at, keep - ins.operands_at)});
          } else if (is_declaration(ins, reg)) {
            ++decls;
          }
        }
      const size_t line = w.tokens[lits.front().token].line;
      if (decls != 1 || copies == 0 || uses_of(whole, reg) != policies + copies + decls) {
        left_alone.push_back(
            fmt::format("{}: {}:{}: the cache-policy register {} is not only the hint of this asm "
                        "statement's cp.async copies",
                        rule.info.id, w.file->path, line, reg));
        continue;
      }
      splices.insert(splices.end(), mine.begin(), mine.end());
      w.changes.push_back({w.file->path, from_line, rule.info.id,
                           fmt::format("{} + .L2::cache_hint on {} cp.async", from, copies),
                           "the cp.async without the hint", rule.info.removed_label(), rule.note});
    }
    // One edit per literal changed: its splices applied back to front.
    std::sort(splices.begin(), splices.end(), [](const Splice& a, const Splice& b) {
      return a.literal != b.literal ? a.literal < b.literal : a.begin > b.begin;
    });
    for (const auto& s : splices) lits[s.literal].body.replace(s.begin, s.end - s.begin, s.text);
    for (size_t l = 0; l < lits.size(); ++l) {
      const Token& t = w.tokens[lits[l].token];
      const std::string now = "\"" + lits[l].body + "\"";
      if (now != w.text(t)) w.edits.push_back({t.begin, t.end, now});
    }
  }
}

}  // namespace tailor::compat::detail
