// Progress of a running build, read from its output lines: Ninja's `[n/N] command`,
// CMake's `[ 42%] Building ...`, setuptools without ninja (`building 'x' extension` and
// each compiler command line it echoes), pip's own phases (`Preparing metadata`,
// `Building wheel`, `Created wheel`), and the file being compiled. Pure functions plus a
// small tracker and a heartbeat with an injected clock, so parsing, ETA and the "still
// running" line are tested without processes.
#pragma once
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace tailor::builder {

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

/// One compiler invocation as setuptools echoes it without ninja (`gcc ... -c x.cpp -o
/// x.o`, `/usr/local/cuda/bin/nvcc ... -c x.cu ...`, `g++ ... -shared ... -o _C.so`), also
/// behind a cache launcher (`ccache g++ ...`) or a wrapper path.
struct CompilerCall {
  std::string tool;  ///< "nvcc", "gcc", "g++", "c++"
  std::string file;  ///< the source compiled, or the library linked; file name only
  bool link = false;
};
std::optional<CompilerCall> parse_compiler_call(std::string_view line);

/// `building 'torch_scatter._scatter_cuda' extension` (setuptools build_ext): the name.
std::optional<std::string> parse_setuptools_extension(std::string_view line);

/// pip's own phase lines, shortened: "Preparing metadata (setup.py)", "Building wheel
/// for torch-scatter (setup.py)", "Created wheel for torch-scatter", "Processing ./src";
/// and setuptools' zip when no pip is around it: "writing the wheel".
std::optional<std::string> parse_pip_phase(std::string_view line);

/// Remaining time by linear extrapolation of elapsed time over the finished fraction;
/// nothing until at least one unit is done (a first guess would be noise).
std::optional<std::chrono::seconds> estimate_eta(double fraction_done,
                                                 std::chrono::seconds elapsed);

/// What the tracker knows after the lines seen so far.
struct BuildProgress {
  int done = 0;      ///< Ninja edges finished (0 when only CMake percent is known)
  int total = 0;     ///< Ninja edges in this invocation (0 when unknown)
  int percent = -1;  ///< 0..100, -1 when unknown
  /// What runs now, from a line printed as it starts: setuptools' echoed compiler calls
  /// (it runs them one at a time) and CMake's "[ 42%] Building ..." lines. Never from
  /// Ninja's `[n/N]` lines: those name an edge that has finished (finished_file).
  std::string current_file;
  /// The running command, short: "nvcc scatter_cuda.cu", "g++ link _scatter_cuda.so".
  std::string current_command;
  /// The file of Ninja's last `[n/N]` line. Ninja prints an edge's status line when the
  /// edge FINISHES unless it writes to a smart terminal, and never then under `ninja -v`
  /// (torch's; Ninja's status.cc); tailor reads it through a pipe in any case. Which of
  /// the other total - done edges run is not in the output.
  std::string finished_file;
  std::string phase;   ///< pip's phase or "extension torch_scatter._scatter_cuda"
  int compiles = 0;    ///< compiler calls seen outside Ninja/CMake (setuptools' own)
  int extensions = 0;  ///< `building 'x' extension` lines seen
  int modules = 0;     ///< extension modules built side by side (0: not told)
  /// Time left: the estimate made when the count last moved, less the time since. An
  /// estimate that has run out while the count stood still is no estimate: eta is then
  /// empty and eta_overdue says why.
  std::optional<std::chrono::seconds> eta;
  bool eta_overdue = false;
  std::chrono::seconds elapsed{0};
};

/// Feeds build output lines; time comes from `now` so tests use a fake clock.
class ProgressTracker {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  explicit ProgressTracker(Clock now = [] { return std::chrono::steady_clock::now(); });
  /// Returns true when the line changed the progress (a new status or percent): Ninja's
  /// status to ninja_status, any other line to other_line.
  bool feed(std::string_view line);
  /// One Ninja status line, parsed once by its reader (the build runner).
  bool ninja_status(const NinjaStatus& s);
  /// A line that is no Ninja status: CMake's percent, setuptools' and pip's lines.
  bool other_line(std::string_view line);
  /// The build driver's modules event: `units` Ninja edges over the package's `modules`, so
  /// every Ninja's [n/N] counts toward one total.
  void package_units(int modules, int units);
  /// A new step starts: totals reset, the clock restarts.
  void restart();
  BuildProgress progress() const;

 private:
  Clock m_now;
  std::chrono::steady_clock::time_point m_start;
  BuildProgress m_progress;
  std::chrono::steady_clock::time_point m_last_move;  ///< when done/percent last changed
  int m_package_total = 0;  ///< units of the whole package, when the build driver said
  int m_package_done = 0;
};

/// `p` as it reads `later` after it was taken, with no new line from the build: the elapsed
/// time goes on, the ETA counts down and, once it has run out, gives way to eta_overdue (the
/// live line's redraw between the build's lines).
BuildProgress aged(BuildProgress p, std::chrono::seconds later);

/// The one-line rendering used for the live line and for plain progress lines:
/// "[12/40] 30% ETA 1m05s, finished bias_gelu.cu" (Ninja), "[ 42%] ... ops.cu" (CMake);
/// without counts, "extension 3 (x._C): 5 compiles, nvcc scatter_cuda.cu" or the pip phase.
std::string render_progress_line(const BuildProgress& p);

/// "still running after 4m30s: nvcc scatter_cuda.cu (extension torch_scatter._scatter_cuda)":
/// the running command when one is known; in a Ninja phase, which names only finished
/// edges, "3 Ninja jobs not finished [1/4]", never a finished one.
std::string render_heartbeat_line(const BuildProgress& p, std::chrono::seconds elapsed);

/// Decides when a quiet build gets a "still running" line: `due` answers true once
/// `interval` has passed since the last line shown (or since `start`), and then waits
/// another interval. Time comes from the injected clock.
class Heartbeat {
 public:
  using Clock = ProgressTracker::Clock;
  Heartbeat(std::chrono::seconds interval, Clock now);
  /// A step starts: the elapsed time counts from here.
  void start();
  /// Something was shown: the next heartbeat is one interval from now.
  void shown();
  /// True (and counts as shown) when an interval passed without anything shown.
  bool due();
  std::chrono::seconds elapsed() const;
  std::chrono::seconds interval() const { return m_interval; }

 private:
  std::chrono::seconds m_interval;
  Clock m_now;
  std::chrono::steady_clock::time_point m_start, m_last_shown;
};
/// "1m05s", "42s", "2h03m".
std::string format_duration(std::chrono::seconds s);

}  // namespace tailor::builder
