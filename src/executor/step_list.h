// The one way a build's steps run, for torch and extension builds alike: in order, each a
// function of the build's options, context and state that returns a stop to end the run
// there, and nothing starting after a signal. What a stop means (an exit code, a build
// status) stays the caller's.
#pragma once

#include <optional>

#include "util/interrupt.h"

namespace tailor::executor {

/// Runs `run(step)` for each of `steps` in order and `done(step)` after each that ran.
/// Returns the first stop a step returns, `interrupted` when a signal came before the
/// first step or while one ran (the step's own stop, if any, comes first: the caller
/// tells a step that a signal cut short by `interrupt_signal()`), or nullopt when every
/// step ran.
template <class Steps, class Run, class Done, class Stop>
std::optional<Stop> run_step_list(const Steps& steps, Run&& run, Done&& done, const Stop& interrupted) {
  if (interrupt_signal() != 0) return interrupted;
  for (const auto& step : steps) {
    std::optional<Stop> stop = run(step);
    done(step);
    if (stop) return stop;
    if (interrupt_signal() != 0) return interrupted;
  }
  return std::nullopt;
}

}  // namespace tailor::executor
