// The process runner with real processes: output, timeouts, interrupts forwarded to the
// child's tree, and the supervisor that kills the tree when the parent dies by SIGKILL.
#include "util/process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "util/interrupt.h"
#include "util/strings.h"

namespace tailor {
namespace {

using namespace std::chrono_literals;

/// Alive = /proc/<pid> exists and is not a zombie.
bool alive(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  if (!f) return false;
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] != 'Z';
}

/// Polls until `pid` is gone or the deadline passes.
bool gone_within(pid_t pid, std::chrono::milliseconds limit) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (!alive(pid)) return true;
    std::this_thread::sleep_for(20ms);
  }
  return !alive(pid);
}

template <typename Pred>
bool wait_for(Pred pred, std::chrono::milliseconds limit) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return pred();
}

TEST(SystemCommandRunner, CapturesOutputAndExitCode) {
  SystemCommandRunner runner;
  CommandSpec spec;
  spec.argv = {"sh", "-c", "echo out; echo err >&2; exit 3"};
  CommandResult r = runner.run(spec);
  EXPECT_TRUE(r.started);
  EXPECT_FALSE(r.interrupted);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
}

// Issue 51: a command ends when its process ends, whatever its children hold open (a child
// keeping stdout open hung a build 24 h), and nothing it started outlives it: a daemon that
// double-forked into a session of its own with an empty environment (no run marker, no
// registered group) is found as tailor's orphan and killed.
TEST(SystemCommandRunner, EndsWithItsProcessAndLeavesNothing) {
  SystemCommandRunner runner;
  CommandSpec spec;
  const std::string mark = "tailor-orphan-test-" + std::to_string(getpid());
  spec.argv = {"sh", "-c",
               "sleep 60 & setsid sh -c 'exec env -i sleep 61 " + mark +
                   "' >/dev/null 2>&1 </dev/null & sleep 0.3; echo started"};
  spec.timeout = 120s;
  auto start = std::chrono::steady_clock::now();
  CommandResult r = runner.run(spec);
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.out, "started\n");
  EXPECT_LT(took, 10s) << "waited for the child that holds stdout";
  auto marked = [&] {
    for (const auto& line : split_any(run_command({"pgrep", "-f", mark}).out, "\n"))
      if (!line.empty()) return true;
    return false;
  };
  EXPECT_FALSE(marked()) << "the daemon outlived its command";
}

// Merged output is split into lines in linear time: one line of 64 MiB arrives in 1 MiB
// pieces within seconds (it was rescanned for every 64 KiB read: quadratic).
TEST(SystemCommandRunner, ALongLineIsReadInLinearTime) {
  SystemCommandRunner runner;
  CommandSpec spec;
  spec.argv = {"sh", "-c", "head -c 67108864 /dev/zero | tr '\\0' x; echo; echo tail"};
  spec.timeout = 120s;
  spec.keep_output = false;
  size_t pieces = 0, longest = 0, bytes = 0;
  std::string last;
  spec.on_line = [&](std::string_view line) {
    ++pieces;
    bytes += line.size();
    longest = std::max(longest, line.size());
    last = std::string(line);
  };
  auto start = std::chrono::steady_clock::now();
  CommandResult r = runner.run(spec);
  EXPECT_TRUE(r.ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);
  EXPECT_EQ(bytes, size_t{64} << 20 | 4);
  EXPECT_EQ(longest, k_max_line_bytes);
  EXPECT_EQ(last, "tail");
  // The 64 pieces, the empty rest of the line unless the newline came with the last piece,
  // "tail".
  EXPECT_GE(pieces, 64u + 1u);
  EXPECT_LE(pieces, 64u + 1u + 1u);
}

TEST(SystemCommandRunner, ChildrenCarryTheRunMarker) {
  SystemCommandRunner runner;
  CommandSpec spec;
  spec.argv = {"sh", "-c", "printenv " + run_marker_name()};
  CommandResult r = runner.run(spec);
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.out, "1\n");
}

TEST(SystemCommandRunner, TimeoutKillsTheGroup) {
  SystemCommandRunner runner;
  CommandSpec spec;
  spec.argv = {"sh", "-c", "sleep 30 & echo $!; wait"};
  spec.timeout = 300ms;
  CommandResult r = runner.run(spec);
  EXPECT_TRUE(r.timed_out);
  EXPECT_FALSE(r.ok());
  pid_t bg = std::atoi(r.out.c_str());
  ASSERT_GT(bg, 1) << r.out;
  EXPECT_TRUE(gone_within(bg, 5s));
}

/// Runs `script` in a thread, waits for its line "ready", interrupts tailor with SIGINT,
/// and returns the result plus the pids the script printed before "ready".
struct InterruptedRun {
  CommandResult result;
  std::vector<pid_t> pids;
};

InterruptedRun interrupt_while_running(const std::string& script) {
  install_interrupt_handlers();
  reset_interrupt_for_testing();
  InterruptedRun out;
  std::atomic<bool> ready{false};
  std::mutex m;
  std::thread t([&] {
    SystemCommandRunner runner;
    CommandSpec spec;
    spec.argv = {"sh", "-c", script};
    spec.timeout = 60s;
    spec.on_line = [&](std::string_view line) {
      if (line == "ready") {
        ready = true;
      } else if (!line.empty()) {
        std::lock_guard<std::mutex> lock(m);
        out.pids.push_back(std::atoi(std::string(line).c_str()));
      }
    };
    out.result = runner.run(spec);
  });
  bool got_ready = wait_for([&] { return ready.load(); }, 10s);
  kill(getpid(), SIGINT);
  t.join();
  EXPECT_TRUE(got_ready);
  return out;
}

TEST(SystemCommandRunner, InterruptStopsTheWholeTree) {
  // The background sleeps ignore SIGINT (async commands of a non-interactive shell) and
  // keep the output pipe open: only the escalation to SIGKILL ends them.
  auto run = interrupt_while_running("sleep 300 & echo $!; sleep 300 & echo $!; echo ready; wait");
  EXPECT_TRUE(run.result.started);
  EXPECT_TRUE(run.result.interrupted);
  EXPECT_FALSE(run.result.ok());
  ASSERT_EQ(run.pids.size(), 2u);
  for (pid_t p : run.pids)
    EXPECT_TRUE(gone_within(p, 3s)) << "pid " << p << " survived the interrupt";
  EXPECT_EQ(interrupt_signal(), SIGINT);

  // Nothing new starts after an interrupt.
  SystemCommandRunner runner;
  CommandSpec spec;
  spec.argv = {"true"};
  CommandResult after = runner.run(spec);
  EXPECT_FALSE(after.started);
  EXPECT_TRUE(after.interrupted);
  reset_interrupt_for_testing();
  EXPECT_TRUE(runner.run(spec).ok());
}

TEST(SystemCommandRunner, InterruptReachesProcessesOutsideTheGroup) {
  // setsid takes the sleep out of the child's process group and session: only the run
  // marker finds it.
  auto run = interrupt_while_running("setsid sleep 300 & echo $!; echo ready; wait");
  EXPECT_TRUE(run.result.interrupted);
  ASSERT_EQ(run.pids.size(), 1u);
  EXPECT_TRUE(gone_within(run.pids[0], 3s));
  reset_interrupt_for_testing();
}

// Helper for the next test, run in a fresh process (exec of this binary): starts a tree
// through the runner and blocks in it until its parent kills it with SIGKILL.
TEST(SystemCommandRunnerHelper, RunTreeUntilKilled) {
  const char* file = std::getenv("TAILOR_TEST_PID_FILE");
  if (!file) GTEST_SKIP() << "helper for SupervisorKillsTheTreeWhenTailorIsKilled";
  SystemCommandRunner runner;
  CommandSpec spec;
  spec.argv = {"sh", "-c",
               std::string("setsid sleep 300 & a=$!; sleep 300 & b=$!; echo \"$a $b\" > '") + file +
                   ".tmp'; mv '" + file + ".tmp' '" + file + "'; wait"};
  spec.timeout = 120s;
  runner.run(spec);
  FAIL() << "the runner returned although the tree sleeps for 300 s";
}

/// How to run this test binary again: its path, and before it the emulator's words when the
/// kernel cannot run it (qemu-user of a cross build, without binfmt_misc). Under qemu-user
/// exec("/proc/self/exe") would start qemu itself, but qemu answers readlink of it with the
/// emulated binary's path.
std::vector<std::string> self_command(bool through_emulator) {
  std::vector<std::string> words;
#ifdef TAILOR_TEST_EMULATOR
  if (through_emulator) {
    std::istringstream emulator(TAILOR_TEST_EMULATOR);
    for (std::string w; std::getline(emulator, w, '|');) words.push_back(w);
  }
#else
  (void)through_emulator;
#endif
  char path[4096];
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  words.push_back(n > 0 ? std::string(path, size_t(n)) : std::string("/proc/self/exe"));
  words.push_back("--gtest_filter=SystemCommandRunnerHelper.RunTreeUntilKilled");
  return words;
}

TEST(SystemCommandRunner, SupervisorKillsTheTreeWhenTailorIsKilled) {
  char dir_template[] = "/tmp/tailor-process-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  std::string pid_file = std::string(dir_template) + "/pids";
  // Both commands are made before fork: the child only execs.
  auto direct = self_command(false), emulated = self_command(true);
  std::vector<char*> direct_argv, emulated_argv;
  for (auto& w : direct) direct_argv.push_back(w.data());
  for (auto& w : emulated) emulated_argv.push_back(w.data());
  direct_argv.push_back(nullptr);
  emulated_argv.push_back(nullptr);
  const bool have_emulator = emulated.size() > direct.size();
  pid_t helper = fork();
  ASSERT_GE(helper, 0);
  if (helper == 0) {
    setenv("TAILOR_TEST_PID_FILE", pid_file.c_str(), 1);
    execv(direct_argv[0], direct_argv.data());
    if (errno == ENOEXEC && have_emulator) execv(emulated_argv[0], emulated_argv.data());
    _exit(errno == ENOEXEC ? 126 : 127);
  }
  int status = 0;
  bool helper_ended = false;
  bool written = wait_for(
                     [&] {
                       helper_ended = helper_ended || waitpid(helper, &status, WNOHANG) == helper;
                       return helper_ended || std::ifstream(pid_file).good();
                     },
                     20s) &&
                 !helper_ended;
  if (helper_ended) {
    rmdir(dir_template);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 126)
      GTEST_SKIP()
          << "this test binary cannot exec itself: the kernel cannot run " << direct[0]
          << " (a user-mode emulated binary without binfmt_misc) and no emulator is configured";
    FAIL() << "the helper " << direct[0] << " ended before writing its pids (wait status " << status
           << ")";
  }
  std::vector<pid_t> pids;
  {
    std::ifstream f(pid_file);
    pid_t p;
    while (f >> p) pids.push_back(p);
  }
  kill(helper, SIGKILL);
  waitpid(helper, &status, 0);
  ASSERT_TRUE(written);
  ASSERT_EQ(pids.size(), 2u);
  // The setsid'd sleep is outside every group and orphaned: the supervisor's marker sweep
  // is the only thing that can end it; the other one dies with its group.
  for (pid_t p : pids)
    EXPECT_TRUE(gone_within(p, 5s)) << "pid " << p << " outlived its killed parent";
  std::remove(pid_file.c_str());
  rmdir(dir_template);
}

}  // namespace
}  // namespace tailor
