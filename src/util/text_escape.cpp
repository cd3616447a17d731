#include "util/text_escape.h"

#include <cstdint>

namespace tailor {

namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 when s[i] does not start one.
size_t utf8_sequence(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t c = b(i);
  if (c < 0x80) return 1;
  size_t n;
  uint32_t cp;
  if (c >= 0xc2 && c <= 0xdf)
    n = 2, cp = c & 0x1f;
  else if (c >= 0xe0 && c <= 0xef)
    n = 3, cp = c & 0x0f;
  else if (c >= 0xf0 && c <= 0xf4)
    n = 4, cp = c & 0x07;
  else
    return 0;  // continuation byte, overlong lead (c0, c1) or past U+10FFFF (f5..ff)
  if (s.size() - i < n) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3f);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff)
    return 0;                                  // overlong / too large
  if (cp >= 0xd800 && cp <= 0xdfff) return 0;  // surrogates
  return n;
}

void append_hex(std::string& out, uint8_t c) {
  static constexpr char k_hex[] = "0123456789abcdef";
  out += "\\x";
  out += k_hex[c >> 4];
  out += k_hex[c & 15];
}

enum class Controls { keep, escape };

std::string escape(std::string_view s, Controls controls) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8_sequence(s, i);
    if (n == 0) {
      append_hex(out, static_cast<uint8_t>(s[i]));
      ++i;
      continue;
    }
    if (controls == Controls::escape) {
      const auto c = static_cast<uint8_t>(s[i]);
      const bool c0 = n == 1 && ((c < 0x20 && c != '\t') || c == 0x7f);
      const bool c1 = n == 2 && c == 0xc2 && static_cast<uint8_t>(s[i + 1]) < 0xa0;
      if (c0 || c1) {
        for (size_t k = 0; k < n; ++k) append_hex(out, static_cast<uint8_t>(s[i + k]));
        i += n;
        continue;
      }
    }
    out.append(s.substr(i, n));
    i += n;
  }
  return out;
}

}  // namespace

bool is_valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    if (static_cast<uint8_t>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    size_t n = utf8_sequence(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string escape_invalid_utf8(std::string_view s) { return escape(s, Controls::keep); }

std::string terminal_safe(std::string_view s) { return escape(s, Controls::escape); }

}  // namespace tailor
