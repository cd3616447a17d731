// Reading a failed build log: where the first real error is, and which known failure
// it is. Pure functions over text; the build runner and `tailor explain` both call them.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "diagnose/failure_pattern.h"

namespace tailor::diagnose {

/// A run of log lines around the first real error. Line numbers are 1-based.
struct ErrorBlock {
  size_t first_line = 0;
  size_t last_line = 0;
  std::vector<std::string> lines;
};

/// The first real error: a `FAILED:` block, a compiler `error:`, an nvcc `fatal`, a
/// Python exception; not "ninja: build stopped", warnings, or a traceback's tail.
std::optional<ErrorBlock> first_error_block(std::string_view log);

struct Diagnosis {
  std::string pattern_id;
  std::string quoted_line;  ///< the matching log line, trimmed
  size_t line_number = 0;   ///< 1-based
  std::string cause;
  std::string fix;    ///< with the concrete values captured from the log
  int priority = 50;  ///< the pattern's; 90 and above are generic ("build stopped")
  /// A generic diagnosis only points at the real error; it explains nothing.
  bool generic() const { return priority >= 90; }
};

/// Every known failure in the log, most specific first, one per pattern (the earliest
/// line that shows it).
std::vector<Diagnosis> diagnose_log(std::string_view log);

/// Where tailor's runner wrote that the build was interrupted (builder/build_runner:
/// "### tailor step N INTERRUPTED (signal S) after T s", "### tailor: interrupted by signal
/// S; the run stopped here"): the build did not fail, it was stopped.
struct Interruption {
  size_t line_number = 0;  ///< 1-based, the first such line
  int signal = 0;          ///< 2 SIGINT, 15 SIGTERM, 1 SIGHUP; 0 when the line names none
  std::string quoted_line;
};
std::optional<Interruption> find_interruption(std::string_view log);

/// "SIGINT (Ctrl-C)", "SIGTERM", "SIGHUP", "signal 9".
std::string signal_label(int signal);

struct DiagnoseOptions {
  /// The user's source folder the logged build compiled a copy of: a compiler's path is
  /// mapped back into it (source_paths.h). Empty: the path inside the package is said.
  std::string source_dir;
  /// The kind of step that failed ("build", "clone": FailurePattern::steps); empty when
  /// unknown (`tailor explain` of a log), which tries every row.
  std::string step;
  /// The log's line number of the text's first line (a failed step's last lines handed
  /// over alone): every line number said, {block_line} too, is the log's.
  size_t first_line = 1;
};
std::vector<Diagnosis> diagnose_log(std::string_view log, const DiagnoseOptions& options);

/// The same over a caller-given table (tests, and future user-supplied tables).
std::vector<Diagnosis> diagnose_log(std::string_view log,
                                    const std::vector<FailurePattern>& patterns);
std::vector<Diagnosis> diagnose_log(std::string_view log,
                                    const std::vector<FailurePattern>& patterns,
                                    const DiagnoseOptions& options);

}  // namespace tailor::diagnose
