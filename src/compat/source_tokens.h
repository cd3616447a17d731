// A small C/C++/CUDA tokenizer for rewriting known API removals exactly: identifiers,
// numbers, punctuators, literals, with their byte ranges and lines. Comments are skipped,
// string and character literals (raw strings too) are single tokens, so a rewrite never
// touches text inside them; a backslash-newline is whitespace. After `#include` the
// header name (<x/y.h> or "x.h") is one token. It never fails: bytes it does not know
// become one-byte punctuators.
#pragma once
#include <cstddef>
#include <string_view>
#include <vector>

namespace tailor::compat {

enum class TokenKind { identifier, number, punctuator, literal, header_name };

struct Token {
  TokenKind kind = TokenKind::punctuator;
  size_t begin = 0, end = 0;  ///< byte range in the text
  size_t line = 1;            ///< 1-based line of its first byte
  bool line_start = false;    ///< the first token of its line (a `#` there is a directive)
};

/// The tokens of `text`, in order.
std::vector<Token> tokenize(std::string_view text);

/// The text of a token.
inline std::string_view token_text(std::string_view text, const Token& t) {
  return text.substr(t.begin, t.end - t.begin);
}

}  // namespace tailor::compat
