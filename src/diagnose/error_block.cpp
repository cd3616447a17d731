// The first real error of a build log. Build logs are long and their last lines are
// consequences (ninja's summary, setuptools' CalledProcessError, pip's boxed report);
// the cause is the first failed step, so we read from the top.
#include <algorithm>
#include <optional>

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
  // Classify lazily: the search looks only at lines holding a needle; the block's
  // neighbourhood is classified fully when it is known.
  std::vector<std::optional<LineKind>> cache(lines.size());
  auto kind_of = [&](size_t i) {
    if (!cache[i]) cache[i] = classify_line(markers, lines[i]);
    return *cache[i];
  };
  auto is_start = [](LineKind k) {
    return k == LineKind::failed || k == LineKind::error || k == LineKind::python_exception;
  };
  size_t hit = lines.size();
  size_t first_tail = lines.size();
  size_t first_failed = lines.size();
  // Scan on past the first error to a ninja FAILED: step (the real failure when there is
  // one: an error-like line before it did not stop the build).
  for (size_t i = 0; i < lines.size() && first_failed == lines.size(); ++i) {
    if (!may_be_error_or_tail(markers, lines[i])) continue;
    LineKind k = kind_of(i);
    if (k == LineKind::failed) first_failed = i;
    if (is_start(k) && hit == lines.size())
      hit = i;
    else if (k == LineKind::tail && first_tail == lines.size())
      first_tail = i;
  }
  if (first_failed != lines.size()) hit = first_failed;
  if (hit == lines.size()) {
    // Nothing but consequences: better to show the first of them than nothing.
    if (first_tail == lines.size()) return std::nullopt;
    return make_block(lines, first_tail, first_tail);
  }
  const LineKind kind = kind_of(hit);

  size_t first = hit;
  if (kind == LineKind::python_exception) {
    // Keep the innermost frames: they say where it was raised.
    while (first > 0 && hit - (first - 1) <= k_max_context_before &&
           kind_of(first - 1) == LineKind::traceback && !is_blank(lines[first - 1]))
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
           kind_of(last + 1) == LineKind::plain && !is_blank(lines[last + 1]))
      ++last;
  } else {
    size_t blanks = 0;
    for (size_t i = hit + 1; i < lines.size() && i - first < k_max_block_lines; ++i) {
      LineKind k = kind_of(i);
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
