// The one way a build's steps run, for torch and extension builds alike: in order, each a
// function of the build's options, context and state that returns a stop to end the run
// there, and nothing starting after a signal. What a stop means (an exit code, a build
// status) stays the caller's.
#pragma once

#include <optional>
#include <string>

#include "util/interrupt.h"

namespace tailor::builder {

/// How a build ended, for torch and extension builds alike; the CLI turns it into an exit
/// code (0 for ok and printed_env, 2 for bad_input, 1 for the rest).
enum class BuildStatus {
  ok,
  printed_env,       ///< --print-env, --configure-only: stopped early on purpose, nothing failed
  bad_input,         ///< exit 2
  preflight_failed,  ///< exit 1, problems in the preflight report
  build_failed,      ///< exit 1, diagnosis from the log
  verify_failed,     ///< exit 1, wheel targets differ from the request
  check_failed,      ///< exit 1, import or tests failed
};

/// The exit code of a status: 0, 1 or 2.
inline int exit_code_of(BuildStatus status) {
  switch (status) {
    case BuildStatus::ok:
    case BuildStatus::printed_env:
      return 0;
    case BuildStatus::bad_input:
      return 2;
    default:
      return 1;
  }
}

/// How a step ends the run: its status and one line.
struct StepStop {
  BuildStatus status = BuildStatus::build_failed;
  std::string message;
  bool operator==(const StepStop&) const = default;
};
using StepResult = std::optional<StepStop>;

/// Runs `run(step)` for each of `steps` in order and `done(step)` after each that ran.
/// Returns the first stop a step returns, `interrupted` when a signal came before the
/// first step or while one ran (the step's own stop, if any, comes first: the caller
/// tells a step that a signal cut short by `interrupt_signal()`), or nullopt when every
/// step ran.
template <class Steps, class Run, class Done, class Stop>
std::optional<Stop> run_step_list(const Steps& steps, Run&& run, Done&& done,
                                  const Stop& interrupted) {
  if (interrupt_signal() != 0) return interrupted;
  for (const auto& step : steps) {
    std::optional<Stop> stop = run(step);
    done(step);
    if (stop) return stop;
    if (interrupt_signal() != 0) return interrupted;
  }
  return std::nullopt;
}

}  // namespace tailor::builder
