#include "util/version.h"

#include <algorithm>
#include <charconv>
#include <limits>

namespace tailor {
namespace {

std::string_view without_local(std::string_view text) { return text.substr(0, text.find('+')); }

/// The number at the start of `piece` (0 when it has no leading digits).
int leading_number(std::string_view piece) {
  int v = 0;
  std::from_chars(piece.data(), piece.data() + piece.size(), v);
  return v;
}

std::vector<std::string_view> dotted(std::string_view text) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t dot = text.find('.', start);
    out.push_back(
        text.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return out;
}

}  // namespace

std::string Version::major_minor() const {
  return std::to_string(major()) + "." + std::to_string(minor());
}

Expected<Version> parse_version(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return make_error("'" + std::string(text) + "' is not a version (" + std::string(why) + ")");
  };
  if (text.empty()) return bad("empty");
  Version v;
  size_t plus = text.find('+');
  if (plus != std::string_view::npos) {
    v.local = std::string(text.substr(plus + 1));
    if (v.local.empty()) return bad("nothing after '+'");
  }
  for (std::string_view piece : dotted(without_local(text))) {
    if (piece.empty()) return bad("an empty part");
    int n = 0;
    auto [end, ec] = std::from_chars(piece.data(), piece.data() + piece.size(), n);
    if (ec != std::errc() || end != piece.data() + piece.size() || n < 0)
      return bad("'" + std::string(piece) + "' is not a number");
    v.parts.push_back(n);
  }
  return v;
}

int compare_versions(std::string_view a, std::string_view b) {
  auto as = dotted(without_local(a));
  auto bs = dotted(without_local(b));
  for (size_t i = 0; i < std::max(as.size(), bs.size()); ++i) {
    int x = i < as.size() ? leading_number(as[i]) : 0;
    int y = i < bs.size() ? leading_number(bs[i]) : 0;
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

std::optional<int> version_major(std::string_view text) {
  int v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end == text.data()) return std::nullopt;
  return v;
}

std::string_view tailor_version() { return TAILOR_VERSION; }

}  // namespace tailor
