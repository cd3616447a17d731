// The first real error of a build log. Build logs are long and their last lines are
// consequences (ninja's summary, setuptools' CalledProcessError, pip's boxed report);
// the cause is the first failed step, so we read from the top.
#include <algorithm>

#include "diagnose/diagnosis.h"
#include "diagnose/log_lines.h"
#include "diagnose/log_markers.h"

namespace tailor::diagnose {

namespace {

constexpr size_t k_max_block_lines = 40;
constexpr size_t k_max_context_before = 8;
constexpr size_t k_max_exception_continuation = 3;

bool is_blank(const std::string& s) { return s.find_first_not_of(" \t") == std::string::npos; }

/// Lines just above a compiler error that tell where it comes from ("In file included
/// from", "In function", "In instantiation of").
bool is_compiler_context(const std::string& s) {
  return s.find("In file included from") != std::string::npos ||
         s.find("                 from ") == 0 || s.find(": In function") != std::string::npos ||
         s.find(": In member function") != std::string::npos ||
         s.find(": In instantiation of") != std::string::npos ||
         s.find("required from") != std::string::npos;
}

ErrorBlock make_block(const std::vector<std::string>& lines, size_t first, size_t last) {
  ErrorBlock b;
  b.first_line = first + 1;
  b.last_line = last + 1;
  b.lines.assign(lines.begin() + static_cast<std::ptrdiff_t>(first),
                 lines.begin() + static_cast<std::ptrdiff_t>(last) + 1);
  return b;
}

}  // namespace

std::optional<ErrorBlock> first_error_block(std::string_view log) {
  const auto lines = split_log_lines(log);
  const auto& markers = log_markers();
  std::vector<LineKind> kinds;
  kinds.reserve(lines.size());
  for (const auto& l : lines) kinds.push_back(classify_line(markers, l));

  auto is_start = [](LineKind k) {
    return k == LineKind::failed || k == LineKind::error || k == LineKind::python_exception;
  };
  auto start_it = std::find_if(kinds.begin(), kinds.end(), is_start);
  if (start_it == kinds.end()) {
    // Nothing but consequences: better to show the first of them than nothing.
    auto tail_it = std::find(kinds.begin(), kinds.end(), LineKind::tail);
    if (tail_it == kinds.end()) return std::nullopt;
    size_t t = static_cast<size_t>(tail_it - kinds.begin());
    return make_block(lines, t, t);
  }
  const size_t hit = static_cast<size_t>(start_it - kinds.begin());
  const LineKind kind = kinds[hit];

  size_t first = hit;
  if (kind == LineKind::python_exception) {
    // Keep the innermost frames: they say where it was raised.
    while (first > 0 && hit - (first - 1) <= k_max_context_before &&
           (kinds[first - 1] == LineKind::traceback) && !is_blank(lines[first - 1]))
      --first;
  } else if (kind == LineKind::error) {
    while (first > 0 && hit - (first - 1) <= k_max_context_before &&
           is_compiler_context(lines[first - 1]))
      --first;
  }

  size_t last = hit;
  if (kind == LineKind::python_exception) {
    // Exception messages wrap ("RuntimeError:\nThe detected CUDA version ...").
    while (last + 1 < lines.size() && last - hit < k_max_exception_continuation &&
           kinds[last + 1] == LineKind::plain && !is_blank(lines[last + 1]))
      ++last;
  } else {
    size_t blanks = 0;
    for (size_t i = hit + 1; i < lines.size() && i - first < k_max_block_lines; ++i) {
      LineKind k = kinds[i];
      if (k == LineKind::progress || k == LineKind::failed || k == LineKind::stop ||
          k == LineKind::tail)
        break;
      if (is_blank(lines[i])) {
        if (++blanks == 2) break;
        continue;
      }
      blanks = 0;
      last = i;
    }
  }
  return make_block(lines, first, last);
}

}  // namespace tailor::diagnose
