#pragma once
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tailor {

std::string to_lower(std::string_view s);
std::string_view trim(std::string_view s);
bool starts_with_icase(std::string_view s, std::string_view prefix);
/// Split on any of the separator characters, dropping empty pieces.
std::vector<std::string> split_any(std::string_view s, std::string_view separators);
std::string join(const std::vector<std::string>& parts, std::string_view sep);
/// Levenshtein distance, for "did you mean" suggestions.
size_t edit_distance(std::string_view a, std::string_view b);
/// Human-readable byte count: 1.5 KiB, 297.0 MiB.
std::string human_bytes(uint64_t bytes);
/// A decimal integer that is the whole of `s` once trimmed ("  42\n" is 42; "42 kB", "",
/// "-" and out-of-range values are none): for the kernel's one-number files.
template <class T>
std::optional<T> parse_whole_number(std::string_view s) {
  s = trim(s);
  T v{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}
/// A number in hex as tools print offsets and flags: "0x1f".
std::string hex_number(uint64_t v);
/// Bytes as lowercase hex, two digits each (digests, signatures): "00ff".
std::string hex_bytes(std::string_view bytes);
/// Quote for a POSIX shell when needed.
std::string shell_quote(std::string_view s);

/// The current time in UTC as ISO 8601: "2026-11-26T19:22:55Z".
std::string utc_now_iso8601();

}  // namespace tailor
