// What fails a `tailor inspect` run (exit 1) and what only warns, each with one line of
// reason for stderr (README.md, "What fails a run"):
//  - fail: a verdict (--gpu, --require, --exact) that fails, or one that cannot be judged
//    (no library has device code); a wheel's RECORD check (missing, a hash or size that
//    differs, a member unlisted or missing); a wheel's manylinux tag that its CUDA or CPU
//    libraries do not fit (a symbol version newer than the tag allows, a library needed from
//    the system, a foreign machine).
//  - warn (exit 0, one stderr line each): a manylinux tag wrong only for the libraries of
//    another GPU platform (ROCm, oneAPI: loaded only on such GPUs;
//    WheelReport::claim_ok_without_other_gpu); WHEEL tags that differ from the file name's;
//    files under a folder that could not be read.
// The report's WARNING lines (search path, C++ runtime) never change the exit code.
// Unreadable or malformed input is no finding: it is an error (exit 2) before any of this.
#pragma once
#include <string>
#include <vector>

#include "inspect/inspect_report.h"
#include "inspect/verdicts.h"

namespace tailor::inspect {

struct InspectOutcome {
  std::vector<std::string> failures;  // one line each, naming the line of the report to read
  std::vector<std::string> warnings;
  bool failed() const { return !failures.empty(); }
  /// The failures as one line: the first three, "; "-joined, then "(and N more)".
  std::string failure_line() const;
};

/// Judges a report and its verdicts (nullptr when no verdict was asked for).
InspectOutcome judge(const InspectReport& report, const Verdicts* verdicts);

}  // namespace tailor::inspect
