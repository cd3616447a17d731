// Folder locks, per-run logs, resume bookkeeping and what an interrupt does to the build
// layers (the runner stops, publishing refuses). Real files and real flock(2).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "builder/build_runner.h"
#include "builder/resume.h"
#include "outputs/publish.h"
#include "source/extension_source.h"
#include "support/fixtures.h"
#include "util/files.h"
#include "util/interrupt.h"
#include "workpath/folder_lock.h"

using namespace tailor;
namespace fs = std::filesystem;

namespace {
RealDiskInterface real_disk;  // these tests read and write real files

using test::TempDir;

/// Runs `fn` in a forked child and returns its exit status (locks are per process).
template <typename Fn>
int in_child(Fn fn) {
  pid_t pid = fork();
  if (pid == 0) _exit(fn());
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
}

TEST(FolderLock, SecondHolderIsRefusedWithThePidWithoutWaiting) {
  TempDir t("interruption");
  std::string work = (t.path / "work").string();
  auto lock =
      workpath::FolderLock::acquire(work, workpath::FolderLock::Place::inside, false, nullptr);
  ASSERT_TRUE(lock) << lock.error().message;
  EXPECT_EQ(test::slurp_text(lock->lock_path()), std::to_string(getpid()) + "\n");
  int rc = in_child([&] {
    auto second =
        workpath::FolderLock::acquire(work, workpath::FolderLock::Place::inside, false, nullptr);
    if (second) return 1;
    std::string want = "is in use by tailor build pid " + std::to_string(getppid());
    return second.error().message.find(want) != std::string::npos ? 0 : 2;
  });
  EXPECT_EQ(rc, 0);
}

TEST(FolderLock, ReleasedWhenTheHolderGoesAway) {
  TempDir t("interruption");
  std::string work = (t.path / "work").string();
  {
    auto lock =
        workpath::FolderLock::acquire(work, workpath::FolderLock::Place::inside, false, nullptr);
    ASSERT_TRUE(lock);
  }
  // A holder killed with SIGKILL leaves no stale lock: the kernel drops it.
  int rc = in_child([&] {
    auto lock =
        workpath::FolderLock::acquire(work, workpath::FolderLock::Place::inside, false, nullptr);
    if (!lock) return 1;
    raise(SIGKILL);
    return 0;
  });
  EXPECT_EQ(rc, 100);
  auto again =
      workpath::FolderLock::acquire(work, workpath::FolderLock::Place::inside, false, nullptr);
  EXPECT_TRUE(again) << (again ? "" : again.error().message);
}

TEST(FolderLock, WaiterSaysSoOnceAndGetsTheLock) {
  TempDir t("interruption");
  std::string out = (t.path / "dist").string();
  int to_child[2];
  ASSERT_EQ(pipe(to_child), 0);
  pid_t holder = fork();
  if (holder == 0) {
    auto lock =
        workpath::FolderLock::acquire(out, workpath::FolderLock::Place::beside, false, nullptr);
    [[maybe_unused]] ssize_t n = ::write(to_child[1], "x", 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    _exit(lock ? 0 : 1);
  }
  char c;
  ASSERT_EQ(::read(to_child[0], &c, 1), 1);
  std::FILE* note = std::tmpfile();
  auto lock = workpath::FolderLock::acquire(out, workpath::FolderLock::Place::beside, true, note);
  ASSERT_TRUE(lock) << lock.error().message;
  std::rewind(note);
  char buf[512] = {};
  size_t n = std::fread(buf, 1, sizeof buf - 1, note);
  std::fclose(note);
  EXPECT_EQ(std::string(buf, n),
            "waiting for tailor build pid " + std::to_string(holder) + " using " + out + "\n");
  int status = 0;
  waitpid(holder, &status, 0);
  // In tailor's lock folder: the output folder is not created, nothing is left beside it.
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(t.path / ".dist.tailor.lock"));
  EXPECT_EQ(lock->lock_path(),
            workpath::folder_lock_path(out, workpath::FolderLock::Place::beside));
  EXPECT_EQ(fs::path(lock->lock_path()).parent_path(), fs::path(user_cache_dir("locks")));
  EXPECT_TRUE(fs::exists(lock->lock_path()));
  EXPECT_EQ(std::distance(fs::directory_iterator(t.path), fs::directory_iterator()), 0);
  // One folder spelt two ways shares one lock; a work folder's lock is not its output's.
  EXPECT_EQ(workpath::folder_lock_path(out + "/", workpath::FolderLock::Place::beside),
            lock->lock_path());
  EXPECT_EQ(workpath::folder_lock_path((t.path / "x" / ".." / "dist").string(),
                                       workpath::FolderLock::Place::beside),
            lock->lock_path());
  EXPECT_NE(workpath::folder_lock_path(out, workpath::FolderLock::Place::inside),
            lock->lock_path());
}

TEST(RunLog, EachRunGetsItsOwnLogAndBuildLogPointsAtTheLatest) {
  TempDir t("interruption");
  auto first = builder::start_run_log(real_disk, t.path.string(), 2);
  ASSERT_TRUE(first);
  std::ofstream(*first) << "first\n";
  EXPECT_EQ(test::slurp_text(t.path / "build.log"), "first\n");
  std::vector<std::string> made = {*first};
  for (int i = 0; i < 3; ++i) {
    // Distinct names within one second: make the older ones look older.
    fs::rename(made.back(), t.path / ("build-20000101T00000" + std::to_string(i) + "Z-1.log"));
    made.back() = (t.path / ("build-20000101T00000" + std::to_string(i) + "Z-1.log")).string();
    auto next = builder::start_run_log(real_disk, t.path.string(), 2);
    ASSERT_TRUE(next);
    made.push_back(*next);
  }
  std::ofstream(made.back()) << "latest\n";
  EXPECT_TRUE(fs::is_symlink(t.path / "build.log"));
  EXPECT_EQ(test::slurp_text(t.path / "build.log"), "latest\n");
  size_t logs = 0;
  for (const auto& e : fs::directory_iterator(t.path))
    if (e.path().filename().string().rfind("build-", 0) == 0) ++logs;
  EXPECT_EQ(logs, 2u);  // the newest two kept
  EXPECT_TRUE(fs::exists(made.back()));
}

TEST(Resume, KeepsTheTreeOnlyWhileConfiguredTheSame) {
  TempDir t("interruption");
  fs::path src = t.path / "src", work = t.path;
  fs::create_directories(src / "build" / "obj");
  EXPECT_FALSE(builder::keep_build_tree_if_unchanged(real_disk, src.string(), work.string(),
                                                     "sm_75\npip wheel"));
  EXPECT_FALSE(fs::exists(src / "build"));  // no fingerprint yet: unknown tree removed
  fs::create_directories(src / "build" / "obj");
  EXPECT_TRUE(builder::keep_build_tree_if_unchanged(real_disk, src.string(), work.string(),
                                                    "sm_75\npip wheel"));
  EXPECT_TRUE(fs::exists(src / "build" / "obj"));
  EXPECT_FALSE(builder::keep_build_tree_if_unchanged(real_disk, src.string(), work.string(),
                                                     "sm_80\npip wheel"));
  EXPECT_FALSE(fs::exists(src / "build"));
}

TEST(Resume, CountsNinjaStepsPerInvocation) {
  auto count = [](std::vector<std::pair<int, int>> statuses) {
    builder::NinjaStepCount c;
    for (auto [n, total] : statuses) c.add(builder::NinjaStatus{n, total, "x"});
    return c.steps();
  };
  EXPECT_FALSE(count({}));
  EXPECT_EQ(*count({{1, 4}, {2, 4}, {4, 4}}), 4u);
  EXPECT_EQ(*count({{1, 4}, {3, 4}, {1, 2}, {2, 2}}), 6u);  // two invocations
}

TEST(Resume, ReusedUnitsAgainstTheFreshTreeCount) {
  TempDir t("interruption");
  std::string work = t.path.string();
  fs::create_directories(t.path / "src");
  builder::keep_build_tree_if_unchanged(real_disk, (t.path / "src").string(), work, "f");
  EXPECT_FALSE(builder::account_reused_units(real_disk, work, false, 4));  // fresh tree: records 4
  auto u = builder::account_reused_units(real_disk, work, true, 1);
  ASSERT_TRUE(u);
  EXPECT_EQ(u->reused, 3u);
  EXPECT_EQ(u->total, 4u);
  EXPECT_NE(u->source.find("Ninja"), std::string::npos);
  auto none_ran =
      builder::account_reused_units(real_disk, work, true, std::nullopt);  // everything up to date
  ASSERT_TRUE(none_ran);
  EXPECT_EQ(none_ran->reused, 4u);
}

TEST(Resume, SourceSyncKeepsTheCopysBuildTreeAndSourceTimes) {
  TempDir t("interruption");
  fs::path pkg = t.path / "pkg";
  fs::create_directories(pkg / "csrc");
  std::ofstream(pkg / "setup.py") << "from setuptools import setup\nsetup(name='p')\n";
  std::ofstream(pkg / "csrc" / "k.cu") << "one\n";
  std::ofstream(pkg / "gone.txt") << "x\n";
  auto spec = source::classify_source(pkg.string(), "");
  ASSERT_TRUE(spec);
  SystemCommandRunner runner;
  auto src = source::prepare_source(*spec, (t.path / "work").string(), "python3", runner);
  ASSERT_TRUE(src) << src.error().message;
  fs::path copy(*src);
  EXPECT_EQ(fs::last_write_time(copy / "csrc" / "k.cu"),
            fs::last_write_time(pkg / "csrc" / "k.cu"));
  fs::create_directories(copy / "build" / "temp");
  std::ofstream(copy / "build" / "temp" / "k.o") << "object\n";

  // Unchanged, changed and removed files; the copy's own build/ stays.
  std::ofstream(pkg / "csrc" / "k.cu") << "two, longer\n";
  fs::remove(pkg / "gone.txt");
  src = source::prepare_source(*spec, (t.path / "work").string(), "python3", runner);
  ASSERT_TRUE(src);
  EXPECT_TRUE(fs::exists(copy / "build" / "temp" / "k.o"));
  EXPECT_EQ(test::slurp_text(copy / "csrc" / "k.cu"), "two, longer\n");
  EXPECT_EQ(fs::last_write_time(copy / "csrc" / "k.cu"),
            fs::last_write_time(pkg / "csrc" / "k.cu"));
  EXPECT_FALSE(fs::exists(copy / "gone.txt"));
  EXPECT_TRUE(fs::exists(copy / "setup.py"));
}

/// Counts the processes it was asked to run.
class CountingRunner : public CommandRunner {
 public:
  int runs = 0;
  CommandResult run(const CommandSpec&) override {
    ++runs;
    CommandResult r;
    r.started = true;
    r.exit_code = 0;
    return r;
  }
};

class QuietDisplay : public builder::ProgressDisplay {
  void step_started(const tailor::plan::Step&, size_t, size_t) override {}
  void progress(const builder::BuildProgress&) override {}
  void step_finished(const builder::StepOutcome&) override {}
};

TEST(Interrupt, RunnerStopsAndPublishingRefuses) {
  TempDir t("interruption");
  install_interrupt_handlers();
  reset_interrupt_for_testing();
  kill(getpid(), SIGINT);
  ASSERT_EQ(interrupt_signal(), SIGINT);
  CountingRunner runner;
  QuietDisplay display;
  builder::BuildRunner br(runner, display, real_disk, (t.path / "log").string());
  auto outcome = br.run({tailor::plan::Step{"one", {"true"}}, tailor::plan::Step{"two", {"true"}}});
  ASSERT_TRUE(outcome);
  EXPECT_TRUE(outcome->interrupted);
  EXPECT_FALSE(outcome->ok());
  EXPECT_EQ(runner.runs, 0);
  EXPECT_NE(test::slurp_text(t.path / "log").find("interrupted by signal 2"), std::string::npos);

  fs::create_directories(t.path / "dist");
  std::ofstream(t.path / "dist" / "keep.txt") << "old\n";
  auto staging = outputs::PublishStaging::create((t.path / "dist").string());
  ASSERT_TRUE(staging);
  ASSERT_TRUE(staging->add_text("pkg.whl", "wheel"));
  auto published = staging->commit({"pkg.whl"});
  EXPECT_FALSE(published);
  reset_interrupt_for_testing();
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(t.path / "dist"))
    names.push_back(e.path().filename().string());
  EXPECT_EQ(names, std::vector<std::string>{"keep.txt"});
}

}  // namespace
