#include "util/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

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

CommandResult SystemCommandRunner::run(const CommandSpec& spec) {
  CommandResult result;
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
  std::vector<std::string> env_strings = build_environment(spec);
  std::vector<char*> envp, argv;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = spec.argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);

  pid_t pid = fork();
  if (pid < 0) return result;
  if (pid == 0) {
    setpgid(0, 0);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    dup2(out_pipe[1], 1);
    dup2(merged ? out_pipe[1] : err_pipe[1], 2);
    if (spec.cwd && chdir(spec.cwd->c_str()) != 0) _exit(127);
    execve(exe.c_str(), argv.data(), envp.data());
    _exit(127);
  }
  setpgid(pid, pid);
  close(out_pipe[1]);
  close(err_pipe[1]);
  result.started = true;

  auto deadline = std::chrono::steady_clock::now() + spec.timeout;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  bool open_fd[2] = {true, true};
  std::string line_buf;
  char buf[65536];
  while (open_fd[0] || open_fd[1]) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      kill(-pid, SIGKILL);
      break;
    }
    for (int i = 0; i < 2; ++i) fds[i].fd = open_fd[i] ? (i ? err_pipe[0] : out_pipe[0]) : -1;
    int n = poll(fds, 2, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (n < 0 && errno != EINTR) break;
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
  close(out_pipe[0]);
  close(err_pipe[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
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
