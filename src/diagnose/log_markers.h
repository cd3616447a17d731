// The shape of a build log (progress lines, ninja's FAILED header, compiler errors,
// Python exceptions, the tail of consequences that follow an error), as regexes loaded
// from data/diagnose/log_markers.toml; this is its one loader.
#pragma once
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "util/expected.h"

namespace tailor::diagnose {

enum class LineKind {
  plain,
  stop,      ///< "ninja: build stopped"
  tail,      ///< a consequence printed after the real error
  progress,  ///< "[12/80] ..." or "[ 45%] ..."
  failed,    ///< ninja's "FAILED: target"
  warning,
  error,             ///< compiler / nvcc / linker / CMake error
  python_exception,  ///< "IndexError: ..." ending a traceback
  traceback,         ///< a traceback frame above the exception
};

struct LogMarkers {
  /// A line holding none of these can only be plain, progress, warning or traceback.
  std::vector<std::string> needles;
  std::vector<std::regex> benign, stop, tail, progress, failed, warning, error, python_exception,
      traceback;
};

Expected<LogMarkers> parse_log_markers(std::string_view toml_text, std::string_view source_name);

/// The built-in markers; a broken data file throws data::DataError naming the key (tests load it).
const LogMarkers& log_markers();

LineKind classify_line(const LogMarkers& markers, const std::string& line);

/// True when the line holds one of the needles: only then can it start or end a block.
bool may_be_error_or_tail(const LogMarkers& markers, const std::string& line);

}  // namespace tailor::diagnose
