// The memory governor of `tailor build`: a make jobserver (util/jobserver.h) served to
// the build's Ninja, whose tokens follow measured memory, and an emergency brake.
//
// Every sample (data/build/governor.toml: sample_period_ms) it reads the free memory
// (probe's cgroup-aware figure, or a --memory-budget less the build's own RSS, whichever
// is lower) and the build's process tree (the descendants of tailor, through a
// `ProcessTable`, so tests feed fake /proc trees). A compile job is a child of a Ninja
// with its subtree; its RSS is the sum of its processes'. Under sccache, whose server
// daemonizes out of tailor's tree and runs the compiles for Ninja's waiting clients, the
// server's pid is given too: its children are jobs holding memory (no core slot), the
// clients jobs holding a slot (no memory, never braked). Jobs are sorted into kinds
// (nvcc with its --threads, ld, cc1plus, other) and each kind's peak is learned as jobs
// finish; the recipe's memory per job is the prior until then, unless earlier builds of
// the same package measured them (governor/governor_profile.h): then those from the start.
//
// Tokens: headroom = available - reserve - what running jobs may still grow (up to their
// kind's peak); new jobs = floor(headroom / a new job's expected peak); jobs allowed =
// running + new, capped by cores; tokens = allowed - the clients' implicit ones. Surplus
// tokens are read back out of the pipe as clients return them.
// Brake: below the reserve the youngest running job (its whole subtree) gets SIGSTOP, one
// per sample, never the last running one; the oldest stopped job gets SIGCONT when its
// growth fits again, or when nothing else runs. Stopped jobs are always continued when
// the governor finishes, and at once on an interrupt, before the runner's kill (a stopped
// process does not act on SIGTERM until continued).
#pragma once
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "util/disk_interface.h"
#include "util/expected.h"
#include "util/jobserver.h"

namespace tailor::governor {

// ---- facts (data/build/governor.toml, one loader) -------------------------------------

struct JobKindRule {
  std::string name;
  std::vector<std::string> processes;  ///< process names (comm) that make a job this kind
  /// The processes that do the compile itself (`processes` when the file names none): a
  /// finished job teaches its kind's peak only if one of them ran in it, not as a
  /// preprocessor. A compiler cache's hit runs none (governor.toml says why).
  std::vector<std::string> compilers;
  bool threads_flag = false;  ///< nvcc: the kind names its --threads when > 1
};

struct GovernorSettings {
  std::string min_ninja_version = "1.13";
  double reserve_fraction = 0.08;
  uint64_t reserve_min_bytes = 256ull << 20;
  std::chrono::milliseconds sample_period{250};
  double new_job_margin = 1.15;
  size_t max_series_points = 300;
  size_t max_brake_events = 200;
  size_t max_unit_peaks = 20000;
  std::vector<JobKindRule> kinds;
  std::vector<std::string>
      preprocess_flags;  ///< a compiler with one of these only preprocesses ("-E")
  std::vector<std::string> report_processes;
  size_t profile_max_entries = 256;  ///< builds remembered (governor/governor_profile.h)
  std::vector<std::string>
      cache_clients;  ///< a cache server's client processes (cache::sccache_process_names)
};
/// data/build/governor.toml, loaded once (a DataError is a programming error).
const GovernorSettings& governor_settings();

// ---- when it runs ------------------------------------------------------------------------

/// What decides between the governor and the static job count.
struct GovernorFacts {
  std::optional<int> jobs;  ///< --jobs: a fixed count asked for
  std::string recipe;
  bool pip_build = true;                 ///< the build is pip over torch's cpp_extension
  std::string jobs_variable;             ///< the recipe's (MAX_JOBS)
  bool jobs_count_nvcc_threads = false;  ///< the variable counts nvcc threads, not jobs
  bool serial = false;                   ///< compiles one file at a time (no parallel fix)
  std::string ninja_version;             ///< the ninja on the build's PATH; empty: none found
};
/// nullopt: the governor runs; else why the static count does ("ninja 1.11.1 on the
/// build's PATH is not a jobserver client (1.13 is)").
std::optional<std::string> static_reason(const GovernorFacts& facts,
                                         const GovernorSettings& settings);

/// `--memory-budget`: "6G", "512M", "1.5GiB", "800MB" (binary units: G = GiB); a bare
/// number is bytes. At least 64 MiB, at most 1 PiB.
Expected<uint64_t> parse_memory_size(std::string_view text);

// ---- the process tree -------------------------------------------------------------------

struct ProcessSample {
  pid_t pid = 0, ppid = 0, pgid = 0;
  std::string comm;               ///< /proc/<pid>/stat's name
  char state = '?';               ///< 'R', 'S', 'T' (stopped), 'Z', ...
  uint64_t rss = 0;               ///< bytes
  uint64_t start = 0;             ///< start time in clock ticks after boot: orders jobs by age
  std::vector<std::string> argv;  ///< read only for processes whose kind looks at flags (nvcc)
  /// CPU time so far, its own and its waited-for children's (utime stime cutime cstime), ms.
  uint64_t cpu_ms = 0;
};

class ProcessTable {
 public:
  virtual ~ProcessTable() = default;
  virtual std::vector<ProcessSample> snapshot() = 0;
};

/// /proc (or a folder laid out like it, for tests): <pid>/stat and, for nvcc and the
/// kinds' compilers (is it only preprocessing?), <pid>/cmdline.
class ProcFsTable : public ProcessTable {
 public:
  /// `settings` null: governor_settings().
  explicit ProcFsTable(std::string root = "/proc", const GovernorSettings* settings = nullptr);
  std::vector<ProcessSample> snapshot() override;

 private:
  std::string m_root;
  std::set<std::string> m_argv_names;  ///< whose cmdline is read
};

/// Parses one /proc/<pid>/stat line; nullopt when malformed.
std::optional<ProcessSample> parse_proc_stat(std::string_view text, uint64_t page_size,
                                             uint64_t ticks_per_second = 100);

struct CompileJob {
  pid_t pid = 0;  ///< the child of Ninja
  pid_t pgid = 0;
  uint64_t start = 0;
  std::string kind;
  uint64_t rss = 0;          ///< sum over the subtree
  uint64_t cpu_ms = 0;       ///< CPU time so far, sum over the subtree
  std::vector<pid_t> pids;   ///< the subtree, the job first
  bool stopped = false;      ///< every process of it is stopped
  bool slot = true;          ///< one of Ninja's jobs (a cache server's child is not)
  bool holds_memory = true;  ///< false: a cache client waiting on its server
  bool compiles = false;     ///< one of its kind's compilers runs in it, not as a preprocessor
  std::string unit;          ///< what it makes: the command's `-o` path (job_output); may be empty
};

struct TreeSample {
  uint64_t tree_rss = 0;  ///< every descendant of the root
  size_t clients = 0;  ///< processes that run Ninjas (a jobserver client each: its Ninjas share one
                       ///< implicit token)
  std::vector<CompileJob> jobs;
  std::map<std::string, uint64_t> process_rss;  ///< the largest RSS per process name listed
};

/// The descendants of `root` (not `root` itself), grouped into compile jobs: each child of
/// a Ninja with its subtree, except a child that is only a cache client (settings'
/// cache_clients) waiting on its server; and each child of a cache server in `servers`
/// (a compiler cache that daemonized out of the tree and compiles for Ninja's clients),
/// whose own RSS counts in the tree's.
TreeSample group_tree(const std::vector<ProcessSample>& procs, pid_t root,
                      const GovernorSettings& settings, const std::vector<pid_t>& servers = {});
/// The kind of a job from its processes ("nvcc --threads 4", "cc1plus", "other").
std::string job_kind(const std::vector<const ProcessSample*>& subtree,
                     const GovernorSettings& settings);
/// What a job makes: the last `-o PATH` of its command (Ninja's `/bin/sh -c COMMAND`, or a
/// compiler's own argv), the ninja log's name for the unit; empty when none says.
std::string job_output(const std::vector<const ProcessSample*>& subtree);
/// Whether one of the compilers of the job's kind runs in it other than as a preprocessor
/// (false for "other"): only such a job's peak says what a compile of that kind costs.
bool job_compiles(const std::vector<const ProcessSample*>& subtree,
                  const GovernorSettings& settings);

// ---- the arithmetic (pure) --------------------------------------------------------------

struct JobView {
  pid_t pid = 0;
  uint64_t start = 0;
  uint64_t rss = 0;
  uint64_t expected_peak = 0;  ///< its kind's learned peak (or the prior), at least its rss
  bool stopped = false;
  bool slot = true;          ///< counts against the cores (one of Ninja's jobs)
  bool holds_memory = true;  ///< the brake may stop it (a waiting cache client frees nothing)
};

struct PolicyInput {
  uint64_t available = 0;  ///< effective free memory now
  uint64_t reserve = 0;
  uint64_t new_job_peak = 0;  ///< what a job not yet started is expected to peak at
  size_t max_jobs = 1;        ///< cores
  size_t clients = 1;         ///< jobserver clients, each with an implicit token
  std::vector<JobView> jobs;
};

struct PolicyDecision {
  int64_t headroom = 0;         ///< available - reserve - growth of running jobs
  size_t allowed_jobs = 1;      ///< running + new, capped
  size_t tokens = 0;            ///< tokens that should exist
  std::optional<pid_t> stop;    ///< the job to SIGSTOP now
  std::optional<pid_t> resume;  ///< the job to SIGCONT now
};

PolicyDecision decide(const PolicyInput& in);

// ---- the report -------------------------------------------------------------------------

struct GovernorPoint {
  double t = 0;  ///< seconds since the governor started
  size_t tokens = 0, running = 0, stopped = 0;
  uint64_t available_mib = 0, build_rss_mib = 0;
};

struct BrakeEvent {
  double t = 0;
  std::string action;  ///< "stop" or "continue"
  pid_t pid = 0;
  std::string kind;
  uint64_t rss_mib = 0, available_mib = 0;
};

struct GovernorReport {
  std::string mode;  ///< "governor" or "static"
  std::string reason;
  std::optional<uint64_t> budget;
  uint64_t reserve = 0, prior = 0;
  size_t max_jobs = 0;
  uint64_t peak_build_rss = 0;
  size_t max_running = 0, samples = 0;
  std::map<std::string, uint64_t> job_peaks;  ///< this build's, by job kind (running ones too)
  std::map<std::string, uint64_t>
      finished_peaks;  ///< this build's finished jobs, by kind: what it teaches
  std::map<std::string, uint64_t> known_peaks;    ///< from earlier builds (governor_profile.h)
  uint64_t known_builds = 0;                      ///< how many earlier builds measured them
  std::map<std::string, uint64_t> process_peaks;  ///< by process name
  /// Each finished compile's peak (its whole subtree), by the unit it made (job_output):
  /// the first max_unit_peaks units.
  std::map<std::string, uint64_t> unit_peaks;
  size_t unit_peaks_dropped = 0;
  /// Each finished compile's CPU time (its tree's, at the last sample), by the same unit: what
  /// the unit costs whatever else the machine ran (its wall time grows with the contention).
  std::map<std::string, uint64_t> unit_cpu_ms;
  std::vector<GovernorPoint> series;  ///< thinned to max_series_points
  std::vector<BrakeEvent> brakes;     ///< the first max_brake_events
  size_t brake_count = 0;
  size_t stops_left_over = 0;  ///< jobs still stopped at the end, continued then
};

nlohmann::json to_json(const GovernorReport& report);
/// One or two lines for the build summary.
std::string render_governor_summary(const GovernorReport& report);

// ---- the governor -----------------------------------------------------------------------

struct GovernorOptions {
  std::string fifo_path;
  uint64_t prior_job_bytes = 3ull << 30;  ///< the recipe's memory per job
  std::optional<uint64_t> budget;         ///< --memory-budget
  uint64_t limit_bytes = 0;               ///< for the reserve: budget, cgroup limit or MemTotal
  size_t max_jobs = 1;                    ///< cores
  pid_t root = 0;                         ///< 0: this process
  std::string reason;                     ///< why the governor runs, for the report
  /// Free memory of the machine (probe's cgroup-aware figure).
  std::function<uint64_t()> available;
  std::shared_ptr<ProcessTable> table;         ///< empty: /proc
  const GovernorSettings* settings = nullptr;  ///< null: governor_settings()
  bool own_thread = true;                      ///< false: tests call tick() themselves
  std::function<int(pid_t, int)> signal_fn;    ///< empty: kill(2)
  /// Job peaks by kind that earlier builds of the same package measured: they replace
  /// the prior from the first sample (governor/governor_profile.h).
  std::map<std::string, uint64_t> known_peaks;
  uint64_t known_builds = 0;
  /// Compiler cache servers outside tailor's tree whose children are the build's
  /// compiles (sccache's daemon).
  std::vector<pid_t> cache_servers;
};

class MemoryGovernor {
 public:
  static Expected<std::unique_ptr<MemoryGovernor>> start(GovernorOptions options);
  ~MemoryGovernor();
  /// The MAKEFLAGS value for the build.
  std::string makeflags() const;
  /// One sample and its decisions (the thread calls it every period).
  void tick();
  /// Stops sampling, continues every stopped job, withdraws the tokens; the report.
  GovernorReport finish();

 private:
  explicit MemoryGovernor(GovernorOptions options);
  void loop();
  void continue_all(const char* why);
  void record_unit_peak(const std::string& unit, uint64_t peak, uint64_t cpu_ms);
  /// The jobs seen before that `s` no longer has: ended; a finished compile teaches its peak.
  void retire_ended_jobs(const TreeSample& s);
  void signal_job(const CompileJob& job, int sig);
  uint64_t expected_peak(const std::string& kind) const;
  uint64_t new_job_peak() const;
  void record(const PolicyDecision& d, const TreeSample& s, uint64_t available, size_t running,
              size_t stopped);

  GovernorOptions m_opt;
  const GovernorSettings& m_settings;
  std::unique_ptr<FifoJobserver> m_jobserver;
  std::chrono::steady_clock::time_point m_t0;
  std::mutex m_mutex;
  std::thread m_thread;
  std::atomic<bool> m_stop{false};
  bool m_finished = false;
  bool m_interrupted = false;
  GovernorReport m_report;
  size_t m_stride = 1, m_tick_count = 0;
  struct Seen {
    std::string kind;
    uint64_t peak = 0;
    uint64_t cpu_ms = 0;
    pid_t pgid = 0;
    std::vector<pid_t> pids;
    bool stopped_by_us = false;
    std::string unit;
    bool holds_memory = true;  ///< false: a waiting cache client (teaches nothing)
    bool compiled =
        false;  ///< a compiler of its kind was seen in it (else a cache hit: teaches nothing)
  };
  std::map<std::pair<pid_t, uint64_t>, Seen> m_jobs;  ///< (pid, start) -> what we saw
  std::map<std::string, uint64_t> m_learned;   ///< finished jobs' peaks by kind, and known ones
  std::map<std::string, uint64_t> m_measured;  ///< finished jobs' peaks by kind, this build
  std::map<std::string, uint64_t> m_running_peaks;  ///< running jobs' peaks by kind
};

/// `make` for a governed build's steps when the real one (`real_make`, older than 4.4)
/// cannot read the fifo jobserver (it stops with "invalid --jobserver-auth string"; GCC's
/// LTO link runs make through lto-wrapper): a script that drops the jobserver and -j from
/// MAKEFLAGS and runs the real make, written through `disk` in `dir` as `make` and as `gmake`
/// (which CMake's Makefile generator prefers). Returns `dir`, to put first on PATH.
Expected<std::string> write_make_shim(DiskInterface& disk, const std::string& dir,
                                      const std::string& real_make);

}  // namespace tailor::governor
