// Progress of a running build, read from its output lines: Ninja's `[n/N] command`,
// CMake's `[ 42%] Building ...`, and the file being compiled. Pure functions plus a small
// tracker with an injected clock, so parsing and ETA are tested without processes.
#pragma once
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace tailor::build {

/// One `[n/N]` status line of Ninja (also what setuptools' ninja backend prints).
struct NinjaStatus {
  int done = 0;
  int total = 0;
  std::string command;  ///< the rest of the line after `[n/N] `
};
std::optional<NinjaStatus> parse_ninja_status(std::string_view line);

/// CMake's Makefile/Ninja percentage prefix `[ 42%]`; the percent, 0..100.
std::optional<int> parse_cmake_percent(std::string_view line);

/// The source file a compile command works on (`-c x.cu`, the last *.cu/*.cpp/*.c
/// argument, or CMake's "Building CUDA object foo.cu.o"), file name only; empty if none.
std::string current_file_from_command(std::string_view command);

/// Remaining time by linear extrapolation of elapsed time over the finished fraction;
/// nothing until at least one unit is done (a first guess would be noise).
std::optional<std::chrono::seconds> estimate_eta(double fraction_done, std::chrono::seconds elapsed);

/// What the tracker knows after the lines seen so far.
struct BuildProgress {
  int done = 0;       ///< Ninja edges finished (0 when only CMake percent is known)
  int total = 0;      ///< Ninja edges in this invocation (0 when unknown)
  int percent = -1;   ///< 0..100, -1 when unknown
  std::string current_file;
  std::optional<std::chrono::seconds> eta;
  std::chrono::seconds elapsed{0};
};

/// Feeds build output lines; time comes from `now` so tests use a fake clock.
class ProgressTracker {
public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  explicit ProgressTracker(Clock now = [] { return std::chrono::steady_clock::now(); });
  /// Returns true when the line changed the progress (a new status or percent).
  bool feed(std::string_view line);
  /// A new step starts: totals reset, the clock restarts.
  void restart();
  BuildProgress progress() const;

private:
  Clock m_now;
  std::chrono::steady_clock::time_point m_start;
  BuildProgress m_progress;
};

/// The one-line rendering used for the live line and for plain progress lines:
/// "[12/40] 30% ETA 1m05s bias_gelu.cu".
std::string render_progress_line(const BuildProgress& p);
/// "1m05s", "42s", "2h03m".
std::string format_duration(std::chrono::seconds s);

}  // namespace tailor::build
