// The process runner with real processes: output, timeouts, interrupts forwarded to the
// child's tree, and the supervisor that kills the tree when the parent dies by SIGKILL.
#include "util/process.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "util/interrupt.h"

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
  for (pid_t p : run.pids) EXPECT_TRUE(gone_within(p, 3s)) << "pid " << p << " survived the interrupt";
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

TEST(SystemCommandRunner, SupervisorKillsTheTreeWhenTailorIsKilled) {
  char dir_template[] = "/tmp/tailor-process-test-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  std::string pid_file = std::string(dir_template) + "/pids";
  pid_t helper = fork();
  ASSERT_GE(helper, 0);
  if (helper == 0) {
    setenv("TAILOR_TEST_PID_FILE", pid_file.c_str(), 1);
    execl("/proc/self/exe", "process_test_helper", "--gtest_filter=SystemCommandRunnerHelper.RunTreeUntilKilled",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  bool written = wait_for([&] { return std::ifstream(pid_file).good(); }, 20s);
  std::vector<pid_t> pids;
  {
    std::ifstream f(pid_file);
    pid_t p;
    while (f >> p) pids.push_back(p);
  }
  kill(helper, SIGKILL);
  int status = 0;
  waitpid(helper, &status, 0);
  ASSERT_TRUE(written);
  ASSERT_EQ(pids.size(), 2u);
  // The setsid'd sleep is outside every group and orphaned: the supervisor's marker sweep
  // is the only thing that can end it; the other one dies with its group.
  for (pid_t p : pids) EXPECT_TRUE(gone_within(p, 5s)) << "pid " << p << " outlived its killed parent";
  std::remove(pid_file.c_str());
  rmdir(dir_template);
}

}  // namespace
}  // namespace tailor
