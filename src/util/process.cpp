#include "util/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "util/interrupt.h"
#include "util/strings.h"

extern char** environ;

namespace tailor {
namespace {

std::vector<std::string> build_environment(const CommandSpec& spec) {
  std::map<std::string, std::string> env = process_environment();
  for (const auto& [k, v] : spec.env) {
    if (v)
      env[k] = *v;
    else
      env.erase(k);
  }
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

}  // namespace

std::map<std::string, std::string> process_environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    auto eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    env[std::string(kv.substr(0, eq))] = std::string(kv.substr(eq + 1));
  }
  return env;
}

std::string find_in_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  if (!path) return "";
  for (const auto& dir : split_any(path, ":")) {
    std::string candidate = dir + "/" + name;
    struct stat st {};
    if (stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        access(candidate.c_str(), X_OK) == 0)
      return candidate;
  }
  return "";
}

namespace {

using Clock = std::chrono::steady_clock;

// Forks and execs the command in its own process group with the run's marker variable,
// stdout (and stderr, or both merged) into the pipes' write ends; -1 when fork fails.
pid_t start_child(const CommandSpec& spec, const std::string& exe, const int out_pipe[2],
                  const int err_pipe[2], bool merged) {
  CommandSpec tagged_env;
  tagged_env.env = spec.env;
  // See util/interrupt.h: the sweep finds the tree by this variable.
  tagged_env.env.insert_or_assign(run_marker_name(),
                                  std::optional<std::string>(std::in_place, 1, '1'));
  std::vector<std::string> env_strings = build_environment(tagged_env);
  std::vector<char*> envp, argv;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = spec.argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);

  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid != 0) return pid;
  // Async-signal-safe calls only until exec: the parent may have threads.
  setpgid(0, 0);
  // Die with tailor. The check after it closes the race where tailor died before prctl.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);
  // The child's signals are its own (tailor may have ignored SIGINT as a background job).
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE}) sigaction(sig, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  int devnull = open("/dev/null", O_RDONLY);
  if (devnull >= 0) dup2(devnull, 0);
  dup2(out_pipe[1], 1);
  dup2(merged ? out_pipe[1] : err_pipe[1], 2);
  if (spec.cwd && chdir(spec.cwd->c_str()) != 0) _exit(127);
  execve(exe.c_str(), argv.data(), envp.data());
  _exit(127);
}

// One running child's group: its deadline, and interrupts forwarded to it once, then the
// group and every other process of this run killed after the grace (or at a second
// interrupt).
class ChildGroup {
 public:
  ChildGroup(pid_t pid, Clock::time_point deadline, CommandResult& result)
      : m_pid(pid), m_deadline(deadline), m_result(result) {}

  void handle_interrupt() {
    if (interrupt_signal() == 0) return;
    m_result.interrupted = true;
    if (!m_forwarded_at) {
      kill(-m_pid, interrupt_signal());
      m_forwarded_at = Clock::now();
    }
    if (!m_killed &&
        (interrupt_count() >= 2 || Clock::now() - *m_forwarded_at >= k_interrupt_grace)) {
      kill(-m_pid, SIGKILL);
      kill_run_processes();
      m_killed = true;
    }
  }
  // The run's time is up: the group killed, the result timed out.
  void expire() {
    m_result.timed_out = true;
    kill(-m_pid, SIGKILL);
  }
  // Past the deadline and not yet timed out: expire().
  void check_deadline() {
    if (Clock::now() >= m_deadline && !m_result.timed_out) expire();
  }
  // Killed a while ago and the pipes still open: something outside the run holds them.
  bool abandoned() const {
    return m_killed &&
           Clock::now() - *m_forwarded_at >= k_interrupt_grace + std::chrono::seconds(1);
  }
  std::chrono::milliseconds left() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(m_deadline - Clock::now());
  }

 private:
  pid_t m_pid;
  Clock::time_point m_deadline;
  CommandResult& m_result;
  std::optional<Clock::time_point> m_forwarded_at;  // when the interrupt went to the group
  bool m_killed = false;
};

// The child's end, watched without reaping it (its pid and group stay valid): a pidfd in
// the poll set where the kernel has them (5.3), else a look every 100 ms.
class ChildExit {
 public:
  explicit ChildExit(pid_t pid) : m_pid(pid) {
#ifdef SYS_pidfd_open
    m_fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
#endif
  }
  ~ChildExit() {
    if (m_fd >= 0) close(m_fd);
  }
  ChildExit(const ChildExit&) = delete;
  ChildExit& operator=(const ChildExit&) = delete;
  int fd() const { return m_fd; }
  bool exited() {
    if (!m_exited) {
      siginfo_t info{};
      m_exited = waitid(P_PID, static_cast<id_t>(m_pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
                 info.si_pid == m_pid;
    }
    return m_exited;
  }

 private:
  pid_t m_pid;
  int m_fd = -1;
  bool m_exited = false;
};

// Hands complete lines of the merged output to on_line, scanning each byte once; a line
// longer than k_max_line_bytes goes out in pieces of that size (memory stays bounded, and a
// 200 MB line is read in linear time).
class LineSplitter {
 public:
  explicit LineSplitter(const std::function<void(std::string_view)>& on_line)
      : m_on_line(on_line) {}
  void feed(std::string_view chunk) {
    size_t scan = m_buf.size();
    m_buf.append(chunk);
    size_t start = 0;
    for (;;) {
      size_t nl = m_buf.find_first_of("\n\r", scan);
      if (nl == std::string::npos) break;
      for (; nl - start > k_max_line_bytes; start += k_max_line_bytes)
        m_on_line(std::string_view(m_buf).substr(start, k_max_line_bytes));
      m_on_line(std::string_view(m_buf).substr(start, nl - start));
      start = scan = nl + 1;
    }
    while (m_buf.size() - start >= k_max_line_bytes) {
      m_on_line(std::string_view(m_buf).substr(start, k_max_line_bytes));
      start += k_max_line_bytes;
    }
    m_buf.erase(0, start);
  }
  void finish() {
    if (!m_buf.empty()) m_on_line(m_buf);
    m_buf.clear();
  }

 private:
  const std::function<void(std::string_view)>& m_on_line;
  std::string m_buf;
};

// Appends to a captured stream up to k_max_captured_bytes; the rest is counted as cut.
void capture(std::string& into, std::string_view chunk, CommandResult& result) {
  size_t room = into.size() < k_max_captured_bytes ? k_max_captured_bytes - into.size() : 0;
  into.append(chunk.substr(0, std::min(room, chunk.size())));
  if (chunk.size() > room) result.output_cut = true;
}

// Reads the child's stdout and stderr until both close, the run times out or is abandoned,
// or the child has ended and what its descendants still hold stops flowing: a step ends
// with its process, whatever its children keep open (`on_exit` runs once, at the end).
void read_output(const CommandSpec& spec, int out_fd, int err_fd, ChildGroup& group,
                 ChildExit& child, const std::function<void()>& on_exit, CommandResult& result) {
  const bool merged = static_cast<bool>(spec.on_line);
  pollfd fds[4] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}, {-1, POLLIN, 0}, {-1, POLLIN, 0}};
  bool open_fd[2] = {true, true};
  LineSplitter lines(spec.on_line);
  std::optional<Clock::time_point> drain_until;
  char buf[65536];
  while (open_fd[0] || open_fd[1]) {
    auto left = group.left();
    if (left.count() <= 0) {
      group.expire();
      break;
    }
    group.handle_interrupt();
    if (group.abandoned()) break;
    if (!drain_until && child.exited()) {
      on_exit();
      drain_until = Clock::now() + k_output_drain;
    }
    if (drain_until && Clock::now() >= *drain_until) {
      result.output_held = true;
      break;
    }
    for (int i = 0; i < 2; ++i) fds[i].fd = open_fd[i] ? (i ? err_fd : out_fd) : -1;
    // The self-pipe stays readable once interrupted: watch it only until then.
    fds[2].fd = result.interrupted ? -1 : interrupt_fd();
    fds[3].fd = drain_until ? -1 : child.fd();
    long long wait_ms = std::min<long long>(left.count(), result.interrupted ? 100 : 1000);
    if (child.fd() < 0 || drain_until) wait_ms = std::min<long long>(wait_ms, 100);
    int n = poll(fds, 4, static_cast<int>(wait_ms));
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (!open_fd[i] || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t r = read(fds[i].fd, buf, sizeof buf);
      if (r <= 0) {
        open_fd[i] = false;
        continue;
      }
      std::string_view chunk(buf, static_cast<size_t>(r));
      if (merged) {
        lines.feed(chunk);
        if (spec.keep_output) capture(result.out, chunk, result);
      } else {
        capture(i ? result.err : result.out, chunk, result);
      }
    }
  }
  if (merged) lines.finish();
}

// Waits for the child. The pipes can close before it exits: the timeout and interrupts
// still hold. `on_exit` runs once it has ended and before it is reaped (its pid and group
// still name it), then the child is reaped.
int wait_child(pid_t pid, ChildGroup& group, ChildExit& child, const CommandResult& result,
               const std::function<void()>& on_exit) {
  while (!child.exited()) {
    group.check_deadline();
    group.handle_interrupt();
    pollfd fds[2] = {{result.interrupted ? -1 : interrupt_fd(), POLLIN, 0},
                     {child.fd(), POLLIN, 0}};
    poll(fds, 2, child.fd() >= 0 ? 200 : 20);
  }
  on_exit();
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

}  // namespace

CommandResult SystemCommandRunner::run(const CommandSpec& spec) {
  CommandResult result;
  if (interrupt_signal() != 0) {
    result.interrupted = true;
    return result;
  }
  if (spec.argv.empty()) return result;
  std::string exe = find_in_path(spec.argv[0]);
  if (exe.empty()) return result;

  bool merged = static_cast<bool>(spec.on_line);
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return result;
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    return result;
  }
  become_subreaper();
  pid_t pid;
  {
    // Forked and registered under the child table's lock: an orphan sweep in another
    // thread never takes it for an orphan.
    auto children = lock_child_table();
    pid = start_child(spec, exe, out_pipe, err_pipe, merged);
    if (pid > 0) {
      setpgid(pid, pid);
      supervise_process_group(pid);
    }
  }
  if (pid < 0) {
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) close(fd);
    return result;
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  result.started = true;

  ChildGroup group(pid, Clock::now() + spec.timeout, result);
  ChildExit child(pid);
  // When the child has ended: what it leaves is killed (its group, and every orphan of its
  // tree, which came to tailor as the subreaper), or, for a command that starts a daemon,
  // kept.
  bool ended = false;
  auto on_exit = [&] {
    if (ended) return;
    ended = true;
    if (spec.leaves_daemon) {
      keep_orphans();
      return;
    }
    kill(-pid, SIGKILL);
    kill_orphans();
  };
  read_output(spec, out_pipe[0], err_pipe[0], group, child, on_exit, result);
  close(out_pipe[0]);
  close(err_pipe[0]);
  int status = wait_child(pid, group, child, result, on_exit);
  release_process_group(pid);
  // A run cut short by an interrupt leaves nothing behind: orphans that ignored the
  // signal (`cmd &` in a script), compilers in groups of their own (ninja's).
  if (result.interrupted) kill_run_processes();
  if (!spec.leaves_daemon) kill_orphans();
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
    if (result.exit_code == 127 && result.out.empty() && result.err.empty()) result.started = false;
  } else if (WIFSIGNALED(status)) {
    result.exit_code = 128 + WTERMSIG(status);
  }
  return result;
}

CommandResult run_command(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  SystemCommandRunner runner;
  CommandSpec spec;
  spec.argv = argv;
  spec.timeout = timeout;
  return runner.run(spec);
}

}  // namespace tailor
