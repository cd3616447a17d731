#include "builder/build_runner.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <filesystem>
#include <functional>
#include <mutex>
#include <thread>

#include "util/interrupt.h"
#include "util/oom.h"
#include "util/strings.h"
#include "util/terminal_style.h"

namespace tailor::builder {
namespace {

/// One step's output into the run's log, bounded (k_log_head_bytes, k_log_tail_bytes): past
/// the head, the step's last bytes wait in a fixed ring and go into the log at its end.
class BoundedStepOutput {
 public:
  BoundedStepOutput(LogFile& log, uint64_t& head_written) : m_log(log), m_head(head_written) {}
  void line(std::string_view text) {
    if (m_cut == 0 && m_ring.empty() && m_head + text.size() + 1 <= k_log_head_bytes) {
      m_log.append(text);
      m_log.append("\n");
      m_head += text.size() + 1;
      return;
    }
    if (m_ring.empty()) m_ring.assign(k_log_tail_bytes, '\0');
    put(text);
    put("\n");
  }
  /// The kept tail, after the line that says what was cut.
  void finish() {
    if (m_ring.empty()) return;
    std::string tail =
        m_wrapped ? m_ring.substr(m_pos) + m_ring.substr(0, m_pos) : m_ring.substr(0, m_pos);
    if (m_wrapped) {  // start at a whole line
      size_t nl = tail.find('\n');
      size_t drop = nl == std::string::npos ? tail.size() : nl + 1;
      m_cut += drop;
      tail.erase(0, drop);
    }
    if (m_cut > 0)
      m_log.append(fmt::format(
          "### tailor: {} bytes of this step's output cut here (the log keeps the first {} MiB "
          "of the run's output and the last {} MiB of each step)\n",
          m_cut, k_log_head_bytes >> 20, k_log_tail_bytes >> 20));
    m_log.append(tail);
    m_ring.clear();
    m_ring.shrink_to_fit();
  }

 private:
  void put(std::string_view text) {
    while (!text.empty()) {
      size_t n = std::min(text.size(), m_ring.size() - m_pos);
      if (m_wrapped) m_cut += n;  // the bytes overwritten leave the log
      m_ring.replace(m_pos, n, text.substr(0, n));
      text.remove_prefix(n);
      m_pos += n;
      if (m_pos == m_ring.size()) {
        m_pos = 0;
        m_wrapped = true;
      }
    }
  }
  LogFile& m_log;
  uint64_t& m_head;
  std::string m_ring;
  size_t m_pos = 0;
  bool m_wrapped = false;
  uint64_t m_cut = 0;
};

/// What the kernel says of a step killed by SIGKILL: its OOM line, the cgroup's count of
/// OOM kills since the step started, or that neither says.
std::string oom_evidence(std::optional<uint64_t> oom_before, uint64_t kernel_log_since) {
  std::string line = kernel_oom_message(kernel_log_since);
  std::optional<uint64_t> after = cgroup_oom_kills();
  uint64_t kills = oom_before && after && *after > *oom_before ? *after - *oom_before : 0;
  if (!line.empty()) return "the kernel's out-of-memory killer: " + line;
  if (kills > 0)
    return fmt::format(
        "the kernel's out-of-memory killer ({} OOM kill{} in this cgroup's "
        "memory.events during the step)",
        kills, kills == 1 ? "" : "s");
  return "no OOM message readable here (the kernel log needs root; the cgroup counted none), "
         "most often still the kernel's out-of-memory killer";
}

/// The descriptor the build driver writes its events to: a memory file of `max` bytes,
/// sealed against growth, inherited by the steps (not close-on-exec). The driver's writes
/// past the bound fail (it goes on without them); unwritten bytes read as NUL, where the
/// reader stops. -1 when none can be made: the steps then run without events.
class EventsFile {
 public:
  explicit EventsFile(uint64_t max) {
    m_fd = ::memfd_create("tailor-build-events", MFD_ALLOW_SEALING);
    if (m_fd < 0) return;
    if (::ftruncate(m_fd, static_cast<off_t>(max)) != 0 ||
        ::fcntl(m_fd, F_ADD_SEALS, F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) != 0) {
      ::close(m_fd);
      m_fd = -1;
    }
  }
  ~EventsFile() {
    if (m_fd >= 0) ::close(m_fd);
  }
  EventsFile(const EventsFile&) = delete;
  EventsFile& operator=(const EventsFile&) = delete;
  int fd() const { return m_fd; }

 private:
  int m_fd = -1;
};

constexpr uint64_t k_max_events = uint64_t{4} << 20;
constexpr size_t k_tail_bytes = size_t{8} << 20;
constexpr size_t k_tail_lines = 100000;
constexpr size_t k_head_bytes = size_t{1} << 20;
constexpr size_t k_head_lines = 5000;

/// The log's writer: every line goes to the file and to the run's tail.
class LogWriter {
 public:
  LogWriter(LogFile& log, LogTail& tail) : m_log(log), m_tail(tail) {}
  /// A new step: the tail starts at its first line.
  void start_step() {
    m_lines.clear();
    m_bytes = 0;
    m_tail.first_line = m_written + 1;
    m_head.clear();
    m_head_bytes = 0;
    m_step_first = m_written + 1;
  }
  void write(std::string_view text) {
    m_log.append(text);
    for (size_t at = 0; at < text.size();) {
      size_t nl = text.find('\n', at);
      m_open.append(text.substr(at, nl == std::string_view::npos ? nl : nl - at));
      if (nl == std::string_view::npos) break;
      end_line();
      at = nl + 1;
    }
  }
  void line(std::string_view text) {
    m_log.append(text);
    m_log.append("\n");
    m_open.append(text);
    end_line();
  }
  /// A line the caller wrote to the log file itself (a step's output, bounded there): into
  /// the tail only.
  void tail_only(std::string_view text) {
    m_open.append(text);
    end_line();
  }
  void flush() { m_log.flush(); }
  /// The tail as its readers take it.
  void finish() {
    if (!m_open.empty()) end_line();
    m_tail.lines.assign(std::make_move_iterator(m_lines.begin()),
                        std::make_move_iterator(m_lines.end()));
    m_tail.head.clear();
    if (m_tail.first_line > m_step_first) {  // the tail lost the step's first lines
      m_tail.head = std::move(m_head);
      m_tail.head_first_line = m_step_first;
    }
  }

 private:
  void end_line() {
    ++m_written;
    if (m_head.size() < k_head_lines && m_head_bytes + m_open.size() <= k_head_bytes) {
      m_head_bytes += m_open.size();
      m_head.push_back(m_open);
    }
    m_bytes += m_open.size();
    m_lines.push_back(std::move(m_open));
    m_open.clear();
    while (!m_lines.empty() && (m_bytes > k_tail_bytes || m_lines.size() > k_tail_lines)) {
      m_bytes -= m_lines.front().size();
      m_lines.pop_front();
      ++m_tail.first_line;
    }
  }
  LogFile& m_log;
  LogTail& m_tail;
  std::deque<std::string> m_lines;
  std::string m_open;
  size_t m_bytes = 0;
  size_t m_written = 0;
  std::vector<std::string> m_head;  // the step's first lines
  size_t m_head_bytes = 0;
  size_t m_step_first = 1;
};

}  // namespace

void NinjaStepCount::add(const NinjaStatus& s) {
  const auto n = static_cast<uint64_t>(s.done), total = static_cast<uint64_t>(s.total);
  if (m_any && n < m_last_n) {  // a new invocation
    m_sum += m_current_max;
    m_current_max = 0;
  }
  m_current_max = std::max(m_current_max, total);
  m_last_n = n;
  m_any = true;
}

std::optional<uint64_t> NinjaStepCount::steps() const {
  if (!m_any) return std::nullopt;
  return m_sum + m_current_max;
}

namespace {
std::string joined_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) {
    out += l;
    out += '\n';
  }
  return out;
}
}  // namespace

std::string LogTail::text() const { return joined_lines(lines); }
std::string LogTail::head_text() const { return joined_lines(head); }

bool RunOutcome::ok() const {
  if (steps.empty()) return false;
  for (const auto& s : steps)
    if (!s.ok()) return false;
  return true;
}

std::vector<plan::Step> plan_steps(const plan::BuildPlan& plan,
                                   const std::map<std::string, std::string>& build_env,
                                   const std::map<std::string, std::string>& caller_env,
                                   const std::string& default_cwd) {
  std::vector<plan::Step> out;
  out.reserve(plan.steps.size());
  for (plan::Step step : plan.steps) {
    if (step.cwd.empty()) step.cwd = default_cwd;
    if (step.uses_plan_env) {
      for (const auto& [k, v] : build_env) step.env.emplace(k, v);
      if (!plan.path_prepend.empty()) {
        auto path = caller_env.find("PATH");
        step.env["PATH"] = plan.path_prepend + (path == caller_env.end() ? "" : ":" + path->second);
      }
      for (const auto& v : plan.unset_env)
        if (std::find(step.unset_env.begin(), step.unset_env.end(), v) == step.unset_env.end())
          step.unset_env.push_back(v);
    }
    out.push_back(std::move(step));
  }
  return out;
}

std::string render_step_shell(const plan::Step& step) {
  std::string line;
  if (!step.cwd.empty()) line += "cd " + shell_quote(step.cwd) + " && ";
  for (const auto& v : step.unset_env) line += "unset " + v + "; ";
  for (const auto& [k, v] : step.env) line += k + "=" + shell_quote(v) + " ";
  std::vector<std::string> quoted;
  for (const auto& a : step.argv) quoted.push_back(shell_quote(a));
  return line + join(quoted, " ");
}

Expected<std::string> start_run_log(DiskInterface& disk, const std::string& dir, size_t keep) {
  TAILOR_TRY_VOID(disk.make_dirs(dir));
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
  const std::string name = fmt::format("build-{}-{}.log", stamp, getpid());
  const std::string log = dir + "/" + name;
  TAILOR_TRY(file, disk.create_log(log));
  TAILOR_TRY_VOID(file->close());
  // build.log -> the newest run's log, replaced atomically.
  TAILOR_TRY_VOID(disk.point_link(dir + "/build.log", name));
  // The names sort by time: keep the newest `keep`.
  std::vector<std::string> logs;
  for (const auto& n : disk.list(dir))
    if (n.rfind("build-", 0) == 0 && n.size() > 4 && n.substr(n.size() - 4) == ".log")
      logs.push_back(n);
  std::sort(logs.begin(), logs.end());
  for (size_t i = 0; i + keep < logs.size(); ++i)
    if (logs[i] != name) disk.remove(dir + "/" + logs[i]);
  return log;
}

BuildRunner::BuildRunner(CommandRunner& runner, ProgressDisplay& display, DiskInterface& disk,
                         std::string log_path, ProgressTracker::Clock clock)
    : m_runner(runner),
      m_display(display),
      m_disk(disk),
      m_log_path(std::move(log_path)),
      m_clock(std::move(clock)) {}

Expected<RunOutcome> BuildRunner::run(const std::vector<plan::Step>& steps) {
  TAILOR_TRY(log_file, m_disk.create_log(m_log_path));
  RunOutcome outcome;
  outcome.log_path = m_log_path;
  BuildFacts& facts = outcome.facts;
  LogWriter log(*log_file, facts.tail);
  EventsFile events(k_max_events);
  DriverEventReader event_reader(events.fd(), k_max_events);
  NinjaStepCount ninja_steps;
  auto run_start = m_clock();
  ProgressTracker tracker(m_clock);
  uint64_t head_written = 0;  // the steps' output in the log, against k_log_head_bytes
  // The driver's events so far: the modules built at once give progress its total.
  auto read_events = [&] {
    if (events.fd() < 0) return;
    for (const auto& e : event_reader.poll(facts.driver))
      if (e.kind == "modules") tracker.package_units(facts.driver.modules, facts.driver.units);
  };
  for (size_t i = 0; i < steps.size(); ++i) {
    const plan::Step& step = steps[i];
    if (interrupt_signal() != 0) {
      outcome.interrupted = true;
      break;
    }
    log.start_step();
    log.write(fmt::format("### tailor step {}/{}: {} ({})\n### {}\n", i + 1, steps.size(),
                          step.title, utc_now_iso8601(), render_step_shell(step)));
    log.flush();
    m_display.step_started(step, i, steps.size());
    tracker.restart();

    CommandSpec spec;
    spec.argv = step.argv;
    spec.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(step.timeout);
    if (!step.cwd.empty()) spec.cwd = step.cwd;
    for (const auto& v : step.unset_env) spec.env[v] = std::nullopt;
    for (const auto& [k, v] : step.env) spec.env[k] = v;
    if (events.fd() >= 0)
      spec.env[k_events_fd_variable] = std::to_string(events.fd());
    else
      spec.env[k_events_fd_variable] = std::nullopt;
    spec.keep_output = false;
    // Each line read once: Ninja's status to the step count and progress, the rest to
    // progress; the driver's events before it (a modules event precedes its Ninja).
    BoundedStepOutput output(*log_file, head_written);
    spec.on_line = [&](std::string_view line) {
      output.line(line);  // the log file, bounded
      log.tail_only(line);
      read_events();
      bool moved = false;
      if (auto ninja = parse_ninja_status(line)) {
        ninja_steps.add(*ninja);
        moved = tracker.ninja_status(*ninja);
      } else {
        moved = tracker.other_line(line);
      }
      if (moved) m_display.progress(tracker.progress());
    };
    auto step_start = m_clock();
    const std::optional<uint64_t> oom_before = cgroup_oom_kills();
    const uint64_t kernel_log_since = kernel_log_now_us();
    CommandResult r = m_runner.run(spec);
    output.finish();
    if (r.output_held)
      log.write(
          "### tailor: the step had ended, and its output was still held open by a process "
          "outside its tree: not waited for\n");
    read_events();
    StepOutcome so;
    so.title = step.title;
    so.started = r.started;
    so.timed_out = r.timed_out;
    so.interrupted = r.interrupted;
    so.exit_code = r.exit_code;
    so.duration = std::chrono::duration_cast<std::chrono::milliseconds>(m_clock() - step_start);
    const double seconds = so.duration.count() / 1000.0;
    if (r.interrupted)
      log.write(fmt::format("### tailor step {} INTERRUPTED (signal {}) after {:.1f} s\n", i + 1,
                            interrupt_signal(), seconds));
    else if (!r.started)
      log.write(fmt::format("### tailor: could not start {}\n",
                            step.argv.empty() ? "(empty)" : step.argv[0]));
    else if (r.exit_code == 128 + SIGKILL && !r.timed_out)
      log.write(fmt::format("### tailor step {} KILLED (SIGKILL, exit 137) after {:.1f} s: {}\n",
                            i + 1, seconds, oom_evidence(oom_before, kernel_log_since)));
    else
      log.write(fmt::format("### tailor step {} {}: exit {}{} after {:.1f} s\n", i + 1,
                            so.ok() ? "finished" : "FAILED", r.exit_code,
                            r.timed_out ? " (timed out)" : "", seconds));
    log.flush();
    m_display.step_finished(so);
    outcome.steps.push_back(so);
    if (so.interrupted) outcome.interrupted = true;
    if (!so.ok()) break;
  }
  if (outcome.interrupted) {
    log.write(fmt::format("### tailor: interrupted by signal {}; the run stopped here\n",
                          interrupt_signal()));
    log.flush();
  }
  facts.ninja_steps = ninja_steps.steps();
  log.finish();
  outcome.duration = std::chrono::duration_cast<std::chrono::milliseconds>(m_clock() - run_start);
  TAILOR_TRY_VOID(log_file->close());
  return outcome;
}

}  // namespace tailor::builder
