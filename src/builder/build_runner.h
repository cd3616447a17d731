// Runs the steps of a build (extension or torch): each step a process with its own
// environment, its output appended to one log file and read once, as it comes (ninja's
// Status): Ninja's `[n/N]` lines parsed there and nowhere else, the build driver's typed
// events (builder/driver_events.h) read from the descriptor each step is handed, progress
// shown as a live line on a terminal or as plain lines otherwise, and what the run said kept
// as `BuildFacts`, which its readers take instead of the log. Processes go through
// CommandRunner so the runner is tested with fakes.
#pragma once
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "builder/build_progress.h"
#include "builder/driver_events.h"
#include "builder/progress_display.h"
#include "plan/build_plan.h"
#include "plan/step.h"
#include "util/disk_interface.h"
#include "util/expected.h"
#include "util/process.h"

namespace tailor::builder {

struct StepOutcome {
  std::string title;
  bool started = false;
  bool timed_out = false;
  bool interrupted = false;  ///< tailor got SIGINT/SIGTERM/SIGHUP during the step
  int exit_code = -1;
  std::chrono::milliseconds duration{0};
  bool ok() const { return started && !timed_out && !interrupted && exit_code == 0; }
};

/// Ninja's steps over a run, from its `[n/N]` status as it comes: the largest N of each
/// invocation (a new one starts again at a lower n), summed (resume's count).
class NinjaStepCount {
 public:
  void add(const NinjaStatus& s);
  /// Unset when no status line came.
  std::optional<uint64_t> steps() const;

 private:
  bool m_any = false;
  uint64_t m_sum = 0, m_current_max = 0, m_last_n = 0;
};

/// The last lines written to the run's log from the start of the last step that ran (its
/// header, output and end line), at most 8 MiB and 100,000 lines: a failed step is
/// diagnosed from them, never from the log read back. When the step wrote more, its first
/// lines (at most 1 MiB and 5,000) are kept as `head`: a compiler's first error can come
/// before megabytes of others (g++ under -std=c++14 against torch 2's headers).
struct LogTail {
  std::vector<std::string> lines;
  size_t first_line = 1;          ///< the log's line number of lines[0]
  std::vector<std::string> head;  ///< empty unless `lines` no longer reach the step's start
  size_t head_first_line = 1;     ///< the log's line number of head[0]
  std::string text() const;
  std::string head_text() const;
};

/// What a run's output said, each line read once as it came: progress, resume, the report
/// and the workflow read these, never the log.
struct BuildFacts {
  std::optional<uint64_t> ninja_steps;  ///< NinjaStepCount's over the run
  DriverFacts driver;                   ///< the build driver's events
  LogTail tail;
};

struct RunOutcome {
  std::vector<StepOutcome> steps;  ///< the steps that ran; the last one failed if !ok
  BuildFacts facts;
  std::chrono::milliseconds duration{0};
  std::string log_path;
  bool interrupted = false;  ///< stopped by an interrupt (see util/interrupt.h)
  bool ok() const;
};

class BuildRunner {
 public:
  /// `log_path` is created (truncated); every line of every step is appended to it.
  BuildRunner(
      CommandRunner& runner, ProgressDisplay& display, DiskInterface& disk, std::string log_path,
      ProgressTracker::Clock clock = [] { return std::chrono::steady_clock::now(); });
  /// Runs the steps in order, stopping at the first failure. An error only when the log
  /// cannot be written; a failed step is a RunOutcome with !ok(). Each step is handed a
  /// descriptor for the build driver's events in TAILOR_EVENTS_FD (a memory file of at most
  /// 4 MiB for the run).
  Expected<RunOutcome> run(const std::vector<plan::Step>& steps);

 private:
  CommandRunner& m_runner;
  ProgressDisplay& m_display;
  DiskInterface& m_disk;
  std::string m_log_path;
  ProgressTracker::Clock m_clock;
};

/// The log's bounds: the steps' output goes in whole while the run's log holds less than
/// k_log_head_bytes of it; past that, a step keeps its last k_log_tail_bytes, after one line
/// saying how much was cut (`### tailor: ... cut here`). What a step wrote is held in memory
/// only up to that tail.
inline constexpr uint64_t k_log_head_bytes = uint64_t{64} << 20;
inline constexpr size_t k_log_tail_bytes = size_t{4} << 20;

/// Each run gets its own log, `DIR/build-<UTC time>-<pid>.log`, and `DIR/build.log`
/// becomes a symbolic link to it (replaced atomically), so two runs never write into or
/// point at each other's log. Per-run logs beyond the newest `keep` are removed. Returns
/// the new log's path; the caller holds DIR's lock (workpath/folder_lock.h).
Expected<std::string> start_run_log(DiskInterface& disk, const std::string& dir, size_t keep = 10);

/// Any plan's steps made ready to run, the one way every build turns a plan into processes:
/// a step with `uses_plan_env` gets `build_env` (the plan's variables and what the run
/// adds to them: SOURCE_DATE_EPOCH, the reproducible-build flags), the plan's `unset_env`,
/// and PATH with the plan's toolkit folder first (after `caller_env`'s PATH); other steps
/// (a clone, a venv) run in the caller's environment. An empty cwd becomes `default_cwd`.
std::vector<plan::Step> plan_steps(const plan::BuildPlan& plan,
                                   const std::map<std::string, std::string>& build_env,
                                   const std::map<std::string, std::string>& caller_env,
                                   const std::string& default_cwd = "");

/// The variable naming the build driver's events descriptor (driver/tailor_driver/say.py).
inline constexpr const char* k_events_fd_variable = "TAILOR_EVENTS_FD";

/// `plan::Step` as a shell line for --print-env style output and for the log header:
/// `cd DIR && VAR=value ... argv...`.
std::string render_step_shell(const plan::Step& step);

}  // namespace tailor::builder
