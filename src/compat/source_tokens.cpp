#include "compat/source_tokens.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

namespace tailor::compat {
namespace {

bool ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '$' ||
         static_cast<unsigned char>(c) >= 0x80;
}
bool ident_char(char c) { return ident_start(c) || std::isdigit(static_cast<unsigned char>(c)); }

// The longest punctuators first; anything else is one byte.
constexpr std::array<std::string_view, 24> k_punctuators = {
    "<<=", ">>=", "...", "->*", "::", "->", "++", "--", "<<", ">>", "<=", ">=",
    "==",  "!=",  "&&",  "||",  "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^="};

class Lexer {
 public:
  explicit Lexer(std::string_view text) : m_text(text) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    bool line_start = true, after_include = false;
    while (skip_space(line_start), m_at < m_text.size()) {
      Token t;
      t.begin = m_at;
      t.line = m_line;
      t.line_start = line_start;
      line_start = false;
      const char c = m_text[m_at];
      if (after_include && (c == '<' || c == '"')) {
        t.kind = TokenKind::header_name;
        const char close = c == '<' ? '>' : '"';
        while (++m_at < m_text.size() && m_text[m_at] != close && m_text[m_at] != '\n') {
        }
        if (m_at < m_text.size() && m_text[m_at] == close) ++m_at;
      } else if (raw_string_prefix()) {
        t.kind = TokenKind::literal;
        raw_string();
      } else if (ident_start(c)) {
        t.kind = TokenKind::identifier;
        while (m_at < m_text.size() && ident_char(m_text[m_at])) ++m_at;
        // A prefixed literal: u8"...", L'x'.
        if (m_at < m_text.size() && (m_text[m_at] == '"' || m_text[m_at] == '\'') &&
            is_literal_prefix(m_text.substr(t.begin, m_at - t.begin))) {
          t.kind = TokenKind::literal;
          quoted(m_text[m_at]);
        }
      } else if (std::isdigit(static_cast<unsigned char>(c)) ||
                 (c == '.' && m_at + 1 < m_text.size() &&
                  std::isdigit(static_cast<unsigned char>(m_text[m_at + 1])))) {
        t.kind = TokenKind::number;
        number();
      } else if (c == '"' || c == '\'') {
        t.kind = TokenKind::literal;
        quoted(c);
      } else {
        t.kind = TokenKind::punctuator;
        m_at += punctuator_size();
      }
      t.end = m_at;
      const std::string_view text = token_text(m_text, t);
      after_include = t.kind == TokenKind::identifier && !out.empty() &&
                      token_text(m_text, out.back()) == "#" && out.back().line_start &&
                      (text == "include" || text == "include_next" || text == "import");
      out.push_back(t);
    }
    return out;
  }

 private:
  // Whitespace, comments and backslash-newlines; `line_start` turns true at a newline.
  void skip_space(bool& line_start) {
    while (m_at < m_text.size()) {
      const char c = m_text[m_at];
      if (c == '\n') {
        ++m_line;
        ++m_at;
        line_start = true;
      } else if (c == '\\' && next_is_newline(m_at + 1)) {
        ++m_at;
        if (m_text[m_at] == '\r') ++m_at;
        ++m_line;
        ++m_at;
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        ++m_at;
      } else if (c == '/' && m_at + 1 < m_text.size() && m_text[m_at + 1] == '/') {
        // A line comment ends at a newline not escaped by a backslash.
        while (m_at < m_text.size() && m_text[m_at] != '\n') {
          if (m_text[m_at] == '\\' && next_is_newline(m_at + 1)) {
            m_at += m_text[m_at + 1] == '\r' ? 2 : 1;
            ++m_line;
          }
          ++m_at;
        }
      } else if (c == '/' && m_at + 1 < m_text.size() && m_text[m_at + 1] == '*') {
        m_at += 2;
        while (m_at < m_text.size() &&
               !(m_text[m_at] == '*' && m_at + 1 < m_text.size() && m_text[m_at + 1] == '/')) {
          if (m_text[m_at] == '\n') ++m_line;
          ++m_at;
        }
        m_at = std::min(m_at + 2, m_text.size());
      } else {
        return;
      }
    }
  }

  bool next_is_newline(size_t at) const {
    return (at < m_text.size() && m_text[at] == '\n') ||
           (at + 1 < m_text.size() && m_text[at] == '\r' && m_text[at + 1] == '\n');
  }

  static bool is_literal_prefix(std::string_view p) {
    return p == "u8" || p == "u" || p == "U" || p == "L";
  }

  // R"delim( ... )delim", with an optional u8/u/U/L prefix.
  bool raw_string_prefix() const {
    for (std::string_view p : {"R\"", "u8R\"", "uR\"", "UR\"", "LR\""})
      if (m_text.substr(m_at, p.size()) == p) return true;
    return false;
  }
  void raw_string() {
    m_at = m_text.find('"', m_at) + 1;
    const size_t open = m_text.find('(', m_at);
    if (open == std::string_view::npos || open - m_at > 16) {  // not a raw string after all
      return;
    }
    const std::string close = ")" + std::string(m_text.substr(m_at, open - m_at)) + "\"";
    const size_t end = m_text.find(close, open);
    const size_t stop = end == std::string_view::npos ? m_text.size() : end + close.size();
    for (size_t i = m_at; i < stop; ++i)
      if (m_text[i] == '\n') ++m_line;
    m_at = stop;
  }

  // "..." or '...' with escapes; an unterminated one ends at the line's end.
  void quoted(char q) {
    ++m_at;
    while (m_at < m_text.size() && m_text[m_at] != q && m_text[m_at] != '\n') {
      if (m_text[m_at] == '\\' && m_at + 1 < m_text.size()) {
        if (m_text[m_at + 1] == '\n') ++m_line;
        ++m_at;
      }
      ++m_at;
    }
    if (m_at < m_text.size() && m_text[m_at] == q) ++m_at;
  }

  // A pp-number: digits, letters, '.', digit separators and signed exponents.
  void number() {
    while (m_at < m_text.size()) {
      const char c = m_text[m_at];
      if ((c == '+' || c == '-') && m_at > 0 &&
          std::string_view("eEpP").find(m_text[m_at - 1]) != std::string_view::npos) {
        ++m_at;
      } else if (c == '\'' && m_at + 1 < m_text.size() && ident_char(m_text[m_at + 1])) {
        m_at += 2;
      } else if (ident_char(c) || c == '.') {
        ++m_at;
      } else {
        return;
      }
    }
  }

  size_t punctuator_size() const {
    for (std::string_view p : k_punctuators)
      if (m_text.substr(m_at, p.size()) == p) return p.size();
    return 1;
  }

  std::string_view m_text;
  size_t m_at = 0;
  size_t m_line = 1;
};

}  // namespace

std::vector<Token> tokenize(std::string_view text) { return Lexer(text).run(); }

}  // namespace tailor::compat
