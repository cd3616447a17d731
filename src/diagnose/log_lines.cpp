#include "diagnose/log_lines.h"

namespace tailor::diagnose {

namespace {

/// Drops CSI sequences (ESC '[' ... final byte) and other two-byte escapes.
std::string strip_escapes(std::string_view line) {
  std::string out;
  out.reserve(line.size());
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (c != '\x1b') {
      out.push_back(c);
      continue;
    }
    if (i + 1 < line.size() && line[i + 1] == '[') {
      i += 2;
      while (i < line.size() && !(line[i] >= '@' && line[i] <= '~')) ++i;
    } else {
      ++i;  // ESC + one byte
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> split_log_lines(std::string_view log) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < log.size()) {
    size_t end = log.find('\n', start);
    if (end == std::string_view::npos) end = log.size();
    std::string_view line = log.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    // A progress bar redraws with bare '\r'; only the last redraw is what a terminal shows.
    if (auto cr = line.rfind('\r'); cr != std::string_view::npos) line.remove_prefix(cr + 1);
    lines.push_back(strip_escapes(line));
    start = end + 1;
  }
  return lines;
}

}  // namespace tailor::diagnose
