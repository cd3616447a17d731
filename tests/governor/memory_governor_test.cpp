// The memory governor over fakes: the token arithmetic (growth, reserve, cores, the brake
// youngest-first, continuing oldest-first), the grouping of a fake /proc tree into
// compile jobs, and the governor itself over a scripted process table with a real fifo.
#include "governor/memory_governor.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>

#include "support/fixtures.h"
#include "util/process.h"

using namespace tailor;
using namespace tailor::governor;
using tailor::test::scratch_dir;

namespace {

constexpr uint64_t MiB = 1ull << 20;

JobView job(pid_t pid, uint64_t start, uint64_t rss_mib, uint64_t peak_mib, bool stopped = false) {
  return JobView{pid, start, rss_mib * MiB, peak_mib * MiB, stopped};
}

PolicyInput input(uint64_t available_mib, uint64_t reserve_mib, uint64_t new_peak_mib,
                  size_t cores) {
  PolicyInput in;
  in.available = available_mib * MiB;
  in.reserve = reserve_mib * MiB;
  in.new_job_peak = new_peak_mib * MiB;
  in.max_jobs = cores;
  in.clients = 1;
  return in;
}

}  // namespace

TEST(GovernorPolicy, NewJobsFitTheHeadroomLeftByGrowthAndReserve) {
  // 10 GiB free, 1 GiB reserve, two jobs that may still grow by 1 GiB and 0.5 GiB:
  // headroom 7.5 GiB, a new job 2 GiB -> 3 new, 5 allowed, 4 tokens (one is implicit).
  auto in = input(10240, 1024, 2048, 64);
  in.jobs = {job(1, 10, 1024, 2048), job(2, 20, 1536, 2048)};
  PolicyDecision d = decide(in);
  EXPECT_EQ(d.headroom, static_cast<int64_t>(7680 * MiB));
  EXPECT_EQ(d.allowed_jobs, 5u);
  EXPECT_EQ(d.tokens, 4u);
  EXPECT_FALSE(d.stop);
  EXPECT_FALSE(d.resume);
}

TEST(GovernorPolicy, CoresCapTheJobsAndEachClientHasAnImplicitToken) {
  auto in = input(100000, 1024, 500, 4);
  EXPECT_EQ(decide(in).allowed_jobs, 4u);
  EXPECT_EQ(decide(in).tokens, 3u);
  in.clients = 2;  // two Ninjas: two implicit tokens
  EXPECT_EQ(decide(in).tokens, 2u);
}

TEST(GovernorPolicy, NoHeadroomNoTokensButTheRunningJobsStay) {
  auto in = input(3000, 1024, 2048, 16);
  in.jobs = {job(1, 10, 500, 2500), job(2, 20, 500, 2500)};  // growth 4000 > 3000 - 1024
  PolicyDecision d = decide(in);
  EXPECT_LT(d.headroom, 0);
  EXPECT_EQ(d.allowed_jobs, 2u);
  EXPECT_EQ(d.tokens, 1u);
  EXPECT_FALSE(d.stop) << "above the reserve nothing is stopped, however tight";
}

TEST(GovernorPolicy, TheBrakeStopsTheYoungestRunningJobNeverTheLast) {
  auto in = input(900, 1024, 2048, 16);
  in.jobs = {job(7, 30, 800, 900), job(5, 10, 800, 900), job(6, 20, 800, 900)};
  PolicyDecision d = decide(in);
  ASSERT_TRUE(d.stop);
  EXPECT_EQ(*d.stop, 7) << "the job that started last";
  EXPECT_EQ(d.allowed_jobs, 2u);
  EXPECT_EQ(d.tokens, 1u);
  // The youngest is stopped: the next youngest goes next, and the oldest never.
  in.jobs[0].stopped = true;
  d = decide(in);
  ASSERT_TRUE(d.stop);
  EXPECT_EQ(*d.stop, 6);
  in.jobs[2].stopped = true;
  d = decide(in);
  EXPECT_FALSE(d.stop) << "the last running job keeps running";
  EXPECT_FALSE(d.resume);
  EXPECT_EQ(d.tokens, 0u);
}

TEST(GovernorPolicy, StoppedJobsContinueOldestFirstWhenTheirGrowthFits) {
  auto in = input(1500, 1024, 512, 16);
  in.jobs = {job(1, 10, 300, 600), job(3, 30, 200, 600, true), job(2, 20, 200, 600, true)};
  // headroom 1500 - 1024 - 300 = 176 < the oldest stopped job's growth 400: wait.
  PolicyDecision d = decide(in);
  EXPECT_FALSE(d.resume);
  EXPECT_EQ(d.tokens, 0u) << "no new jobs while jobs are stopped";
  in.available = 1800 * MiB;  // headroom 476 >= 400
  d = decide(in);
  ASSERT_TRUE(d.resume);
  EXPECT_EQ(*d.resume, 2) << "the stopped job that started first";
  // Nothing else running: the oldest stopped one goes on whatever the memory says.
  auto alone = input(100, 1024, 512, 16);
  alone.jobs = {job(4, 40, 200, 600, true), job(3, 30, 200, 600, true)};
  d = decide(alone);
  ASSERT_TRUE(d.resume);
  EXPECT_EQ(*d.resume, 3);
}

TEST(GovernorPolicy, ServerChildrenCountMemoryNotSlotsAndWaitingClientsAreNeverBraked) {
  // 4 cores. Two of Ninja's jobs are cache clients waiting (no memory); the server runs
  // three compiles for them. Slots: the 2 clients, so 2 more jobs fit the cores.
  auto in = input(100000, 1024, 500, 4);
  JobView c1 = job(1, 10, 6, 6), c2 = job(2, 11, 6, 6);
  c1.holds_memory = c2.holds_memory = false;
  JobView s1 = job(3, 12, 900, 1000), s2 = job(4, 13, 900, 1000), s3 = job(5, 14, 900, 1000);
  s1.slot = s2.slot = s3.slot = false;
  in.jobs = {c1, c2, s1, s2, s3};
  PolicyDecision d = decide(in);
  EXPECT_EQ(d.allowed_jobs, 4u) << "the server's children do not take Ninja's slots";
  // Below the reserve: the youngest job holding memory stops, never a waiting client.
  JobView c3 = job(6, 20, 6, 6);
  c3.holds_memory = false;  // the youngest of all
  in.jobs.push_back(c3);
  in.available = 500 * MiB;
  d = decide(in);
  ASSERT_TRUE(d.stop);
  EXPECT_EQ(*d.stop, 5);
}

TEST(GovernorPolicy, SettingsComeFromTheDataFile) {
  const GovernorSettings& s = governor_settings();
  EXPECT_EQ(s.min_ninja_version, "1.13");
  EXPECT_GT(s.reserve_fraction, 0);
  EXPECT_GE(s.sample_period.count(), 100);
  EXPECT_LE(s.sample_period.count(), 500);
  ASSERT_FALSE(s.kinds.empty());
  EXPECT_EQ(s.kinds[0].name, "nvcc");
  EXPECT_TRUE(s.kinds[0].threads_flag);
}

TEST(GovernorMode, StaticWithJobsOldNinjaOrARecipeThatCannotBeAClient) {
  const auto& settings = governor_settings();
  GovernorFacts f;
  f.recipe = "generic";
  f.jobs_variable = "MAX_JOBS";
  f.ninja_version = "1.13.2.git.kitware.jobserver-pipe-1";
  EXPECT_FALSE(static_reason(f, settings));
  f.ninja_version = "1.11.1";
  EXPECT_EQ(static_reason(f, settings).value_or(""),
            "ninja 1.11.1 on the build's PATH is not a jobserver client (1.13 is)");
  f.ninja_version = "";
  EXPECT_TRUE(static_reason(f, settings));
  f.ninja_version = "1.13.0";
  f.jobs = 3;
  EXPECT_EQ(static_reason(f, settings).value_or(""), "--jobs 3 asks for a fixed count");
  f.jobs.reset();
  f.pip_build = false;
  f.recipe = "bitsandbytes";
  EXPECT_NE(static_reason(f, settings).value_or("").find("CMake"), std::string::npos);
  f.pip_build = true;
  f.jobs_variable = "CMAKE_BUILD_PARALLEL_LEVEL";
  EXPECT_TRUE(static_reason(f, settings));
  f.jobs_variable = "MAX_JOBS";
  f.serial = true;
  EXPECT_TRUE(static_reason(f, settings));
}

namespace {
uint64_t size_or0(const char* text) {
  auto v = parse_memory_size(text);
  return v ? *v : 0;
}
}  // namespace

TEST(GovernorMode, MemorySizes) {
  EXPECT_EQ(size_or0("6G"), 6ull << 30);
  EXPECT_EQ(size_or0("512M"), 512ull << 20);
  EXPECT_EQ(size_or0("1.5GiB"), 3ull << 29);
  EXPECT_EQ(size_or0("800mb"), 800ull << 20);
  EXPECT_EQ(size_or0("1073741824"), 1ull << 30);
  for (const char* bad : {"", "G", "6X", "-1G", "1..5G", ".5G", "6 G B", "1e9"})
    EXPECT_FALSE(parse_memory_size(bad)) << bad;
  auto tiny = parse_memory_size("10M");
  ASSERT_FALSE(tiny);
  EXPECT_NE(tiny.error().message.find("at least 64M"), std::string::npos);
}

// ---- /proc ----------------------------------------------------------------------------

namespace {

/// A folder laid out like /proc: <pid>/stat (and cmdline for nvcc).
struct FakeProc {
  std::filesystem::path root;
  explicit FakeProc(const std::string& tag) : root(scratch_dir(tag)) {}
  void add(pid_t pid, const std::string& comm, pid_t ppid, pid_t pgid, uint64_t start,
           uint64_t rss_pages, char state = 'S', const std::vector<std::string>& argv = {}) {
    auto dir = root / std::to_string(pid);
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "stat") << pid << " (" << comm << ") " << state << " " << ppid << " "
                                << pgid << " 1 0 -1 4194304 100 0 0 0 5 3 0 0 20 0 1 0 " << start
                                << " 123456 " << rss_pages
                                << " 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
    std::string cmd;
    for (const auto& a : argv) cmd += a + '\0';
    std::ofstream(dir / "cmdline") << cmd;
  }
};

}  // namespace

TEST(GovernorProc, ParsesStatLinesWithAwkwardNames) {
  auto p = parse_proc_stat(
      "42 (a (b) c) T 7 42 1 0 -1 0 0 0 0 0 120 30 7 3 20 0 1 0 9999 1000 25 0 0\n", 4096, 100);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->pid, 42);
  EXPECT_EQ(p->comm, "a (b) c");
  EXPECT_EQ(p->state, 'T');
  EXPECT_EQ(p->ppid, 7);
  EXPECT_EQ(p->pgid, 42);
  EXPECT_EQ(p->start, 9999u);
  EXPECT_EQ(p->rss, 25u * 4096);
  EXPECT_EQ(p->cpu_ms, 1600u);  // (120 + 30 + 7 + 3) ticks at 100 a second
  EXPECT_FALSE(parse_proc_stat("42 (x) S 1 2 3", 4096));
  EXPECT_FALSE(parse_proc_stat("garbage", 4096));
  EXPECT_FALSE(parse_proc_stat("", 4096));
}

TEST(GovernorProc, GroupsTheTreeIntoCompileJobsUnderNinja) {
  FakeProc proc("governor-proc");
  const uint64_t pages = MiB / 4096;  // 1 MiB in pages of 4 KiB
  proc.add(100, "tailor", 1, 100, 1, 10 * pages);
  proc.add(101, "python3", 100, 101, 2, 300 * pages);  // pip
  proc.add(102, "python3", 101, 101, 3, 400 * pages);  // setup.py
  proc.add(103, "ninja", 102, 101, 4, 5 * pages);
  // job 1: sh -> nvcc --threads 4 -> cicc (old)
  proc.add(110, "sh", 103, 110, 50, 1 * pages);
  proc.add(111, "nvcc", 110, 110, 51, 3 * pages, 'S', {"nvcc", "-c", "a.cu", "--threads", "4"});
  proc.add(112, "cicc", 111, 110, 52, 900 * pages);
  // job 2: sh -> c++ -> cc1plus (younger)
  proc.add(120, "sh", 103, 120, 60, 1 * pages);
  proc.add(121, "c++", 120, 120, 61, 2 * pages);
  proc.add(122, "cc1plus", 121, 120, 62, 700 * pages);
  // job 3: a link, stopped
  proc.add(130, "sh", 103, 130, 70, 1 * pages, 'T');
  proc.add(131, "collect2", 130, 130, 71, 2 * pages, 'T');
  proc.add(132, "ld", 131, 130, 72, 80 * pages, 'T');
  // not ours
  proc.add(200, "cc1plus", 1, 200, 5, 5000 * pages);
  ProcFsTable table(proc.root.string());
  auto procs = table.snapshot();
  EXPECT_EQ(procs.size(), 14u);
  TreeSample s = group_tree(procs, 100, governor_settings());
  EXPECT_EQ(s.clients, 1u);
  EXPECT_EQ(s.tree_rss, (300 + 400 + 5 + 1 + 3 + 900 + 1 + 2 + 700 + 1 + 2 + 80) * MiB)
      << "the root itself and strangers left out";
  ASSERT_EQ(s.jobs.size(), 3u);
  EXPECT_EQ(s.jobs[0].pid, 110);
  EXPECT_EQ(s.jobs[0].kind, "nvcc --threads 4");
  EXPECT_EQ(s.jobs[0].rss, 904 * MiB);
  EXPECT_EQ(s.jobs[0].pids, (std::vector<pid_t>{110, 111, 112}));
  EXPECT_FALSE(s.jobs[0].stopped);
  EXPECT_EQ(s.jobs[1].kind, "cc1plus");
  EXPECT_EQ(s.jobs[1].rss, 703 * MiB);
  EXPECT_EQ(s.jobs[2].kind, "ld");
  EXPECT_TRUE(s.jobs[2].stopped);
  EXPECT_EQ(s.process_rss.at("cicc"), 900 * MiB);
  EXPECT_EQ(s.process_rss.at("cc1plus"), 700 * MiB) << "the stranger's cc1plus is not the build's";
  // No Ninja: no jobs, only the tree's RSS.
  TreeSample none = group_tree(procs, 121, governor_settings());
  EXPECT_EQ(none.jobs.size(), 0u);
  EXPECT_EQ(none.tree_rss, 700 * MiB);
}

TEST(GovernorProc, ACacheServersChildrenHoldTheMemoryAndItsWaitingClientsTheSlots) {
  FakeProc proc("governor-proc-server");
  const uint64_t pages = MiB / 4096;
  proc.add(100, "tailor", 1, 100, 1, 10 * pages);
  proc.add(101, "python3", 100, 101, 2, 300 * pages);
  proc.add(103, "ninja", 101, 101, 4, 5 * pages);
  // Ninja's jobs: two sccache clients waiting on the server, and a link it runs itself.
  proc.add(110, "sccache", 103, 110, 50, 6 * pages, 'S', {"sccache", "nvcc", "-c", "a.cu"});
  proc.add(111, "sccache", 103, 111, 51, 6 * pages, 'S', {"sccache", "nvcc", "-c", "b.cu"});
  proc.add(112, "sh", 103, 112, 52, 1 * pages);
  proc.add(113, "ld", 112, 112, 53, 80 * pages);
  // The server daemonized out of the tree (its parent is init): it runs the compiles.
  proc.add(500, "sccache", 1, 500, 5, 40 * pages);
  proc.add(510, "nvcc", 500, 500, 55, 3 * pages, 'S', {"nvcc", "-c", "a.cu", "--threads", "4"});
  proc.add(511, "cicc", 510, 500, 56, 900 * pages);
  proc.add(520, "nvcc", 500, 500, 57, 3 * pages, 'S', {"nvcc", "-c", "b.cu", "--threads", "4"});
  proc.add(521, "ptxas", 520, 500, 58, 200 * pages);
  // Another user's sccache server: not ours.
  proc.add(600, "sccache", 1, 600, 5, 40 * pages);
  proc.add(610, "nvcc", 600, 600, 60, 3 * pages);
  ProcFsTable table(proc.root.string());
  auto procs = table.snapshot();
  TreeSample with = group_tree(procs, 100, governor_settings(), {500});
  ASSERT_EQ(with.jobs.size(), 5u) << "Ninja's three jobs and the server's two compiles";
  EXPECT_EQ(with.jobs[0].pid, 110);
  EXPECT_TRUE(with.jobs[0].slot && !with.jobs[0].holds_memory)
      << "a waiting client takes a slot and no memory";
  EXPECT_TRUE(with.jobs[1].slot && !with.jobs[1].holds_memory);
  EXPECT_EQ(with.jobs[2].pid, 112);
  EXPECT_TRUE(with.jobs[2].slot && with.jobs[2].holds_memory) << "Ninja's own link";
  EXPECT_EQ(with.jobs[3].pid, 510);
  EXPECT_EQ(with.jobs[3].kind, "nvcc --threads 4");
  EXPECT_EQ(with.jobs[3].rss, 903 * MiB);
  EXPECT_TRUE(!with.jobs[3].slot && with.jobs[3].holds_memory)
      << "a server child uses memory, not a core slot";
  EXPECT_EQ(with.jobs[4].pid, 520);
  EXPECT_EQ(with.jobs[4].rss, 203 * MiB);
  EXPECT_EQ(with.tree_rss, (300 + 5 + 6 + 6 + 1 + 80 + 40 + 3 + 900 + 3 + 200) * MiB)
      << "the server counts, the stranger not";
  EXPECT_EQ(with.process_rss.at("cicc"), 900 * MiB);
  // Without the server's pid the clients are all the governor can see (a few MiB each).
  TreeSample without = group_tree(procs, 100, governor_settings());
  ASSERT_EQ(without.jobs.size(), 3u);
  EXPECT_EQ(without.jobs[0].rss, 6 * MiB);
  EXPECT_EQ(without.tree_rss, (300 + 5 + 6 + 6 + 1 + 80) * MiB);
}

// ---- the governor over a scripted table ------------------------------------------------

namespace {

class ScriptedTable : public ProcessTable {
 public:
  std::vector<ProcessSample> procs;
  std::vector<ProcessSample> snapshot() override { return procs; }
  void set_rss(pid_t pid, uint64_t mib) {
    for (auto& p : procs)
      if (p.pid == pid) p.rss = mib * MiB;
  }
  void remove(pid_t pid) {
    std::erase_if(procs, [&](const ProcessSample& p) { return p.pid == pid; });
  }
  void add_job(pid_t pid, uint64_t start, uint64_t mib, const std::string& comm = "cc1plus") {
    procs.push_back(ProcessSample{pid, 50, pid, comm, 'S', mib * MiB, start, {}});
  }
};

}  // namespace

TEST(MemoryGovernor, LearnsPeaksMintsTokensAndBrakesWithinABudget) {
  auto dir = scratch_dir("governor-scripted");
  auto table = std::make_shared<ScriptedTable>();
  table->procs.push_back(ProcessSample{50, 10, 50, "ninja", 'S', 10 * MiB, 5, {}});
  std::vector<std::pair<pid_t, int>> signals;
  GovernorSettings settings = governor_settings();
  settings.reserve_min_bytes = 100 * MiB;
  settings.reserve_fraction = 0;
  settings.new_job_margin = 1.0;
  GovernorOptions o;
  o.fifo_path = (dir / "js.fifo").string();
  o.prior_job_bytes = 400 * MiB;
  o.budget = 2000 * MiB;
  o.max_jobs = 8;
  o.root = 10;
  o.table = table;
  o.settings = &settings;
  o.own_thread = false;
  o.available = [] { return uint64_t{64} << 30; };
  o.signal_fn = [&](pid_t p, int sig) {
    signals.push_back({p, sig});
    return 0;
  };
  auto g = MemoryGovernor::start(o);
  ASSERT_TRUE(g) << g.error().message;
  // Nothing running: (2000 - 10 - 100) / 400 = 4 jobs, 3 tokens.
  EXPECT_NE((*g)->makeflags().find("--jobserver-auth=fifo:" + o.fifo_path), std::string::npos);
  // A job of 100 MiB finishes: cc1plus peaks at 100 MiB.
  table->add_job(60, 100, 100);
  (*g)->tick();
  table->remove(60);
  (*g)->tick();
  // Three jobs start and grow past the budget: 3 x 650 + 10 = 1960 > 2000 - 100.
  table->add_job(61, 200, 650);
  table->add_job(62, 300, 650);
  table->add_job(63, 400, 650);
  (*g)->tick();
  ASSERT_FALSE(signals.empty()) << "below the reserve the brake stops a job";
  EXPECT_EQ(signals[0].first, -63) << "the youngest job's process group first";
  EXPECT_EQ(signals[0].second, SIGSTOP);
  signals.clear();
  (*g)->tick();  // still below the reserve: the next youngest
  ASSERT_FALSE(signals.empty());
  EXPECT_EQ(signals[0].first, -62);
  EXPECT_EQ(signals[0].second, SIGSTOP);
  signals.clear();
  (*g)->tick();
  EXPECT_TRUE(signals.empty()) << "the oldest job keeps running";
  // The oldest finishes: the older stopped job (62) goes on first.
  table->remove(61);
  (*g)->tick();
  ASSERT_FALSE(signals.empty());
  EXPECT_EQ(signals[0].first, -62);
  EXPECT_EQ(signals[0].second, SIGCONT);
  signals.clear();
  // The end: every job still stopped is continued.
  GovernorReport r = (*g)->finish();
  bool continued_63 = false;
  for (const auto& [p, sig] : signals) continued_63 |= (p == -63 && sig == SIGCONT);
  EXPECT_TRUE(continued_63);
  EXPECT_EQ(r.mode, "governor");
  EXPECT_EQ(r.stops_left_over, 1u);
  EXPECT_EQ(r.job_peaks.at("cc1plus"), 650 * MiB);
  EXPECT_EQ(r.peak_build_rss, 1960 * MiB);
  EXPECT_EQ(r.max_running, 3u);
  size_t stops = 0;
  for (const auto& b : r.brakes) stops += b.action == "stop";
  EXPECT_EQ(stops, 2u);
  ASSERT_FALSE(r.series.empty());
  EXPECT_EQ(r.series.front().tokens, 3u)
      << "before any job: (budget - tree - reserve) / prior - 1 implicit";
  auto j = to_json(r);
  EXPECT_EQ(j["mode"], "governor");
  EXPECT_EQ(j["series"][0].size(), j["series_fields"].size());
  EXPECT_EQ(j["job_peaks_mib"]["cc1plus"], 650);
  EXPECT_NE(render_governor_summary(r).find("2 brake stops"), std::string::npos)
      << render_governor_summary(r);
  EXPECT_FALSE(std::filesystem::exists(o.fifo_path)) << "the fifo goes with the governor";
}

TEST(MemoryGovernor, TheSeriesStaysBounded) {
  auto dir = scratch_dir("governor-series");
  auto table = std::make_shared<ScriptedTable>();
  GovernorSettings settings = governor_settings();
  settings.max_series_points = 16;
  GovernorOptions o;
  o.fifo_path = (dir / "js.fifo").string();
  o.root = 10;
  o.table = table;
  o.settings = &settings;
  o.own_thread = false;
  o.available = [] { return uint64_t{8} << 30; };
  o.signal_fn = [](pid_t, int) { return 0; };
  auto g = MemoryGovernor::start(o);
  ASSERT_TRUE(g);
  for (int i = 0; i < 1000; ++i) (*g)->tick();
  GovernorReport r = (*g)->finish();
  EXPECT_EQ(r.samples, 1001u);
  EXPECT_LE(r.series.size(), 16u);
  EXPECT_GE(r.series.size(), 4u);
  for (size_t i = 1; i < r.series.size(); ++i) EXPECT_GE(r.series[i].t, r.series[i - 1].t);
}

TEST(MemoryGovernor, StartsFromEarlierBuildsPeaksInsteadOfThePrior) {
  auto dir = scratch_dir("governor-known");
  auto table = std::make_shared<ScriptedTable>();
  table->procs.push_back(ProcessSample{50, 10, 50, "ninja", 'S', 10 * MiB, 5, {}});
  GovernorSettings settings = governor_settings();
  settings.reserve_min_bytes = 100 * MiB;
  settings.reserve_fraction = 0;
  settings.new_job_margin = 1.0;
  auto options = [&](const std::string& name) {
    GovernorOptions o;
    o.fifo_path = (dir / name).string();
    o.prior_job_bytes = 400 * MiB;
    o.budget = 2000 * MiB;
    o.max_jobs = 16;
    o.root = 10;
    o.table = table;
    o.settings = &settings;
    o.own_thread = false;
    o.available = [] { return uint64_t{64} << 30; };
    o.signal_fn = [](pid_t, int) { return 0; };
    return o;
  };
  // No earlier build: (2000 - 10 - 100) / 400 = 4 jobs, 3 tokens.
  auto cold = MemoryGovernor::start(options("cold.fifo"));
  ASSERT_TRUE(cold) << cold.error().message;
  GovernorReport rc = (*cold)->finish();
  ASSERT_FALSE(rc.series.empty());
  EXPECT_EQ(rc.series.front().tokens, 3u);
  EXPECT_TRUE(rc.known_peaks.empty());
  // An earlier build measured cc1plus jobs at 150 MiB: 1890 / 150 = 12 jobs, 11 tokens.
  GovernorOptions o = options("known.fifo");
  o.known_peaks = {{"cc1plus", 150 * MiB}};
  o.known_builds = 2;
  auto warm = MemoryGovernor::start(o);
  ASSERT_TRUE(warm) << warm.error().message;
  // A running job larger than the known peak raises what its kind may still grow to.
  table->add_job(61, 200, 300);
  (*warm)->tick();
  table->remove(61);
  (*warm)->tick();
  GovernorReport rw = (*warm)->finish();
  EXPECT_EQ(rw.series.front().tokens, 11u)
      << "the known peak replaces the prior from the first sample";
  EXPECT_EQ(rw.known_builds, 2u);
  EXPECT_EQ(rw.known_peaks.at("cc1plus"), 150 * MiB);
  ASSERT_TRUE(rw.finished_peaks.count("cc1plus"));
  EXPECT_EQ(rw.finished_peaks.at("cc1plus"), 300 * MiB)
      << "what this build measured, not the known value";
  EXPECT_EQ(to_json(rw)["known_peaks_mib"]["cc1plus"], 150);
  EXPECT_NE(render_governor_summary(rw).find("started from 2 earlier builds: cc1plus 150 MiB"),
            std::string::npos)
      << render_governor_summary(rw);
}

// ---- cache hits teach nothing (issue 27, item 6) ----------------------------------------

TEST(GovernorProc, AJobTeachesOnlyWhenACompilerOfItsKindRanNotAsAPreprocessor) {
  FakeProc proc("governor-proc-compiles");
  const uint64_t pages = MiB / 4096;
  proc.add(100, "tailor", 1, 100, 1, 10 * pages);
  proc.add(103, "ninja", 100, 103, 4, 5 * pages);
  // A ccache hit on nvcc in preprocessor mode: nvcc -E -> gcc -E -> cc1plus -E.
  proc.add(110, "sh", 103, 110, 50, 1 * pages);
  proc.add(111, "ccache", 110, 110, 51, 4 * pages);
  proc.add(112, "nvcc", 111, 110, 52, 3 * pages, 'S', {"nvcc", "-E", "a.cu"});
  proc.add(113, "gcc", 112, 110, 53, 2 * pages);
  proc.add(114, "cc1plus", 113, 110, 54, 95 * pages, 'S', {"cc1plus", "-E", "-quiet", "a.cu"});
  // A real nvcc compile: cicc runs.
  proc.add(120, "sh", 103, 120, 60, 1 * pages);
  proc.add(121, "nvcc", 120, 120, 61, 3 * pages, 'S', {"nvcc", "-c", "b.cu"});
  proc.add(122, "cicc", 121, 120, 62, 580 * pages, 'S', {"cicc", "--c++17", "b.cpp1.ii"});
  // Another, sampled in its host compile.
  proc.add(125, "sh", 103, 125, 65, 1 * pages);
  proc.add(126, "nvcc", 125, 125, 66, 3 * pages, 'S', {"nvcc", "-c", "e.cu"});
  proc.add(127, "cc1plus", 126, 125, 67, 800 * pages, 'S', {"cc1plus", "-quiet", "e.cudafe1.cpp"});
  // A ccache hit on g++ in direct mode: no compiler at all ("other").
  proc.add(130, "sh", 103, 130, 70, 1 * pages);
  proc.add(131, "ccache", 130, 130, 71, 4 * pages);
  // A ccache hit on g++ in preprocessor mode, and a real g++ compile.
  proc.add(140, "sh", 103, 140, 80, 1 * pages);
  proc.add(141, "cc1plus", 140, 140, 81, 60 * pages, 'S', {"cc1plus", "-E", "-quiet", "c.cpp"});
  proc.add(150, "sh", 103, 150, 90, 1 * pages);
  proc.add(151, "cc1plus", 150, 150, 91, 900 * pages, 'S', {"cc1plus", "-quiet", "d.cpp", "-O3"});
  // A link: no cache serves it.
  proc.add(160, "sh", 103, 160, 95, 1 * pages);
  proc.add(161, "ld", 160, 160, 96, 80 * pages);
  ProcFsTable table(proc.root.string());
  TreeSample s = group_tree(table.snapshot(), 100, governor_settings());
  ASSERT_EQ(s.jobs.size(), 7u);
  EXPECT_EQ(s.jobs[0].kind, "nvcc");
  EXPECT_FALSE(s.jobs[0].compiles) << "nvcc only preprocessed: a cache hit";
  EXPECT_EQ(s.jobs[1].kind, "nvcc");
  EXPECT_TRUE(s.jobs[1].compiles);
  EXPECT_EQ(s.jobs[2].kind, "nvcc");
  EXPECT_TRUE(s.jobs[2].compiles) << "nvcc's host compile";
  s.jobs.erase(s.jobs.begin() + 2);
  EXPECT_EQ(s.jobs[2].kind, "other");
  EXPECT_FALSE(s.jobs[2].compiles);
  EXPECT_EQ(s.jobs[3].kind, "cc1plus");
  EXPECT_FALSE(s.jobs[3].compiles) << "cc1plus -E only preprocesses";
  EXPECT_EQ(s.jobs[4].kind, "cc1plus");
  EXPECT_TRUE(s.jobs[4].compiles);
  EXPECT_EQ(s.jobs[5].kind, "ld");
  EXPECT_TRUE(s.jobs[5].compiles);
}

TEST(MemoryGovernor, JobsServedFromACompilerCacheTeachNothing) {
  auto dir = scratch_dir("governor-cache-hits");
  auto table = std::make_shared<ScriptedTable>();
  table->procs.push_back(ProcessSample{50, 10, 50, "ninja", 'S', 10 * MiB, 5, {}});
  // sccache's server, out of the tree: it runs nvcc's steps as its own children.
  table->procs.push_back(ProcessSample{500, 1, 500, "sccache", 'S', 40 * MiB, 3, {}});
  GovernorSettings settings = governor_settings();
  settings.reserve_min_bytes = 100 * MiB;
  settings.reserve_fraction = 0;
  settings.new_job_margin = 1.0;
  GovernorOptions o;
  o.fifo_path = (dir / "js.fifo").string();
  o.prior_job_bytes = 400 * MiB;
  o.budget = 2000 * MiB;
  o.max_jobs = 16;
  o.root = 10;
  o.table = table;
  o.settings = &settings;
  o.own_thread = false;
  o.available = [] { return uint64_t{64} << 30; };
  o.signal_fn = [](pid_t, int) { return 0; };
  o.cache_servers = {500};
  auto g = MemoryGovernor::start(o);
  ASSERT_TRUE(g) << g.error().message;
  auto run = [&](std::vector<ProcessSample> job) {
    for (auto& p : job) table->procs.push_back(p);
    (*g)->tick();
    for (const auto& p : job) table->remove(p.pid);
    (*g)->tick();
  };
  // Hits: ccache's nvcc -E under Ninja (104 MiB), sccache's nvcc --dryrun and fatbinary,
  // a cc1plus -E, a direct-mode hit with no compiler at all.
  run({{60, 50, 60, "sh", 'S', 1 * MiB, 100, {}},
       {61, 60, 60, "ccache", 'S', 4 * MiB, 101, {}},
       {62, 61, 60, "nvcc", 'S', 4 * MiB, 102, {"nvcc", "-E", "a.cu"}},
       {63, 62, 60, "cc1plus", 'S', 95 * MiB, 103, {"cc1plus", "-E", "a.cu"}}});
  run({{70, 500, 70, "nvcc", 'S', 30 * MiB, 110, {"nvcc", "--dryrun", "b.cu"}}});
  run({{71, 500, 71, "fatbinary", 'S', 50 * MiB, 111, {}}});
  run({{72, 500, 72, "cc1plus", 'S', 120 * MiB, 112, {"cc1plus", "-E", "b.cudafe1.cpp"}}});
  run({{80, 50, 80, "sh", 'S', 1 * MiB, 120, {}}, {81, 80, 80, "ccache", 'S', 20 * MiB, 121, {}}});
  GovernorReport hits = (*g)->finish();
  EXPECT_TRUE(hits.finished_peaks.empty()) << "no compile ran: nothing learned, nothing to record";
  // Still the prior for a new job: (2000 - 50 - 100) / 400 = 4 jobs, 3 tokens; the hits'
  // peaks taken for compiles' (nvcc 104 MiB, cc1plus 120) would have allowed 15 jobs.
  ASSERT_FALSE(hits.series.empty());
  EXPECT_EQ(hits.series.back().tokens, 3u);

  // A build that compiles for real learns, the hits beside it do not lower it.
  o.fifo_path = (dir / "js2.fifo").string();
  auto g2 = MemoryGovernor::start(o);
  ASSERT_TRUE(g2) << g2.error().message;
  g = std::move(g2);
  run({{90, 500, 90, "cicc", 'S', 584 * MiB, 130, {"cicc", "b.cpp1.ii"}}});
  run({{91, 50, 91, "sh", 'S', 1 * MiB, 131, {}},
       {92, 91, 91, "nvcc", 'S', 4 * MiB, 132, {"nvcc", "-E", "c.cu"}},
       {93, 92, 91, "cc1plus", 'S', 104 * MiB, 133, {"cc1plus", "-E", "c.cu"}}});
  run({{94, 50, 94, "cc1plus", 'S', 700 * MiB, 140, {"cc1plus", "-quiet", "d.cpp"}}});
  GovernorReport real = (*g)->finish();
  EXPECT_EQ(real.finished_peaks,
            (std::map<std::string, uint64_t>{{"nvcc", 584 * MiB}, {"cc1plus", 700 * MiB}}));
}

namespace {

// GNU make 4.3 stops on the governor's fifo jobserver; the shim runs it without it.
TEST(MakeShim, DropsTheFifoJobserverAndItsJobsForAnOldMake) {
  namespace fs = std::filesystem;
  fs::path dir = tailor::test::scratch_dir("make_shim");
  fs::path fake = dir / "old-make";
  {
    std::ofstream f(fake);
    f << "#!/bin/sh\necho \"MAKEFLAGS=[$MAKEFLAGS] ARGS=[$*]\"\n";
  }
  fs::permissions(fake, fs::perms::owner_all);
  tailor::RealDiskInterface disk;
  auto shim = tailor::governor::write_make_shim(disk, (dir / "shim").string(), fake.string());
  ASSERT_TRUE(shim) << shim.error().message;
  tailor::CommandSpec spec;
  spec.argv = {(fs::path(*shim) / "make").string(), "-f", "ltrans.mk", "all"};
  spec.env["MAKEFLAGS"] = " -j16 --jobserver-auth=fifo:/w/a/jobserver.fifo";
  tailor::SystemCommandRunner runner;
  auto r = runner.run(spec);
  ASSERT_TRUE(r.ok()) << r.err;
  EXPECT_EQ(r.out.find("jobserver"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("-j16"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ARGS=[-f ltrans.mk all]"), std::string::npos) << r.out;
  // CMake's Makefile generator runs `gmake` first where there is one: the same shim.
  spec.argv[0] = (fs::path(*shim) / "gmake").string();
  auto g = runner.run(spec);
  ASSERT_TRUE(g.ok()) << g.err;
  EXPECT_EQ(g.out.find("jobserver"), std::string::npos) << g.out;
  EXPECT_NE(g.out.find("ARGS=[-f ltrans.mk all]"), std::string::npos) << g.out;
  // The real make 4.3 (where it is the one installed) accepts what the shim passes on.
  std::string make = tailor::find_in_path("make");
  if (!make.empty()) {
    auto real = tailor::governor::write_make_shim(disk, (dir / "shim-real").string(), make);
    ASSERT_TRUE(real);
    { std::ofstream(dir / "m.mk") << "all:\n\t@echo made\n"; }
    tailor::CommandSpec s2;
    s2.argv = {(fs::path(*real) / "make").string(), "-s", "-f", (dir / "m.mk").string()};
    s2.env["MAKEFLAGS"] = " -j16 --jobserver-auth=fifo:/nonexistent/jobserver.fifo";
    auto r2 = runner.run(s2);
    EXPECT_TRUE(r2.ok()) << r2.out << r2.err;
    EXPECT_EQ(r2.out, "made\n");
  }
}

}  // namespace

namespace tailor::governor {
namespace {

TEST(GovernorProc, NinjasOfOneParentShareOneImplicitToken) {
  // The build driver runs a package's modules at once, one Ninja each, and takes a jobserver
  // token for every Ninja beside its first, as GNU make does for its children: the
  // parent is one client. Ninjas of two parents are two.
  FakeProc proc("governor-ninja-parents");
  const uint64_t pages = MiB / 4096;
  proc.add(100, "tailor", 1, 100, 1, 10 * pages);
  proc.add(101, "python3", 100, 101, 2, 300 * pages);
  for (pid_t n : {103, 104, 105}) proc.add(n, "ninja", 101, 101, 4, 5 * pages);
  ProcFsTable table(proc.root.string());
  EXPECT_EQ(group_tree(table.snapshot(), 100, governor_settings()).clients, 1u);
  proc.add(106, "make", 100, 106, 5, 1 * pages);
  proc.add(107, "ninja", 106, 106, 6, 5 * pages);
  ProcFsTable again(proc.root.string());
  EXPECT_EQ(group_tree(again.snapshot(), 100, governor_settings()).clients, 2u);
}

}  // namespace
}  // namespace tailor::governor

// Each finished compile's peak, its whole subtree, by the unit Ninja's command makes (its
// `-o`): the report's per-unit peaks, which `tailor plan torch --measured` reads.
TEST(GovernorProc, AJobIsNamedByItsCommandsOutput) {
  ProcessSample sh{60,  50,  60,  "sh",
                   'S', MiB, 100, {"/bin/sh", "-c", "/usr/bin/c++ -O2 -c ../a.cpp -o obj/a.cpp.o"}};
  ProcessSample nvcc{70,  50,  70,  "nvcc",
                     'S', MiB, 100, {"/usr/bin/nvcc", "-c", "k.cu", "-o", "obj/k.cu.o"}};
  ProcessSample cc1{71,  70,  70,  "cc1plus",
                    'S', MiB, 100, {"cc1plus", "-quiet", "x.ii", "-o", "/tmp/ccA.s"}};
  EXPECT_EQ(job_output({&sh}), "obj/a.cpp.o");
  EXPECT_EQ(job_output({&nvcc, &cc1}), "obj/k.cu.o");
  EXPECT_EQ(job_output({&cc1}), "");  // a temporary file is no unit
  ProcessSample bare{80, 50, 80, "sh", 'S', MiB, 100, {"/bin/sh", "-c", "cmake -E touch x"}};
  EXPECT_EQ(job_output({&bare}), "");
}

TEST(MemoryGovernor, ReportsEachFinishedUnitsPeakByItsOutput) {
  auto dir = scratch_dir("governor-units");
  auto table = std::make_shared<ScriptedTable>();
  table->procs.push_back(ProcessSample{50, 10, 50, "ninja", 'S', 10 * MiB, 5, {}});
  GovernorSettings settings = governor_settings();
  GovernorOptions o;
  o.fifo_path = (dir / "js.fifo").string();
  o.max_jobs = 2;
  o.root = 10;
  o.table = table;
  o.settings = &settings;
  o.own_thread = false;
  o.available = [] { return uint64_t{64} << 30; };
  o.signal_fn = [](pid_t, int) { return 0; };
  auto g = MemoryGovernor::start(o);
  ASSERT_TRUE(g) << g.error().message;
  table->procs.push_back(ProcessSample{
      60, 50, 60, "sh", 'S', 2 * MiB, 100, {"/bin/sh", "-c", "c++ -c a.cpp -o obj/a.cpp.o"}});
  table->procs.push_back(ProcessSample{
      61, 60, 60, "cc1plus", 'S', 300 * MiB, 101, {"cc1plus", "a.cpp", "-o", "/tmp/ccA.s"}});
  (*g)->tick();
  table->set_rss(61, 500);      // it grows; the peak is what the unit reports
  for (auto& p : table->procs)  // and uses the CPU: 2.5 s by the last sample
    if (p.pid == 61)
      p.cpu_ms = 2500;
    else if (p.pid == 60)
      p.cpu_ms = 10;
  (*g)->tick();
  table->remove(61);
  table->remove(60);
  (*g)->tick();
  GovernorReport r = (*g)->finish();
  ASSERT_EQ(r.unit_peaks.count("obj/a.cpp.o"), 1u);
  EXPECT_EQ(r.unit_peaks.at("obj/a.cpp.o"), 502 * MiB);
  EXPECT_EQ(to_json(r)["unit_peaks_mib"]["obj/a.cpp.o"], 502);
  EXPECT_EQ(r.unit_cpu_ms.at("obj/a.cpp.o"), 2510u);
  EXPECT_EQ(to_json(r)["unit_cpu_ms"]["obj/a.cpp.o"], 2510);
}

// The build's last unit most often ends after the governor's last sample: finish takes it
// then, as a sample would have (it was missing from the report's peaks and CPU times).
TEST(MemoryGovernor, TheUnitThatEndsAfterTheLastSampleIsReportedToo) {
  auto dir = scratch_dir("governor-last-unit");
  auto table = std::make_shared<ScriptedTable>();
  table->procs.push_back(ProcessSample{50, 10, 50, "ninja", 'S', 10 * MiB, 5, {}});
  GovernorSettings settings = governor_settings();
  GovernorOptions o;
  o.fifo_path = (dir / "js.fifo").string();
  o.max_jobs = 2;
  o.root = 10;
  o.table = table;
  o.settings = &settings;
  o.own_thread = false;
  o.available = [] { return uint64_t{64} << 30; };
  o.signal_fn = [](pid_t, int) { return 0; };
  auto g = MemoryGovernor::start(o);
  ASSERT_TRUE(g) << g.error().message;
  table->procs.push_back(ProcessSample{
      60, 50, 60, "sh", 'S', 2 * MiB, 100, {"/bin/sh", "-c", "c++ -c z.cpp -o obj/z.cpp.o"}});
  table->procs.push_back(ProcessSample{
      61, 60, 60, "cc1plus", 'S', 400 * MiB, 101, {"cc1plus", "z.cpp", "-o", "/tmp/ccZ.s"}, 3000});
  (*g)->tick();
  table->remove(61);
  table->remove(60);  // ends; no tick before the build's end
  GovernorReport r = (*g)->finish();
  ASSERT_EQ(r.unit_peaks.count("obj/z.cpp.o"), 1u);
  EXPECT_EQ(r.unit_peaks.at("obj/z.cpp.o"), 402 * MiB);
  EXPECT_EQ(r.unit_cpu_ms.at("obj/z.cpp.o"), 3000u);
}
