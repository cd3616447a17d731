#include "governor/memory_governor.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <deque>
#include <filesystem>
#include <unordered_map>

#include "util/files.h"
#include "util/interrupt.h"
#include "util/strings.h"

namespace tailor::governor {

namespace {

constexpr uint64_t k_mib = 1ull << 20;

uint64_t parse_u64_or0(std::string_view s) {
  uint64_t v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

/// A small file under /proc read whole (stat lines are short; cmdline is capped).
std::optional<std::string> read_small(const std::string& path, size_t cap) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string out;
  char buf[4096];
  while (out.size() < cap) {
    ssize_t n = ::read(fd, buf, std::min(sizeof buf, cap - out.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

/// nvcc's --threads N / --threads=N / -t N / -tN; 1 when absent.
int nvcc_threads(const std::vector<std::string>& argv) {
  for (size_t i = 0; i < argv.size(); ++i) {
    std::string_view a = argv[i], v;
    if ((a == "--threads" || a == "-t") && i + 1 < argv.size())
      v = argv[i + 1];
    else if (a.rfind("--threads=", 0) == 0)
      v = a.substr(10);
    else if (a.rfind("-t", 0) == 0 && a.size() > 2 && a[2] >= '0' && a[2] <= '9')
      v = a.substr(2);
    else
      continue;
    int n = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec == std::errc() && p == v.data() + v.size() && n >= 1 && n <= 1024) return n;
  }
  return 1;
}

bool is_stopped_state(char s) { return s == 'T' || s == 't'; }

}  // namespace

// ---- the process tree -------------------------------------------------------------------

std::optional<ProcessSample> parse_proc_stat(std::string_view text, uint64_t page_size,
                                             uint64_t ticks_per_second) {
  auto open = text.find('(');
  auto close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open)
    return std::nullopt;
  ProcessSample p;
  int pid = 0;
  std::string_view head = trim(text.substr(0, open));
  auto [ptr, ec] = std::from_chars(head.data(), head.data() + head.size(), pid);
  if (ec != std::errc() || ptr != head.data() + head.size() || pid <= 0) return std::nullopt;
  p.pid = pid;
  p.comm = std::string(text.substr(open + 1, close - open - 1));
  auto fields = split_any(text.substr(close + 1), " \n");
  // After "(comm)": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
  // utime stime cutime cstime priority nice threads itrealvalue starttime vsize rss ...
  if (fields.size() < 22 || fields[0].size() != 1) return std::nullopt;
  p.state = fields[0][0];
  p.ppid = static_cast<pid_t>(parse_u64_or0(fields[1]));
  p.pgid = static_cast<pid_t>(parse_u64_or0(fields[2]));
  p.start = parse_u64_or0(fields[19]);
  p.rss = parse_u64_or0(fields[21]) * page_size;
  uint64_t ticks = 0;
  for (size_t f = 11; f <= 14; ++f) ticks += parse_u64_or0(fields[f]);
  p.cpu_ms = ticks * 1000 / std::max<uint64_t>(1, ticks_per_second);
  return p;
}

ProcFsTable::ProcFsTable(std::string root, const GovernorSettings* settings)
    : m_root(std::move(root)) {
  const GovernorSettings& s = settings ? *settings : governor_settings();
  m_argv_names.insert("nvcc");
  // Ninja runs each command as `/bin/sh -c COMMAND`: its `-o` names the unit (job_output).
  m_argv_names.insert({"sh", "dash", "bash"});
  for (const auto& k : s.kinds) m_argv_names.insert(k.compilers.begin(), k.compilers.end());
}

std::vector<ProcessSample> ProcFsTable::snapshot() {
  std::vector<ProcessSample> out;
  static const uint64_t page = static_cast<uint64_t>(std::max(1L, sysconf(_SC_PAGESIZE)));
  static const uint64_t ticks = static_cast<uint64_t>(std::max(1L, sysconf(_SC_CLK_TCK)));
  DIR* dir = ::opendir(m_root.c_str());
  if (!dir) return out;
  while (dirent* e = ::readdir(dir)) {
    const char* n = e->d_name;
    if (*n < '1' || *n > '9') continue;
    std::string base = m_root + "/" + n;
    auto text = read_small(base + "/stat", 4096);
    if (!text) continue;  // gone between readdir and open
    auto p = parse_proc_stat(*text, page, ticks);
    if (!p) continue;
    if (m_argv_names.count(p->comm)) {
      if (auto cmd = read_small(base + "/cmdline", 256 * 1024)) {
        size_t start = 0;
        for (size_t i = 0; i <= cmd->size(); ++i)
          if (i == cmd->size() || (*cmd)[i] == '\0') {
            if (i > start) p->argv.push_back(cmd->substr(start, i - start));
            start = i + 1;
          }
      }
    }
    out.push_back(std::move(*p));
  }
  ::closedir(dir);
  return out;
}

std::string job_kind(const std::vector<const ProcessSample*>& subtree,
                     const GovernorSettings& settings) {
  for (const auto& rule : settings.kinds) {
    for (const ProcessSample* p : subtree) {
      if (std::find(rule.processes.begin(), rule.processes.end(), p->comm) == rule.processes.end())
        continue;
      if (!rule.threads_flag) return rule.name;
      int threads = 1;
      for (const ProcessSample* q : subtree)
        if (q->comm == "nvcc") threads = std::max(threads, nvcc_threads(q->argv));
      return threads > 1 ? fmt::format("{} --threads {}", rule.name, threads) : rule.name;
    }
  }
  return "other";
}

bool job_compiles(const std::vector<const ProcessSample*>& subtree,
                  const GovernorSettings& settings) {
  auto preprocessing = [&](const ProcessSample* p) {
    return std::any_of(p->argv.begin(), p->argv.end(), [&](const std::string& a) {
      return std::find(settings.preprocess_flags.begin(), settings.preprocess_flags.end(), a) !=
             settings.preprocess_flags.end();
    });
  };
  // The job's kind is the first rule with a process in it (job_kind): its compilers decide.
  for (const auto& rule : settings.kinds) {
    bool is_kind = std::any_of(subtree.begin(), subtree.end(), [&](const ProcessSample* p) {
      return std::find(rule.processes.begin(), rule.processes.end(), p->comm) !=
             rule.processes.end();
    });
    if (!is_kind) continue;
    return std::any_of(subtree.begin(), subtree.end(), [&](const ProcessSample* p) {
      return std::find(rule.compilers.begin(), rule.compilers.end(), p->comm) !=
                 rule.compilers.end() &&
             !preprocessing(p);
    });
  }
  return false;
}

std::string job_output(const std::vector<const ProcessSample*>& subtree) {
  auto after_o = [](const std::vector<std::string>& words) -> std::string {
    std::string out;
    for (size_t i = 0; i + 1 < words.size(); ++i)
      if (words[i] == "-o") out = words[i + 1];
    return out;
  };
  for (const ProcessSample* p : subtree) {
    const auto& a = p->argv;
    // The shell's one command string, split on blanks (Ninja's paths have none).
    const bool shell = p->comm == "sh" || p->comm == "dash" || p->comm == "bash";
    if (shell && a.size() >= 3 && a[1] == "-c") {
      if (auto out = after_o(split_any(a[2], " \t\n")); !out.empty()) return out;
    } else if (!shell) {
      if (auto out = after_o(a); !out.empty() && out.rfind("/tmp/", 0) != 0) return out;
    }
  }
  return "";
}

TreeSample group_tree(const std::vector<ProcessSample>& procs, pid_t root,
                      const GovernorSettings& settings, const std::vector<pid_t>& servers) {
  TreeSample s;
  std::unordered_map<pid_t, std::vector<const ProcessSample*>> children;
  std::unordered_map<pid_t, const ProcessSample*> by_pid;
  for (const auto& p : procs) {
    if (p.pid != p.ppid) children[p.ppid].push_back(&p);
    by_pid[p.pid] = &p;
  }
  auto subtree = [&](const ProcessSample* top) {
    std::vector<const ProcessSample*> out{top};
    for (size_t i = 0; i < out.size() && out.size() < 100000; ++i) {
      auto it = children.find(out[i]->pid);
      if (it != children.end()) out.insert(out.end(), it->second.begin(), it->second.end());
    }
    return out;
  };
  auto is_client = [&](const ProcessSample* p) {
    return std::find(settings.cache_clients.begin(), settings.cache_clients.end(), p->comm) !=
           settings.cache_clients.end();
  };
  auto add_job = [&](const ProcessSample* top, bool slot, bool holds_memory) {
    auto members = subtree(top);
    CompileJob job;
    job.slot = slot;
    job.holds_memory = holds_memory;
    job.pid = top->pid;
    job.pgid = top->pgid;
    job.start = top->start;
    job.kind = job_kind(members, settings);
    job.compiles = job_compiles(members, settings);
    job.unit = job_output(members);
    job.stopped = true;
    for (const ProcessSample* m : members) {
      job.rss += m->rss;
      job.cpu_ms += m->cpu_ms;
      job.pids.push_back(m->pid);
      if (!is_stopped_state(m->state)) job.stopped = false;
    }
    s.jobs.push_back(std::move(job));
  };
  std::vector<const ProcessSample*> all;
  std::unordered_map<pid_t, bool> seen;
  auto collect = [&](const ProcessSample* top) {
    for (const ProcessSample* p : subtree(top))
      if (!seen[p->pid]) {
        seen[p->pid] = true;
        all.push_back(p);
      }
  };
  if (auto it = children.find(root); it != children.end())
    for (const ProcessSample* c : it->second) collect(c);
  std::vector<const ProcessSample*> server_procs;
  for (pid_t sp : servers)
    if (auto it = by_pid.find(sp); it != by_pid.end() && sp != root && !seen[sp]) {
      server_procs.push_back(it->second);
      collect(it->second);
    }
  std::vector<pid_t> ninja_parents;
  for (const ProcessSample* p : all) {
    s.tree_rss += p->rss;
    if (std::find(settings.report_processes.begin(), settings.report_processes.end(), p->comm) !=
        settings.report_processes.end())
      s.process_rss[p->comm] = std::max(s.process_rss[p->comm], p->rss);
    if (p->comm != "ninja") continue;
    // A jobserver client's implicit token: one per process that starts Ninjas. Like GNU
    // make, the build driver takes a token for every Ninja it runs beside its first (its
    // modules at once), so Ninjas of one parent share one implicit token.
    if (std::find(ninja_parents.begin(), ninja_parents.end(), p->ppid) == ninja_parents.end()) {
      ninja_parents.push_back(p->ppid);
      ++s.clients;
    }
    auto it = children.find(p->pid);
    if (it == children.end()) continue;
    for (const ProcessSample* top : it->second) {
      // A cache client alone (no compiler under it) waits on its server: the compile is
      // the server's child, counted there.
      bool waiting = false;
      if (!server_procs.empty()) {
        auto members = subtree(top);
        waiting = std::all_of(members.begin(), members.end(), is_client);
      }
      add_job(top, true, !waiting);
    }
  }
  for (const ProcessSample* server : server_procs)
    if (auto it = children.find(server->pid); it != children.end())
      for (const ProcessSample* top : it->second) add_job(top, false, true);
  std::sort(s.jobs.begin(), s.jobs.end(), [](const CompileJob& a, const CompileJob& b) {
    return std::tie(a.start, a.pid) < std::tie(b.start, b.pid);
  });
  return s;
}

// ---- the governor -----------------------------------------------------------------------

MemoryGovernor::MemoryGovernor(GovernorOptions options)
    : m_opt(std::move(options)),
      m_settings(m_opt.settings ? *m_opt.settings : governor_settings()) {}

Expected<std::unique_ptr<MemoryGovernor>> MemoryGovernor::start(GovernorOptions options) {
  std::unique_ptr<MemoryGovernor> g(new MemoryGovernor(std::move(options)));
  if (g->m_opt.root == 0) g->m_opt.root = getpid();
  if (!g->m_opt.table) g->m_opt.table = std::make_shared<ProcFsTable>();
  if (!g->m_opt.signal_fn) g->m_opt.signal_fn = [](pid_t p, int sig) { return ::kill(p, sig); };
  g->m_opt.max_jobs = std::max<size_t>(1, g->m_opt.max_jobs);
  auto js = FifoJobserver::create(g->m_opt.fifo_path, 0);
  if (!js) return make_error(js.error().message);
  g->m_jobserver = std::move(*js);
  GovernorReport& r = g->m_report;
  r.mode = "governor";
  r.reason = g->m_opt.reason;
  r.budget = g->m_opt.budget;
  r.prior = g->m_opt.prior_job_bytes;
  r.max_jobs = g->m_opt.max_jobs;
  r.known_peaks = g->m_opt.known_peaks;
  r.known_builds = g->m_opt.known_builds;
  g->m_learned = g->m_opt.known_peaks;
  uint64_t limit = g->m_opt.budget ? *g->m_opt.budget : g->m_opt.limit_bytes;
  r.reserve = std::max<uint64_t>(
      g->m_settings.reserve_min_bytes,
      static_cast<uint64_t>(g->m_settings.reserve_fraction * static_cast<double>(limit)));
  if (g->m_opt.budget) r.reserve = std::min(r.reserve, *g->m_opt.budget / 4);
  g->m_t0 = std::chrono::steady_clock::now();
  g->tick();  // the first tokens before the build starts
  if (g->m_opt.own_thread) g->m_thread = std::thread([p = g.get()] { p->loop(); });
  return g;
}

MemoryGovernor::~MemoryGovernor() { finish(); }

std::string MemoryGovernor::makeflags() const {
  return m_jobserver ? m_jobserver->makeflags(m_opt.max_jobs) : "";
}

void MemoryGovernor::loop() {
  const auto slice = std::chrono::milliseconds(25);
  while (!m_stop) {
    auto until = std::chrono::steady_clock::now() + m_settings.sample_period;
    while (!m_stop && std::chrono::steady_clock::now() < until) {
      if (interrupt_signal() != 0) {
        // Continue every stopped job at once: the runner's signal and kill come next.
        std::lock_guard lock(m_mutex);
        m_interrupted = true;
        continue_all("interrupt");
        return;
      }
      std::this_thread::sleep_for(slice);
    }
    if (!m_stop) tick();
  }
}

uint64_t MemoryGovernor::expected_peak(const std::string& kind) const {
  uint64_t running = 0;
  if (auto it = m_running_peaks.find(kind); it != m_running_peaks.end()) running = it->second;
  if (auto it = m_learned.find(kind); it != m_learned.end()) return std::max(it->second, running);
  return std::max(m_opt.prior_job_bytes, running);
}

uint64_t MemoryGovernor::new_job_peak() const {
  if (m_learned.empty()) return m_opt.prior_job_bytes;
  uint64_t peak = 0;
  for (const auto& [k, v] : m_learned) peak = std::max(peak, v);
  for (const auto& [k, v] : m_running_peaks) peak = std::max(peak, v);
  return static_cast<uint64_t>(static_cast<double>(peak) * m_settings.new_job_margin);
}

void MemoryGovernor::record_unit_peak(const std::string& unit, uint64_t peak, uint64_t cpu_ms) {
  if (unit.empty()) return;
  auto& peaks = m_report.unit_peaks;
  if (auto it = peaks.find(unit); it != peaks.end()) {
    it->second = std::max(it->second, peak);
    m_report.unit_cpu_ms[unit] = std::max(m_report.unit_cpu_ms[unit], cpu_ms);
  } else if (peaks.size() < m_settings.max_unit_peaks) {
    peaks.emplace(unit, peak);
    m_report.unit_cpu_ms[unit] = cpu_ms;
  } else {
    ++m_report.unit_peaks_dropped;
  }
}

void MemoryGovernor::signal_job(const CompileJob& job, int sig) {
  if (job.pgid == job.pid && job.pgid > 1) m_opt.signal_fn(-job.pgid, sig);
  for (pid_t p : job.pids)
    if (p > 1) m_opt.signal_fn(p, sig);
}

void MemoryGovernor::continue_all(const char* why) {
  for (auto& [key, seen] : m_jobs) {
    if (!seen.stopped_by_us) continue;
    CompileJob job;
    job.pid = key.first;
    job.pgid = seen.pgid;
    job.pids = seen.pids;
    signal_job(job, SIGCONT);
    seen.stopped_by_us = false;
    ++m_report.stops_left_over;
    if (m_report.brakes.size() < m_settings.max_brake_events)
      m_report.brakes.push_back(
          {std::chrono::duration<double>(std::chrono::steady_clock::now() - m_t0).count(),
           std::string("continue (") + why + ")", key.first, seen.kind, 0, 0});
    ++m_report.brake_count;
  }
}

void MemoryGovernor::tick() {
  std::lock_guard lock(m_mutex);
  if (m_finished || m_interrupted) return;
  TreeSample s = group_tree(m_opt.table->snapshot(), m_opt.root, m_settings, m_opt.cache_servers);
  uint64_t system = m_opt.available ? m_opt.available() : 0;
  uint64_t available = system;
  if (m_opt.budget) {
    uint64_t room = *m_opt.budget > s.tree_rss ? *m_opt.budget - s.tree_rss : 0;
    available = system == 0 ? room : std::min(system, room);
  }
  // Jobs that finished teach their kind's peak; after an interrupt, jobs end because they
  // were killed, and their peaks so far teach nothing. Nor does a job in which no compiler
  // of its kind ran (a compiler cache's hit, governor.toml): its memory is the cache's
  // lookup, not the compile's, and would lower the peak the next real compile needs.
  retire_ended_jobs(s);
  m_running_peaks.clear();
  PolicyInput in;
  in.available = available;
  in.reserve = m_report.reserve;
  in.max_jobs = m_opt.max_jobs;
  in.clients = std::max<size_t>(1, s.clients);
  for (const auto& j : s.jobs) {
    Seen& seen = m_jobs[{j.pid, j.start}];
    if (seen.kind.empty() || (seen.kind == "other" && j.kind != "other")) seen.kind = j.kind;
    seen.peak = std::max(seen.peak, j.rss);
    seen.cpu_ms = std::max(seen.cpu_ms, j.cpu_ms);
    seen.pgid = j.pgid;
    if (!seen.stopped_by_us || seen.pids.empty()) seen.pids = j.pids;
    seen.holds_memory = j.holds_memory;
    seen.compiled = seen.compiled || j.compiles;
    if (seen.unit.empty()) seen.unit = j.unit;
    if (seen.holds_memory)
      m_running_peaks[seen.kind] = std::max(m_running_peaks[seen.kind], seen.peak);
  }
  size_t running = 0, stopped = 0;
  for (const auto& j : s.jobs) {
    const Seen& seen = m_jobs[{j.pid, j.start}];
    JobView v;
    v.pid = j.pid;
    v.start = j.start;
    v.rss = j.rss;
    v.expected_peak = j.holds_memory ? std::max(j.rss, expected_peak(seen.kind)) : j.rss;
    v.stopped = seen.stopped_by_us;
    v.slot = j.slot;
    v.holds_memory = j.holds_memory;
    (v.stopped ? stopped : running) += 1;
    in.jobs.push_back(v);
  }
  in.new_job_peak = new_job_peak();
  PolicyDecision d = decide(in);
  const size_t running_seen = running;  // at once, before this sample's brake
  auto event = [&](const CompileJob& j, const char* action) {
    ++m_report.brake_count;
    if (m_report.brakes.size() < m_settings.max_brake_events)
      m_report.brakes.push_back(
          {std::chrono::duration<double>(std::chrono::steady_clock::now() - m_t0).count(), action,
           j.pid, m_jobs[{j.pid, j.start}].kind, j.rss / k_mib, available / k_mib});
  };
  for (const auto& j : s.jobs) {
    Seen& seen = m_jobs[{j.pid, j.start}];
    if (d.stop && *d.stop == j.pid) {
      signal_job(j, SIGSTOP);
      seen.stopped_by_us = true;
      seen.pids = j.pids;
      event(j, "stop");
      --running, ++stopped;
    } else if (d.resume && *d.resume == j.pid) {
      signal_job(j, SIGCONT);
      seen.stopped_by_us = false;
      event(j, "continue");
      ++running, --stopped;
    }
  }
  if (d.tokens > m_jobserver->minted())
    m_jobserver->mint(d.tokens - m_jobserver->minted());
  else if (d.tokens < m_jobserver->minted())
    m_jobserver->withdraw(m_jobserver->minted() - d.tokens);
  // The report.
  GovernorReport& r = m_report;
  ++r.samples;
  r.peak_build_rss = std::max(r.peak_build_rss, s.tree_rss);
  r.max_running = std::max(r.max_running, running_seen);
  for (const auto& [k, v] : s.process_rss) r.process_peaks[k] = std::max(r.process_peaks[k], v);
  for (const auto& [k, v] : m_measured) r.job_peaks[k] = std::max(r.job_peaks[k], v);
  r.finished_peaks = m_measured;
  for (const auto& [k, v] : m_running_peaks) r.job_peaks[k] = std::max(r.job_peaks[k], v);
  if (m_tick_count++ % m_stride == 0) {
    r.series.push_back(
        {std::chrono::duration<double>(std::chrono::steady_clock::now() - m_t0).count(),
         m_jobserver->minted(), running, stopped, available / k_mib, s.tree_rss / k_mib});
    if (r.series.size() >= m_settings.max_series_points) {
      // Thin to every other point and sample half as often from now on.
      std::vector<GovernorPoint> kept;
      for (size_t i = 0; i < r.series.size(); i += 2) kept.push_back(r.series[i]);
      r.series = std::move(kept);
      m_stride *= 2;
    }
  }
}

void MemoryGovernor::retire_ended_jobs(const TreeSample& s) {
  const bool learning = interrupt_signal() == 0;
  std::set<std::pair<pid_t, uint64_t>> now;
  for (const auto& j : s.jobs) now.insert({j.pid, j.start});
  for (auto it = m_jobs.begin(); it != m_jobs.end();) {
    if (now.count(it->first)) {
      ++it;
      continue;
    }
    if (learning && !it->second.stopped_by_us && it->second.holds_memory && it->second.compiled) {
      m_learned[it->second.kind] = std::max(m_learned[it->second.kind], it->second.peak);
      m_measured[it->second.kind] = std::max(m_measured[it->second.kind], it->second.peak);
      record_unit_peak(it->second.unit, it->second.peak, it->second.cpu_ms);
    }
    it = m_jobs.erase(it);
  }
}

GovernorReport MemoryGovernor::finish() {
  m_stop = true;
  if (m_thread.joinable()) m_thread.join();
  std::lock_guard lock(m_mutex);
  if (m_finished) return m_report;
  m_finished = true;
  continue_all("end of the build");
  // Any process of a job we stopped that the records missed (forked before the stop).
  TreeSample s = group_tree(m_opt.table->snapshot(), m_opt.root, m_settings, m_opt.cache_servers);
  for (const auto& j : s.jobs)
    if (j.stopped) signal_job(j, SIGCONT);
  // The jobs that ended after the last sample (the build's last unit, most often) teach
  // what they were seen to use, as a sample would have had them.
  retire_ended_jobs(s);
  for (const auto& [k, v] : m_measured) m_report.job_peaks[k] = std::max(m_report.job_peaks[k], v);
  m_report.finished_peaks = m_measured;
  if (m_jobserver) {
    m_jobserver->withdraw(m_jobserver->minted());
    m_jobserver.reset();
  }
  return m_report;
}

Expected<std::string> write_make_shim(DiskInterface& disk, const std::string& dir,
                                      const std::string& real_make) {
  const std::string script =
      "#!/bin/sh\n"
      "# Written by tailor: GNU make older than 4.4 cannot read the fifo jobserver of tailor's "
      "memory\n"
      "# governor (--jobserver-auth=fifo:...) and stops with \"invalid --jobserver-auth "
      "string\"; GCC's\n"
      "# LTO link runs make. This runs it as a make started outside any jobserver.\n"
      "MAKEFLAGS=$(printf '%s' \"$MAKEFLAGS\" | sed 's/--jobserver-auth=fifo:[^ ]*//g; "
      "s/--jobserver-fds=[^ ]*//g; "
      "s/\\(^\\| \\)-j[0-9]*//g')\n"
      "export MAKEFLAGS\n"
      "exec " +
      shell_quote(real_make) + " \"$@\"\n";
  // Both names: CMake's Makefile generator runs `gmake` where there is one (Ubuntu's
  // /usr/bin/gmake), before `make` (torch-kdtree 1.0 stopped on its fifo that way).
  if (auto made = disk.make_dirs(dir); !made)
    return make_error("make shim: " + made.error().message);
  for (const char* name : {"make", "gmake"})
    if (auto w = disk.write(dir + "/" + name, script, true); !w)
      return make_error("make shim: " + w.error().message);
  return dir;
}

}  // namespace tailor::governor
