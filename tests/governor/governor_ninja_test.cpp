// The memory governor with the real Ninja (1.13 or newer, a jobserver client) and real
// processes: edges are Python programs that take and touch memory. What Ninja ran at
// once is read from the times each edge wrote, never from timing assumptions.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <thread>

#include "governor/memory_governor.h"
#include "probe/host_files.h"
#include "probe/probe.h"
#include "support/fixtures.h"
#include "util/interrupt.h"
#include "util/process.h"
#include "util/version.h"

using namespace tailor;
using namespace tailor::governor;
using tailor::test::scratch_dir;

namespace {

constexpr uint64_t kNinjaMiB = 1ull << 20;

/// Skips unless Ninja >= 1.13 and python3 are on PATH.
std::string usable_ninja() {
  std::string ninja = find_in_path("ninja");
  if (ninja.empty() || find_in_path("python3").empty()) return "";
  CommandResult r = run_command({ninja, "--version"});
  if (!r.ok()) return "";
  auto v = probe::parse_tool_version(r.out);
  if (!v || compare_versions(*v, "1.13") < 0) return "";
  return ninja;
}

/// An edge: starts, takes `mb` kNinjaMiB in `steps` steps (touching every page), holds it for
/// `hold` seconds, then writes "start end" (time.time()) to its output.
const char* k_edge = R"(import sys, time
out, mb, steps, hold = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
start = time.time()
chunks = []
for _ in range(steps):
    b = bytearray(mb * 2**20 // steps)
    for i in range(0, len(b), 4096):
        b[i] = 1
    chunks.append(b)
    time.sleep(0.1 if steps > 1 else 0)
time.sleep(hold)
with open(out, "w") as f:
    f.write(f"{start} {time.time()}\n")
)";

void write_build(const std::filesystem::path& dir, int edges, int mb, int steps, double hold) {
  std::ofstream(dir / "edge.py") << k_edge;
  std::ofstream n(dir / "build.ninja");
  n << "rule mem\n  command = python3 edge.py $out " << mb << " " << steps << " " << hold << "\n";
  for (int i = 0; i < edges; ++i) n << "build e" << i << ".done: mem\n";
}

struct EdgeInterval {
  double start = 0, end = 0;
};

std::vector<EdgeInterval> read_intervals(const std::filesystem::path& dir, int edges) {
  std::vector<EdgeInterval> out;
  for (int i = 0; i < edges; ++i) {
    std::ifstream in(dir / ("e" + std::to_string(i) + ".done"));
    EdgeInterval v;
    if (in >> v.start >> v.end) out.push_back(v);
  }
  return out;
}

/// The most edges alive at one moment.
size_t max_overlap(const std::vector<EdgeInterval>& v) {
  size_t best = 0;
  for (const auto& a : v) {
    size_t n = 0;
    for (const auto& b : v)
      if (b.start <= a.start && a.start < b.end) ++n;
    best = std::max(best, n);
  }
  return best;
}

GovernorOptions governed_options(const std::filesystem::path& dir, GovernorSettings& settings) {
  settings = governor_settings();
  settings.reserve_fraction = 0;
  settings.reserve_min_bytes = 100 * kNinjaMiB;
  GovernorOptions o;
  o.fifo_path = (dir / "jobserver.fifo").string();
  o.settings = &settings;
  o.available = [] {
    probe::SystemHostFiles files;
    return probe::probe_memory(files).usable;
  };
  return o;
}

CommandResult run_ninja(const std::string& ninja, const std::filesystem::path& dir,
                        const std::string& makeflags) {
  CommandSpec spec;
  spec.argv = {ninja};  // no -j: Ninja is a jobserver client only without it
  spec.cwd = dir.string();
  spec.env["MAKEFLAGS"] = makeflags;
  spec.timeout = std::chrono::seconds(240);
  return SystemCommandRunner().run(spec);
}

/// Processes under this one that are stopped (state T).
size_t stopped_descendants() {
  ProcFsTable table;
  auto procs = table.snapshot();
  std::set<pid_t> ours{getpid()};
  size_t stopped = 0;
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& p : procs)
      if (ours.count(p.ppid) && ours.insert(p.pid).second) {
        grew = true;
        if (p.state == 'T') ++stopped;
      }
  }
  return stopped;
}

}  // namespace

TEST(GovernorWithNinja, ConcurrencyStaysWithinTheBudget) {
  std::string ninja = usable_ninja();
  if (ninja.empty())
    GTEST_SKIP() << "needs ninja 1.13 or newer (a jobserver client) and python3 on PATH";
  auto dir = scratch_dir("governor-ninja");
  const int edges = 8, edge_mb = 200;
  write_build(dir, edges, edge_mb, 1, 1.0);
  GovernorSettings settings;
  GovernorOptions o = governed_options(dir, settings);
  o.budget = 700 * kNinjaMiB;
  o.prior_job_bytes = 250 * kNinjaMiB;
  o.max_jobs = edges;  // not the cores: only memory may hold Ninja back here
  auto g = MemoryGovernor::start(o);
  ASSERT_TRUE(g) << g.error().message;
  CommandResult r = run_ninja(ninja, dir, (*g)->makeflags());
  GovernorReport report = (*g)->finish();
  ASSERT_TRUE(r.ok()) << r.out << r.err;
  EXPECT_NE(r.out.find("Jobserver mode detected"), std::string::npos)
      << "Ninja joined the jobserver:\n"
      << r.out;
  auto intervals = read_intervals(dir, edges);
  ASSERT_EQ(intervals.size(), static_cast<size_t>(edges)) << "every edge finished";
  // Edges of 200 kNinjaMiB within a budget of 700 kNinjaMiB: at most 3 alive at once (Ninja alone
  // would run all 8, it was given 8 as the most).
  const size_t allowed = 700 / edge_mb;
  std::cout << "edges alive at once: " << max_overlap(intervals) << " (the budget allows "
            << allowed << "); governor's most running: " << report.max_running << "\n";
  EXPECT_LE(max_overlap(intervals), allowed);
  EXPECT_LE(report.max_running, allowed);
  EXPECT_GE(report.max_running, 1u);
  ASSERT_TRUE(report.job_peaks.count("other")) << "the edges' kind was learned";
  EXPECT_GE(report.job_peaks.at("other"), static_cast<uint64_t>(edge_mb) * kNinjaMiB);
  EXPECT_EQ(stopped_descendants(), 0u);
}

TEST(GovernorWithNinja, TheBrakeStopsGrowingEdgesAndAllFinish) {
  std::string ninja = usable_ninja();
  if (ninja.empty())
    GTEST_SKIP() << "needs ninja 1.13 or newer (a jobserver client) and python3 on PATH";
  auto dir = scratch_dir("governor-brake");
  const int edges = 4, edge_mb = 320;
  // Each edge grows to 320 kNinjaMiB over ~1.6 s; the prior says 50 kNinjaMiB, so all four start,
  // and together they grow far past the budget of 700 kNinjaMiB.
  write_build(dir, edges, edge_mb, 16, 0.5);
  GovernorSettings settings;
  GovernorOptions o = governed_options(dir, settings);
  o.budget = 700 * kNinjaMiB;
  o.prior_job_bytes = 50 * kNinjaMiB;
  o.max_jobs = edges;
  auto g = MemoryGovernor::start(o);
  ASSERT_TRUE(g) << g.error().message;
  CommandResult r = run_ninja(ninja, dir, (*g)->makeflags());
  GovernorReport report = (*g)->finish();
  ASSERT_TRUE(r.ok()) << r.out << r.err;
  EXPECT_EQ(read_intervals(dir, edges).size(), static_cast<size_t>(edges))
      << "every edge finished, stopped ones too";
  size_t stops = 0, continues = 0;
  for (const auto& b : report.brakes) {
    stops += b.action == "stop";
    continues += b.action.rfind("continue", 0) == 0;
  }
  std::cout << "brake: " << stops << " stops, " << continues << " continues; peak build RSS "
            << report.peak_build_rss / kNinjaMiB << " MiB\n";
  EXPECT_GE(stops, 1u) << "the edges outgrew the budget: the brake must have stopped one";
  EXPECT_EQ(continues, stops) << "every stopped edge was continued";
  EXPECT_EQ(report.stops_left_over, 0u);
  EXPECT_EQ(stopped_descendants(), 0u);
}

TEST(GovernorWithNinja, AnInterruptContinuesStoppedEdgesBeforeTheKill) {
  std::string ninja = usable_ninja();
  if (ninja.empty())
    GTEST_SKIP() << "needs ninja 1.13 or newer (a jobserver client) and python3 on PATH";
  auto dir = scratch_dir("governor-interrupt");
  const int edges = 4;
  write_build(dir, edges, 320, 16, 60.0);  // they grow past the budget, then hold a minute
  GovernorSettings settings;
  GovernorOptions o = governed_options(dir, settings);
  o.budget = 700 * kNinjaMiB;
  o.prior_job_bytes = 50 * kNinjaMiB;
  o.max_jobs = edges;
  auto g = MemoryGovernor::start(o);
  ASSERT_TRUE(g) << g.error().message;
  install_interrupt_handlers();
  reset_interrupt_for_testing();
  CommandResult r;
  std::thread t([&] { r = run_ninja(ninja, dir, (*g)->makeflags()); });
  bool braked = false;
  for (int i = 0; i < 600 && !braked; ++i) {  // up to a minute for the brake to stop an edge
    braked = stopped_descendants() > 0;
    if (!braked) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  kill(getpid(), SIGINT);
  t.join();
  GovernorReport report = (*g)->finish();
  reset_interrupt_for_testing();
  ASSERT_TRUE(braked) << "an edge should have been stopped by the brake before the interrupt";
  EXPECT_TRUE(r.interrupted);
  bool continued_on_interrupt = false;
  for (const auto& b : report.brakes) continued_on_interrupt |= b.action == "continue (interrupt)";
  EXPECT_TRUE(continued_on_interrupt)
      << "the governor continues stopped edges as soon as the interrupt arrives";
  EXPECT_EQ(stopped_descendants(), 0u);
  EXPECT_EQ(read_intervals(dir, edges).size(), 0u)
      << "no edge ran to its end: the interrupt ended them";
}
