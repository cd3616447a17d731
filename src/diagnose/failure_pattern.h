// The failure-pattern table: what a broken build or run looks like in a log, why it
// happens and what to change. The rows are data (data/diagnose/failures.toml); this is
// its one loader.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "util/expected.h"

namespace tailor::diagnose {

struct FailurePattern {
  std::string id;  ///< stable name, e.g. "oom-killed"
  /// A literal that must occur in the line before the regex runs (build logs carry
  /// command lines of several KB; the regex runs only where the needle is).
  std::string needle;
  /// ECMAScript regex; it may run on into the next line (wrapped messages) but must start
  /// on the line holding the needle. Groups feed cause and fix.
  std::string symptom;
  std::string cause;
  /// Template: {1}, {2} ... are the symptom's groups ({2|text}: text when group 2 did
  /// not take part); {block_line} is the first line of the first real error block.
  std::string fix;
  /// Lower runs first when several patterns match one line (specific before generic).
  int priority = 50;
  /// The failed steps it explains: "build" (the package's own steps: its build, venv and
  /// requirements) and/or "clone" (tailor's own clone of the source). A diagnosis that
  /// knows which step failed (DiagnoseOptions::step) uses only the rows for it, so a clone
  /// that cannot reach its remote is never "the package's choice".
  std::vector<std::string> steps = {"build"};
  /// Real log lines as they appear in real logs; each must match this pattern first.
  std::vector<std::string> examples;
};

/// The built-in table, loaded once; a broken data file is a programming error and throws
/// data::DataError naming the file and key (tests load it too).
const std::vector<FailurePattern>& failure_patterns();

/// Parses a failure table (the format of data/diagnose/failures.toml). Every row needs
/// id, symptom (a valid regex), cause and fix; errors name the row and field.
Expected<std::vector<FailurePattern>> parse_failure_patterns(std::string_view toml_text,
                                                             std::string_view source_name);

}  // namespace tailor::diagnose
