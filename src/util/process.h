// Running external commands. Every call has a timeout; a missing program is a result
// (exit_code -1, `started` false), never an exception.
#pragma once
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tailor {

struct CommandResult {
  bool started = false;    ///< false when the program could not be executed at all
  bool timed_out = false;  ///< killed after the timeout
  /// tailor was interrupted (SIGINT/SIGTERM/SIGHUP): the signal was forwarded to the
  /// child's process group, which was killed after a short grace; or, when the interrupt
  /// came first, nothing was started.
  bool interrupted = false;
  int exit_code = -1;  ///< exit status, or 128+signal when killed by a signal
  std::string out;     ///< stdout
  std::string err;     ///< stderr
  /// More than k_max_captured_bytes came on stdout or stderr: the rest was not kept.
  bool output_cut = false;
  /// The command had ended, and its output was still held open (by a process outside its
  /// tree) k_output_drain later: it was not waited for.
  bool output_held = false;
  bool ok() const { return started && !timed_out && !interrupted && exit_code == 0; }
};

struct CommandSpec {
  std::vector<std::string> argv;
  std::chrono::milliseconds timeout{10000};
  std::optional<std::string> cwd;
  /// Variables set (or, with an empty optional, removed) on top of the inherited environment.
  std::map<std::string, std::optional<std::string>> env;
  /// When set, stdout and stderr go together, line by line, to this callback (and to
  /// `out`) instead of being captured separately; used for live build output.
  std::function<void(std::string_view line)> on_line;
  bool keep_output = true;  ///< false: do not accumulate output in memory (long builds)
  /// The command starts a daemon that is to outlive it (`sccache --start-server`): the
  /// orphans of its tree are kept. Otherwise everything it started is killed when it ends.
  bool leaves_daemon = false;
};

/// At most this much of a command's stdout (and of its stderr) is kept in memory.
inline constexpr size_t k_max_captured_bytes = size_t{64} << 20;
/// Merged output goes to on_line in lines of at most this size (a longer one in pieces).
inline constexpr size_t k_max_line_bytes = size_t{1} << 20;
/// How long output is still read after the command has ended and its tree was killed.
inline constexpr std::chrono::milliseconds k_output_drain{2000};

/// Side effects behind an interface so callers are tested with fakes.
class CommandRunner {
 public:
  virtual ~CommandRunner() = default;
  virtual CommandResult run(const CommandSpec& spec) = 0;
};

/// The real runner: fork/exec with pipes, poll, kill the process group on timeout. A command
/// ends when its process ends: then its process group and every orphan of its tree (tailor
/// is their subreaper) are killed and reaped, and its output is read for at most
/// k_output_drain more, whoever holds the pipe (unless `leaves_daemon`). Each
/// child leads its own process group, dies with tailor (PR_SET_PDEATHSIG) and is known to
/// the supervisor of util/interrupt.h; on an interrupt the signal goes to its group, then
/// SIGKILL after k_interrupt_grace (at once on a second interrupt), and every process of
/// the run is swept. After an interrupt nothing new starts.
class SystemCommandRunner : public CommandRunner {
 public:
  CommandResult run(const CommandSpec& spec) override;
};

/// Convenience: run argv with a timeout through the system runner.
CommandResult run_command(const std::vector<std::string>& argv,
                          std::chrono::milliseconds timeout = std::chrono::seconds(10));

/// Search PATH for an executable; empty when not found.
std::string find_in_path(const std::string& name);

/// This process's environment, NAME -> value.
std::map<std::string, std::string> process_environment();

}  // namespace tailor
