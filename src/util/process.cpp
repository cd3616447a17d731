#include "util/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

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

// Reads the child's stdout and stderr until both close (or the run times out or is
// abandoned): into the result, or line by line to on_line when merged.
void read_output(const CommandSpec& spec, int out_fd, int err_fd, bool merged, ChildGroup& group,
                 CommandResult& result) {
  pollfd fds[3] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}, {interrupt_fd(), POLLIN, 0}};
  bool open_fd[2] = {true, true};
  std::string line_buf;
  char buf[65536];
  while (open_fd[0] || open_fd[1]) {
    auto left = group.left();
    if (left.count() <= 0) {
      group.expire();
      break;
    }
    group.handle_interrupt();
    if (group.abandoned()) break;
    for (int i = 0; i < 2; ++i) fds[i].fd = open_fd[i] ? (i ? err_fd : out_fd) : -1;
    // The self-pipe stays readable once interrupted: watch it only until then.
    fds[2].fd = result.interrupted ? -1 : interrupt_fd();
    int wait_ms =
        static_cast<int>(std::min<long long>(left.count(), result.interrupted ? 100 : 1000));
    int n = poll(fds, 3, wait_ms);
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
        line_buf.append(chunk);
        size_t start = 0, nl;
        while ((nl = line_buf.find_first_of("\n\r", start)) != std::string::npos) {
          spec.on_line(std::string_view(line_buf).substr(start, nl - start));
          start = nl + 1;
        }
        line_buf.erase(0, start);
        if (spec.keep_output) result.out.append(chunk);
      } else {
        (i ? result.err : result.out).append(chunk);
      }
    }
  }
  if (merged && !line_buf.empty()) spec.on_line(line_buf);
}

// Waits for the child. The pipes can close before it exits: the timeout and interrupts
// still hold.
int wait_child(pid_t pid, ChildGroup& group, const CommandResult& result) {
  int status = 0;
  for (;;) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid || (w < 0 && errno != EINTR)) break;
    if (w == 0) {
      group.check_deadline();
      group.handle_interrupt();
      pollfd ifd{result.interrupted ? -1 : interrupt_fd(), POLLIN, 0};
      poll(&ifd, 1, 20);
    }
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
  pid_t pid = start_child(spec, exe, out_pipe, err_pipe, merged);
  if (pid < 0) {
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) close(fd);
    return result;
  }
  setpgid(pid, pid);
  supervise_process_group(pid);
  close(out_pipe[1]);
  close(err_pipe[1]);
  result.started = true;

  ChildGroup group(pid, Clock::now() + spec.timeout, result);
  read_output(spec, out_pipe[0], err_pipe[0], merged, group, result);
  close(out_pipe[0]);
  close(err_pipe[0]);
  int status = wait_child(pid, group, result);
  release_process_group(pid);
  // A run cut short by an interrupt leaves nothing behind: orphans that ignored the
  // signal (`cmd &` in a script), compilers in groups of their own (ninja's).
  if (result.interrupted) kill_run_processes();
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
