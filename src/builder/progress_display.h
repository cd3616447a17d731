// The one progress display of tailor's long commands: a build's steps (the runner reports
// each step, its progress and its end) and a command of phases (`tailor stack`: a phase, what
// is under way, a warning). live: a status line redrawn in place on a terminal, by a ticker
// thread of its own; plain: lines for logs and CI; quiet: nothing but warnings. Whether the
// terminal redraws is util's is_smart_terminal, the one terminal test.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "builder/build_progress.h"

namespace tailor::plan {
struct Step;
}

namespace tailor::builder {

struct StepOutcome;

/// Where progress goes: the runner (or a command of phases) reports, a display renders.
class ProgressDisplay {
 public:
  virtual ~ProgressDisplay() = default;
  virtual void step_started(const plan::Step& step, size_t index, size_t count) = 0;
  virtual void progress(const BuildProgress& p) = 0;
  virtual void step_finished(const StepOutcome& outcome) = 0;
  /// About once a second while a step or a phase runs (the display's own thread, or a
  /// test): shows the "still running" heartbeat when the build has been quiet for an
  /// interval; redraws a phase's status line.
  virtual void tick() {}

  /// A command of phases: each phase as its own line, `SPEAKER: LINE` (live and plain).
  virtual void phase(std::string_view) {}
  /// What is under way in the phase: on the status line (live, with a spinner and the
  /// phase's seconds) or as a line `SPEAKER: LINE` (plain).
  virtual void detail(std::string_view) {}
  /// `SPEAKER: warning: LINE`, in every style (quiet too).
  virtual void warn(std::string_view) {}
  /// Clears the status line and stops redrawing it (before a result is printed).
  virtual void stop() {}
};

/// The displays' heartbeat: its interval (0: TAILOR_HEARTBEAT_SECONDS, else 30 s), its
/// clock (empty: steady_clock) and whether the display ticks on its own thread (tests
/// call tick() themselves with a fake clock).
struct HeartbeatOptions {
  std::chrono::seconds interval{0};
  ProgressTracker::Clock clock;
  bool own_thread = true;
};

enum class DisplayStyle { live, plain, quiet };
/// live: one line rewritten in place with `\r` (terminals); plain: a line per step and
/// per 10% of progress (CI logs); quiet: nothing but warnings. `speaker` starts the lines
/// of a command of phases ("tailor stack").
std::unique_ptr<ProgressDisplay> make_progress_display(DisplayStyle style, std::FILE* out,
                                                       HeartbeatOptions heartbeat = {},
                                                       std::string speaker = "tailor");
/// live when `out` is a terminal and TERM is not "dumb" (util's is_smart_terminal), else plain.
DisplayStyle default_display_style(std::FILE* out);

/// A status line fitted to `width` columns: unchanged when it fits, else cut at a character
/// boundary (never inside a UTF-8 sequence) with "..." at the end.
std::string fit_status_line(std::string line, size_t width);

}  // namespace tailor::builder
