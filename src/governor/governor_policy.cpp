// The memory governor's policy (memory_governor.h): its settings from
// data/build/governor.toml, when it runs at all, the --memory-budget size, the pure token
// and brake arithmetic, and the report. The process tree and the governor's loop are in
// memory_governor.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include "cache/cache_settings.h"
#include "data/toml_document.h"
#include "governor/memory_governor.h"
#include "probe/build_tools.h"
#include "util/strings.h"
#include "util/version.h"

namespace tailor::governor {

namespace {

constexpr uint64_t k_mib = 1ull << 20;

GovernorSettings load_settings() {
  auto doc = data::toml_document("build/governor.toml");
  GovernorSettings s;
  s.min_ninja_version = probe::jobserver_client_since().ninja;
  s.reserve_fraction = doc["reserve_fraction"].number();
  if (s.reserve_fraction < 0 || s.reserve_fraction >= 1)
    doc["reserve_fraction"].fail("expected a fraction in [0, 1)");
  auto reserve_mib = doc["reserve_min_mib"].integer();
  if (reserve_mib < 0) doc["reserve_min_mib"].fail("expected a size in MiB, 0 or more");
  s.reserve_min_bytes = static_cast<uint64_t>(reserve_mib) * k_mib;
  auto period = doc["sample_period_ms"].integer();
  if (period < 20 || period > 10000) doc["sample_period_ms"].fail("expected 20 to 10000 ms");
  s.sample_period = std::chrono::milliseconds(period);
  s.new_job_margin = doc["new_job_margin"].number();
  if (s.new_job_margin < 1 || s.new_job_margin > 4) doc["new_job_margin"].fail("expected 1 to 4");
  auto points = doc["max_series_points"].integer();
  if (points < 8 || points > 5000) doc["max_series_points"].fail("expected 8 to 5000");
  s.max_series_points = static_cast<size_t>(points);
  auto brakes = doc["max_brake_events"].integer();
  if (brakes < 1 || brakes > 5000) doc["max_brake_events"].fail("expected 1 to 5000");
  s.max_brake_events = static_cast<size_t>(brakes);
  for (const auto& k : doc["kind"].array()) {
    JobKindRule r;
    r.name = k["name"].string();
    r.processes = k["processes"].strings();
    r.threads_flag = k["threads_flag"].boolean_or(false);
    if (r.name.empty() || r.name == "other" || r.processes.empty())
      k.fail("expected a name (not \"other\") and processes");
    r.compilers = k["compilers"].strings_or_empty();
    if (r.compilers.empty()) r.compilers = r.processes;
    s.kinds.push_back(std::move(r));
  }
  s.preprocess_flags = doc["preprocess_flags"].strings();
  s.report_processes = doc.at_path("report.processes").strings();
  auto entries = doc.at_path("profile.max_entries").integer();
  if (entries < 1 || entries > 100000)
    doc.at_path("profile.max_entries").fail("expected 1 to 100000");
  s.profile_max_entries = static_cast<size_t>(entries);
  s.cache_clients = cache::sccache_process_names();
  return s;
}

}  // namespace

const GovernorSettings& governor_settings() {
  static const GovernorSettings s = load_settings();
  return s;
}

std::optional<std::string> static_reason(const GovernorFacts& f, const GovernorSettings& settings) {
  if (f.jobs) return fmt::format("--jobs {} asks for a fixed count", *f.jobs);
  if (f.serial) return fmt::format("{} compiles one file at a time", f.recipe);
  if (!f.pip_build)
    return fmt::format("{} builds with CMake before pip, whose jobs the jobserver does not reach",
                       f.recipe);
  if (f.jobs_variable != "MAX_JOBS" || f.jobs_count_nvcc_threads)
    return fmt::format("{}'s jobs variable {} is not torch's ninja -j", f.recipe, f.jobs_variable);
  if (f.ninja_version.empty())
    return std::string("no ninja on the build's PATH answered --version");
  if (compare_versions(f.ninja_version, settings.min_ninja_version) < 0)
    return fmt::format("ninja {} on the build's PATH is not a jobserver client ({} is)",
                       f.ninja_version, settings.min_ninja_version);
  return std::nullopt;
}

Expected<uint64_t> parse_memory_size(std::string_view text) {
  auto bad = [&] {
    return make_error(
        fmt::format("--memory-budget '{}': expected a size such as 6G, 512M or 1.5GiB", text));
  };
  std::string_view t = trim(text);
  size_t digits = 0;
  while (digits < t.size() && ((t[digits] >= '0' && t[digits] <= '9') || t[digits] == '.'))
    ++digits;
  if (digits == 0 || digits > 20) return bad();
  std::string number(t.substr(0, digits));
  if (std::count(number.begin(), number.end(), '.') > 1 || number.front() == '.' ||
      number.back() == '.')
    return bad();
  std::string unit(t.substr(digits));
  for (auto& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  double scale = 0;
  if (unit.empty() || unit == "B")
    scale = 1;
  else if (unit == "K" || unit == "KB" || unit == "KIB")
    scale = 1024.0;
  else if (unit == "M" || unit == "MB" || unit == "MIB")
    scale = 1024.0 * 1024;
  else if (unit == "G" || unit == "GB" || unit == "GIB")
    scale = 1024.0 * 1024 * 1024;
  else if (unit == "T" || unit == "TB" || unit == "TIB")
    scale = 1024.0 * 1024 * 1024 * 1024;
  else
    return bad();
  double value = std::strtod(number.c_str(), nullptr) * scale;
  if (!(value >= 64.0 * k_mib))
    return make_error(
        fmt::format("--memory-budget '{}': at least 64M is needed to build anything", text));
  if (value > 1024.0 * 1024 * 1024 * 1024 * 1024)
    return make_error(fmt::format("--memory-budget '{}': more than 1 PiB", text));
  return static_cast<uint64_t>(value);
}

// ---- the arithmetic ---------------------------------------------------------------------

PolicyDecision decide(const PolicyInput& in) {
  PolicyDecision d;
  std::vector<const JobView*> running, stopped;
  for (const auto& j : in.jobs) (j.stopped ? stopped : running).push_back(&j);
  auto older = [](const JobView* a, const JobView* b) {
    return std::tie(a->start, a->pid) < std::tie(b->start, b->pid);
  };
  std::sort(running.begin(), running.end(), older);
  std::sort(stopped.begin(), stopped.end(), older);
  auto growth_of = [](const JobView* j) -> int64_t {
    return j->expected_peak > j->rss ? static_cast<int64_t>(j->expected_peak - j->rss) : 0;
  };
  int64_t growth = 0;
  for (const JobView* j : running) growth += growth_of(j);
  const int64_t available = static_cast<int64_t>(in.available),
                reserve = static_cast<int64_t>(in.reserve);
  d.headroom = available - reserve - growth;

  std::vector<const JobView*> brakeable;
  for (const JobView* j : running)
    if (j->holds_memory) brakeable.push_back(j);
  if (available < reserve && brakeable.size() > 1) {
    // The brake: the youngest running job has done the least work.
    const JobView* youngest = brakeable.back();
    d.stop = youngest->pid;
    growth -= growth_of(youngest);
    running.erase(std::find(running.begin(), running.end(), youngest));
    d.headroom = available - reserve - growth;
  } else if (!stopped.empty()) {
    // The oldest stopped job goes on when its growth fits, or when nothing else runs.
    const JobView* oldest = stopped.front();
    if (running.empty() || d.headroom >= growth_of(oldest)) {
      d.resume = oldest->pid;
      growth += growth_of(oldest);
      running.push_back(oldest);
      stopped.erase(stopped.begin());
      d.headroom = available - reserve - growth;
    }
  }
  size_t fresh = 0;
  if (stopped.empty() && !d.stop && d.headroom > 0 && in.new_job_peak > 0)
    fresh = static_cast<size_t>(d.headroom / static_cast<int64_t>(in.new_job_peak));
  const size_t slots = static_cast<size_t>(
      std::count_if(running.begin(), running.end(), [](const JobView* j) { return j->slot; }));
  d.allowed_jobs = std::min(std::max<size_t>(1, in.max_jobs), slots + fresh);
  const size_t implicit = std::max<size_t>(1, in.clients);
  d.tokens = d.allowed_jobs > implicit ? d.allowed_jobs - implicit : 0;
  return d;
}

// ---- the report -------------------------------------------------------------------------

nlohmann::json to_json(const GovernorReport& r) {
  nlohmann::json j;
  j["mode"] = r.mode;
  j["reason"] = r.reason;
  if (r.mode != "governor") return j;
  j["budget_mib"] = r.budget ? nlohmann::json(*r.budget / k_mib) : nlohmann::json(nullptr);
  j["reserve_mib"] = r.reserve / k_mib;
  j["prior_job_mib"] = r.prior / k_mib;
  j["max_jobs"] = r.max_jobs;
  j["peak_build_rss_mib"] = r.peak_build_rss / k_mib;
  j["max_running"] = r.max_running;
  j["samples"] = r.samples;
  nlohmann::json jp = nlohmann::json::object(), pp = nlohmann::json::object();
  for (const auto& [k, v] : r.job_peaks) jp[k] = v / k_mib;
  for (const auto& [k, v] : r.process_peaks) pp[k] = v / k_mib;
  j["job_peaks_mib"] = jp;
  j["process_peaks_mib"] = pp;
  nlohmann::json up = nlohmann::json::object();
  for (const auto& [k, v] : r.unit_peaks) up[k] = v / k_mib;
  j["unit_peaks_mib"] = up;
  j["unit_peaks_dropped"] = r.unit_peaks_dropped;
  j["unit_cpu_ms"] = r.unit_cpu_ms;
  nlohmann::json kp = nlohmann::json::object();
  for (const auto& [k, v] : r.known_peaks) kp[k] = v / k_mib;
  j["known_peaks_mib"] = kp;
  j["known_builds"] = r.known_builds;
  j["series_fields"] = {"t", "tokens", "running", "stopped", "available_mib", "build_rss_mib"};
  nlohmann::json series = nlohmann::json::array();
  for (const auto& p : r.series)
    series.push_back({std::round(p.t * 100) / 100, p.tokens, p.running, p.stopped, p.available_mib,
                      p.build_rss_mib});
  j["series"] = series;
  nlohmann::json brakes = nlohmann::json::array();
  for (const auto& b : r.brakes)
    brakes.push_back({{"t", std::round(b.t * 100) / 100},
                      {"action", b.action},
                      {"pid", b.pid},
                      {"kind", b.kind},
                      {"rss_mib", b.rss_mib},
                      {"available_mib", b.available_mib}});
  j["brakes"] = brakes;
  j["brake_count"] = r.brake_count;
  j["continued_at_end"] = r.stops_left_over;
  return j;
}

std::string render_governor_summary(const GovernorReport& r) {
  if (r.mode != "governor") return fmt::format("memory    static job count ({})\n", r.reason);
  std::vector<std::string> peaks;
  for (const auto& [k, v] : r.job_peaks) peaks.push_back(fmt::format("{} {} MiB", k, v / k_mib));
  size_t stops = 0;
  for (const auto& b : r.brakes) stops += b.action == "stop";
  std::vector<std::string> known;
  for (const auto& [k, v] : r.known_peaks) known.push_back(fmt::format("{} {} MiB", k, v / k_mib));
  return fmt::format(
      "memory    governor{}: peak build RSS {} MiB, up to {} jobs at once, {} brake stop{}\n"
      "          learned job peaks: {}\n{}",
      r.budget ? fmt::format(" (budget {} MiB)", *r.budget / k_mib) : "", r.peak_build_rss / k_mib,
      r.max_running, stops, stops == 1 ? "" : "s", peaks.empty() ? "none" : join(peaks, ", "),
      known.empty() ? ""
                    : fmt::format("          started from {} earlier build{}: {}\n", r.known_builds,
                                  r.known_builds == 1 ? "" : "s", join(known, ", ")));
}

}  // namespace tailor::governor
