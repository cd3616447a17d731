#include "builder/build_progress.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cmath>

#include "util/strings.h"

namespace tailor::builder {
namespace {

std::optional<int> parse_int(std::string_view s) {
  int v = 0;
  s = trim(s);
  if (s.empty()) return std::nullopt;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size()) return std::nullopt;
  return v;
}

bool is_source_file(std::string_view arg) {
  for (std::string_view ext : {".cu", ".cpp", ".cc", ".cxx", ".c", ".C"}) {
    if (arg.size() > ext.size() && arg.substr(arg.size() - ext.size()) == ext) return true;
  }
  return false;
}

std::string base_name(std::string_view path) {
  auto slash = path.find_last_of('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

std::string_view strip_quotes(std::string_view s) {
  while (!s.empty() && (s.front() == '\'' || s.front() == '"')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == '\'' || s.back() == '"')) s.remove_suffix(1);
  return s;
}

bool is_compiler_name(std::string_view name) {
  // A version suffix first: g++-12, x86_64-linux-gnu-g++-12, clang-17.
  if (auto dash = name.rfind('-');
      dash != std::string_view::npos && dash + 1 < name.size() &&
      name.find_first_not_of("0123456789.", dash + 1) == std::string_view::npos)
    name = name.substr(0, dash);
  for (std::string_view c : {"nvcc", "gcc", "g++", "c++", "cc", "clang", "clang++", "cl", "hipcc"})
    if (name == c) return true;
  // Target-prefixed compilers: x86_64-linux-gnu-gcc, aarch64-linux-gnu-g++.
  for (std::string_view c : {"-gcc", "-g++", "-c++"})
    if (name.size() > c.size() && name.ends_with(c)) return true;
  return false;
}

}  // namespace

std::optional<CompilerCall> parse_compiler_call(std::string_view line) {
  line = trim(line);
  if (line.empty() || line.size() > 64 * 1024) return std::nullopt;
  auto args = split_any(line, " \t");
  size_t at = 0;
  // A cache launcher in front: "ccache g++ ...", "/usr/bin/sccache nvcc ...".
  if (args.size() > 1) {
    std::string first = base_name(strip_quotes(args[0]));
    if (first == "ccache" || first == "sccache") at = 1;
  }
  if (at >= args.size()) return std::nullopt;
  std::string tool = base_name(strip_quotes(args[at]));
  if (!is_compiler_name(tool)) return std::nullopt;
  CompilerCall call;
  call.tool = tool;
  bool has_c = false, has_shared = false;
  std::string output, source;
  for (size_t i = at + 1; i < args.size(); ++i) {
    std::string_view a = strip_quotes(args[i]);
    if (a == "-c") {
      has_c = true;
      if (i + 1 < args.size() && is_source_file(strip_quotes(args[i + 1])))
        source = base_name(strip_quotes(args[i + 1]));
    } else if (a == "-shared") {
      has_shared = true;
    } else if (a == "-o" && i + 1 < args.size()) {
      output = base_name(strip_quotes(args[i + 1]));
    } else if (source.empty() && is_source_file(a)) {
      source = base_name(a);
    }
  }
  if (has_c && !source.empty()) {
    call.file = source;
    return call;
  }
  if (has_shared && !output.empty()) {
    call.file = output;
    call.link = true;
    return call;
  }
  return std::nullopt;
}

std::optional<std::string> parse_setuptools_extension(std::string_view line) {
  line = trim(line);
  constexpr std::string_view k_prefix = "building '";
  constexpr std::string_view k_suffix = "' extension";
  if (!line.starts_with(k_prefix) || !line.ends_with(k_suffix)) return std::nullopt;
  std::string_view name =
      line.substr(k_prefix.size(), line.size() - k_prefix.size() - k_suffix.size());
  if (name.empty() || name.find('\'') != std::string_view::npos) return std::nullopt;
  return std::string(name);
}

std::optional<std::string> parse_pip_phase(std::string_view line) {
  line = trim(line);
  if (line.size() > 4096) return std::nullopt;
  // "Processing ./src/pkg" / "Processing /abs/pkg.tar.gz"
  if (line.starts_with("Processing ")) return std::string(line);
  for (std::string_view phase :
       {"Preparing metadata", "Building wheel for ", "Building wheels for collected packages",
        "Getting requirements to build wheel", "Installing build dependencies"}) {
    if (!line.starts_with(phase)) continue;
    std::string_view shown = line;
    // "Building wheel for x (setup.py): started" -> drop ": started" / ": finished with status
    // 'done'".
    if (auto colon = shown.rfind("): "); colon != std::string_view::npos)
      shown = shown.substr(0, colon + 1);
    return std::string(shown);
  }
  // setuptools under the PEP 517 driver (no pip around it): the zip at the end, seconds
  // for a large wheel ("building 'x' extension" is parse_setuptools_extension's).
  if (line.starts_with("creating '") && line.find(".whl' and adding ") != std::string_view::npos)
    return std::string("writing the wheel");
  // "Created wheel for torch-scatter: filename=... size=... sha256=..."
  if (line.starts_with("Created wheel for ")) {
    auto colon = line.find(':');
    return std::string(line.substr(0, colon));
  }
  return std::nullopt;
}

std::optional<NinjaStatus> parse_ninja_status(std::string_view line) {
  // Ninja's default NINJA_STATUS is "[%f/%t] "; the line may carry a "\r" from a
  // terminal-style rewrite, and pip indents subprocess output.
  line = trim(line);
  if (line.size() < 5 || line.front() != '[') return std::nullopt;
  auto slash = line.find('/');
  auto close = line.find(']');
  if (slash == std::string_view::npos || close == std::string_view::npos || slash > close)
    return std::nullopt;
  auto done = parse_int(line.substr(1, slash - 1));
  auto total = parse_int(line.substr(slash + 1, close - slash - 1));
  if (!done || !total || *total <= 0 || *done < 0 || *done > *total) return std::nullopt;
  NinjaStatus s;
  s.done = *done;
  s.total = *total;
  s.command = std::string(trim(line.substr(close + 1)));
  return s;
}

std::optional<int> parse_cmake_percent(std::string_view line) {
  line = trim(line);
  if (line.size() < 6 || line.front() != '[') return std::nullopt;
  auto pct = line.find("%]");
  if (pct == std::string_view::npos || pct > 5) return std::nullopt;
  auto v = parse_int(line.substr(1, pct - 1));
  if (!v || *v < 0 || *v > 100) return std::nullopt;
  return v;
}

std::string current_file_from_command(std::string_view command) {
  // CMake: "Building CUDA object CMakeFiles/x.dir/src/foo.cu.o"
  for (std::string_view marker :
       {"Building CUDA object ", "Building CXX object ", "Building C object "}) {
    auto at = command.find(marker);
    if (at == std::string_view::npos) continue;
    std::string_view obj = trim(command.substr(at + marker.size()));
    if (obj.size() > 2 && obj.substr(obj.size() - 2) == ".o") obj.remove_suffix(2);
    return base_name(obj);
  }
  if (command.find("Linking ") != std::string_view::npos) {
    auto parts = split_any(command, " ");
    return parts.empty() ? std::string() : base_name(parts.back());
  }
  auto args = split_any(command, " \t");
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == "-c" && is_source_file(strip_quotes(args[i + 1])))
      return base_name(strip_quotes(args[i + 1]));
  }
  std::string last;
  for (const auto& a : args) {
    if (is_source_file(strip_quotes(a))) last = base_name(strip_quotes(a));
  }
  return last;
}

std::optional<std::chrono::seconds> estimate_eta(double fraction_done,
                                                 std::chrono::seconds elapsed) {
  if (!(fraction_done > 0.0) || fraction_done > 1.0 || elapsed.count() <= 0) return std::nullopt;
  double remaining = static_cast<double>(elapsed.count()) * (1.0 - fraction_done) / fraction_done;
  return std::chrono::seconds(static_cast<long long>(std::llround(remaining)));
}

ProgressTracker::ProgressTracker(Clock now)
    : m_now(std::move(now)), m_start(m_now()), m_last_move(m_start) {}

void ProgressTracker::restart() {
  m_package_total = 0;
  m_package_done = 0;
  m_start = m_now();
  m_last_move = m_start;
  m_progress = BuildProgress{};
}

void ProgressTracker::package_units(int modules, int units) {
  if (units <= 0) return;
  m_package_total = units;
  m_package_done = 0;
  m_progress.modules = modules;
}

bool ProgressTracker::feed(std::string_view line) {
  if (auto s = parse_ninja_status(line)) return ninja_status(*s);
  return other_line(line);
}

bool ProgressTracker::ninja_status(const NinjaStatus& s) {
  // The edge of this line has FINISHED (build_progress.h, finished_file): nothing named
  // runs now. A command echoed before (setuptools' link of the previous extension) has
  // ended too: this Ninja runs after it.
  if (m_package_total > 0) {
    // Several Ninjas (one per module) print their own [n/N]: count the package's.
    m_progress.done = std::min(++m_package_done, m_package_total);
    m_progress.total = m_package_total;
  } else {
    m_progress.done = s.done;
    m_progress.total = s.total;
  }
  m_progress.percent = static_cast<int>(100LL * m_progress.done / m_progress.total);
  m_last_move = m_now();
  m_progress.finished_file = current_file_from_command(s.command);
  m_progress.current_file.clear();
  m_progress.current_command.clear();
  return true;
}

bool ProgressTracker::other_line(std::string_view line) {
  if (auto pct = parse_cmake_percent(line)) {
    if (*pct != m_progress.percent) m_last_move = m_now();
    m_progress.percent = *pct;
    std::string file = current_file_from_command(line);
    if (!file.empty()) {
      m_progress.current_file = file;
      m_progress.current_command = std::string(trim(line.substr(line.find(']') + 1)));
    }
    return true;
  }
  // setuptools without ninja (and pip around it): no totals, but every step is named.
  if (auto ext = parse_setuptools_extension(line)) {
    ++m_progress.extensions;
    m_progress.phase = "extension " + *ext;
    m_progress.current_command.clear();
    return true;
  }
  if (auto call = parse_compiler_call(line)) {
    if (!call->link) ++m_progress.compiles;
    m_progress.current_file = call->file;
    m_progress.current_command = call->tool + (call->link ? " link " : " ") + call->file;
    return true;
  }
  if (auto phase = parse_pip_phase(line)) {
    m_progress.phase = *phase;
    m_progress.current_command.clear();
    return true;
  }
  return false;
}

BuildProgress ProgressTracker::progress() const {
  BuildProgress p = m_progress;
  p.elapsed = std::chrono::duration_cast<std::chrono::seconds>(m_now() - m_start);
  // Our output is a pipe, not a smart terminal, so Ninja prints [n/N] when an edge
  // FINISHES: n edges are done at that moment.
  double fraction = -1;
  if (p.total > 0)
    fraction = static_cast<double>(p.done) / p.total;
  else if (p.percent >= 0)
    fraction = p.percent / 100.0;
  // The estimate is made when the count moves and counts down from there: a count that
  // stands still does not keep an ETA that stands still with it.
  if (fraction > 0) {
    const auto moved_at = std::chrono::duration_cast<std::chrono::seconds>(m_last_move - m_start);
    const auto since = std::chrono::duration_cast<std::chrono::seconds>(m_now() - m_last_move);
    if (auto full = estimate_eta(fraction, moved_at)) {
      if (*full > since || fraction >= 1.0)
        p.eta = std::max(*full - since, std::chrono::seconds(0));
      else
        p.eta_overdue = true;
    }
  }
  return p;
}

BuildProgress aged(BuildProgress p, std::chrono::seconds later) {
  if (later.count() <= 0) return p;
  p.elapsed += later;
  if (p.eta) {
    if (*p.eta > later) {
      *p.eta -= later;
    } else {
      p.eta.reset();
      p.eta_overdue = true;
    }
  }
  return p;
}

std::string format_duration(std::chrono::seconds s) {
  long long t = s.count() < 0 ? 0 : s.count();
  if (t < 60) return fmt::format("{}s", t);
  if (t < 3600) return fmt::format("{}m{:02}s", t / 60, t % 60);
  return fmt::format("{}h{:02}m", t / 3600, (t % 3600) / 60);
}

std::string render_progress_line(const BuildProgress& p) {
  std::string line;
  if (p.total <= 0 && p.percent < 0) {
    // No counts (setuptools without ninja, pip phases): name what is happening.
    line = "elapsed " + format_duration(p.elapsed);
    if (p.extensions > 0) line += fmt::format(", extension {}", p.extensions);
    if (p.compiles > 0)
      line += fmt::format(", {} compile{}", p.compiles, p.compiles == 1 ? "" : "s");
    if (!p.current_command.empty())
      line += ": " + p.current_command;
    else if (!p.phase.empty())
      line += ": " + p.phase;
    return line;
  }
  if (p.total > 0) line += fmt::format("[{}/{}] ", p.done, p.total);
  if (p.percent >= 0) line += fmt::format("{:3}% ", p.percent);
  line += "elapsed " + format_duration(p.elapsed);
  if (p.eta)
    line += " ETA " + format_duration(*p.eta);
  else if (p.eta_overdue)
    line += ", past its ETA";
  if (p.modules > 1) line += fmt::format(" ({} modules)", p.modules);
  if (!p.current_file.empty())
    line += " " + p.current_file;
  else if (!p.finished_file.empty())
    line += ", finished " + p.finished_file;
  return line;
}

}  // namespace tailor::builder

namespace tailor::builder {

std::string render_heartbeat_line(const BuildProgress& p, std::chrono::seconds elapsed) {
  std::string line = "still running after " + format_duration(elapsed);
  // Which extension: with every module at once (the build driver), setuptools names each
  // module as its thread starts, so the last one named is not the one running.
  const std::string where = p.modules > 1 ? fmt::format(" ({} modules)", p.modules)
                            : p.phase.starts_with("extension ") ? " (" + p.phase + ")"
                                                                : "";
  if (!p.current_command.empty()) {
    line += ": " + p.current_command + where;
  } else if (p.total > 0 && p.done < p.total) {
    // Ninja names an edge only once it has finished: how many are left is known, which of
    // them run is not.
    const int left = p.total - p.done;
    line += fmt::format(": {} Ninja job{} not finished", left, left == 1 ? "" : "s") + where;
  } else if (!p.phase.empty()) {
    line += ": " + p.phase;
  }
  if (p.total > 0) line += fmt::format(" [{}/{}]", p.done, p.total);
  return line;
}

Heartbeat::Heartbeat(std::chrono::seconds interval, Clock now)
    : m_interval(interval.count() > 0 ? interval : std::chrono::seconds(30)),
      m_now(std::move(now)),
      m_start(m_now()),
      m_last_shown(m_start) {}

void Heartbeat::start() { m_start = m_last_shown = m_now(); }

void Heartbeat::shown() { m_last_shown = m_now(); }

bool Heartbeat::due() {
  auto now = m_now();
  if (now - m_last_shown < m_interval) return false;
  m_last_shown = now;
  return true;
}

std::chrono::seconds Heartbeat::elapsed() const {
  return std::chrono::duration_cast<std::chrono::seconds>(m_now() - m_start);
}

}  // namespace tailor::builder
