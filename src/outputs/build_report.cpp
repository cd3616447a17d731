#include "outputs/build_report.h"

#include <fmt/format.h>

#include <algorithm>

#include "util/strings.h"

namespace tailor::outputs {

std::string_view check_status_name(CheckStatus s) {
  switch (s) {
    case CheckStatus::passed:
      return "passed";
    case CheckStatus::failed:
      return "failed";
    case CheckStatus::warning:
      return "warning";
    case CheckStatus::skipped:
      break;
  }
  return "skipped";
}

namespace {

// The compile job that took longest: the build's critical path when it ran alone.
const NinjaJob* longest_unit(const std::vector<NinjaJob>& jobs) {
  const NinjaJob* best = nullptr;
  for (const auto& j : jobs)
    if ((j.kind == "cu" || j.kind == "cpp" || j.kind == "c") && j.end_ms >= j.start_ms &&
        (!best || j.end_ms - j.start_ms > best->end_ms - best->start_ms))
      best = &j;
  return best;
}

bool names_a_path(const std::string& value) {
  for (const auto& token : split_any(value, " =:,;\t"))
    if (!token.empty() && token.front() == '/') return true;
  return false;
}

}  // namespace

void fill_provenance_environment(BuildProvenance& p, const std::map<std::string, std::string>& env,
                                 const std::vector<std::string>& parallel_variables) {
  p.environment.clear();
  p.left_out.clear();
  for (const auto& [k, v] : env) {
    bool parallel = std::find(parallel_variables.begin(), parallel_variables.end(), k) !=
                    parallel_variables.end();
    if (parallel || k == "SOURCE_DATE_EPOCH" || names_a_path(v))
      p.left_out.push_back(k);
    else
      p.environment[k] = v;
  }
}

void fill_provenance_toolchain(BuildProvenance& p,
                               const std::map<std::string, std::string>& toolchain) {
  p.toolchain.clear();
  for (const auto& [k, v] : toolchain) {
    // Caches and git change how fast a build is, not what it makes.
    if (k == "ccache" || k == "sccache" || k == "git") continue;
    auto at = v.find(" (/");
    p.toolchain[k] = at == std::string::npos ? v : v.substr(0, at);
  }
}

nlohmann::json to_json(const BuildProvenance& p) {
  nlohmann::json j;
  j["tool"] = {{"name", "tailor"}, {"version", p.tool_version}};
  j["package"] = p.package;
  j["recipe"] = p.recipe;
  if (!p.profile.empty()) j["profile"] = p.profile;
  if (!p.split_units.empty()) j["split_units"] = p.split_units;
  j["targets"] = p.targets;
  j["source"] = {{"kind", p.source_kind}, {p.digest_kind, p.digest}};
  if (!p.source_name.empty()) j["source"]["name"] = p.source_name;
  j["source_date_epoch"] = p.source_date_epoch;
  j["source_date_epoch_from"] = p.epoch_from;
  j["toolchain"] = p.toolchain;
  if (!p.torch_requirement.empty()) j["requires_torch"] = p.torch_requirement;
  j["environment"] = p.environment;
  j["zip"] = p.compressor;
  return j;
}

std::string provenance_file_text(const BuildProvenance& p) { return to_json(p).dump(2) + "\n"; }

std::optional<double> compile_span_s(const std::vector<NinjaJob>& jobs) {
  if (jobs.empty()) return std::nullopt;
  uint64_t first = jobs.front().start_ms, last = jobs.front().end_ms;
  for (const auto& job : jobs) {
    first = std::min(first, job.start_ms);
    last = std::max(last, job.end_ms);
  }
  return static_cast<double>(last - first) / 1000.0;
}

nlohmann::json to_json(const BuildReport& r) {
  nlohmann::json j;
  j["tool"] = {{"name", "tailor"}, {"version", r.tool_version}};
  j["ok"] = r.ok;
  j["inputs"] = {{"package", r.package},
                 {"source", r.source},
                 {"source_kind", r.source_kind},
                 {"targets", r.targets},
                 {"targets_from", r.targets_spec},
                 {"recipe", r.recipe},
                 {"python", r.python}};
  if (!r.platform.empty()) j["inputs"]["platform"] = r.platform;
  j["environment"] = {{"set", r.env}, {"unset", r.unset_env}};
  j["toolchain"] = r.toolchain;
  j["run"] = {{"started_at", r.started_at},
              {"duration_s", r.duration_s},
              {"jobs", r.jobs},
              {"jobs_reason", r.jobs_reason}};
  nlohmann::json cache = {{"tool", cache::cache_tool_name(r.cache_tool)}};
  cache["hits"] = r.cache_hits ? nlohmann::json(*r.cache_hits) : nlohmann::json(nullptr);
  cache["misses"] = r.cache_misses ? nlohmann::json(*r.cache_misses) : nlohmann::json(nullptr);
  if (!r.cache_storage.empty()) cache["storage"] = r.cache_storage;
  if (r.cache_hits) {
    cache["errors"] = r.cache_errors;
    nlohmann::json cats = nlohmann::json::object();
    for (const auto& [name, hm] : r.cache_categories)
      cats[name] = {{"hits", hm.first}, {"misses", hm.second}};
    cache["categories"] = cats;
  }
  j["run"]["cache"] = cache;
  if (r.dist)
    j["run"]["dist"] = {
        {"scheduler_url", r.dist->scheduler_url}, {"client_config", r.dist->client_config},
        {"compilations", r.dist->compilations},   {"dist_compiles", r.dist->dist_compiles},
        {"dist_errors", r.dist->dist_errors},     {"not_distributable", r.dist->not_distributable},
        {"per_server", r.dist->per_server},       {"notes", r.dist->notes}};
  if (!r.work_path.empty()) {
    j["run"]["work_path"] = r.work_path;
    j["run"]["work_path_note"] =
        r.work_path_note.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.work_path_note);
    j["run"]["work_path_route"] =
        r.work_path_route.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.work_path_route);
    j["run"]["work_path_tried"] =
        r.work_path_tried.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.work_path_tried);
    j["run"]["sandbox"] = r.sandbox;
  }
  nlohmann::json units = nullptr;
  if (r.units_reused && r.units_total)
    units = {{"reused", *r.units_reused}, {"total", *r.units_total}, {"source", r.units_source}};
  j["run"]["reused_units"] = units;
  if (r.governor) j["run"]["memory"] = to_json(*r.governor);
  if (!r.phases.empty()) {
    nlohmann::json phases = nlohmann::json::array();
    for (const auto& ph : r.phases) phases.push_back({{"name", ph.name}, {"seconds", ph.seconds}});
    j["run"]["phases"] = phases;
  }
  if (auto span = compile_span_s(r.job_timeline)) j["run"]["compile_span_s"] = *span;
  j["run"]["split_compile"] = r.split_compile;
  j["run"]["package_choices"] = r.package_choices;
  nlohmann::json compat = nlohmann::json::array();
  for (const auto& c : r.compat_changes)
    compat.push_back({{"file", c.file},
                      {"line", c.line},
                      {"removal", c.removal},
                      {"from", c.from},
                      {"to", c.to},
                      {"removed_in", c.removed_in}});
  j["run"]["compat_changes"] = compat;
  j["run"]["compat_left_alone"] = r.compat_left_alone;
  j["run"]["package_variants"] = r.package_variants;
  j["run"]["split_units"] = r.split_units;
  j["run"]["units_known"] = r.units_known;
  if (r.units_known) j["run"]["unit_times_from"] = r.unit_times_from;
  if (!r.job_timeline.empty() || r.job_timeline_dropped) {
    j["run"]["job_timeline"] = jobs_to_json(r.job_timeline);
    j["run"]["job_timeline_dropped"] = r.job_timeline_dropped;
  }
  nlohmann::json wheel = nullptr;
  if (!r.wheel.empty())
    wheel = {{"name", r.wheel},
             {"path", r.wheel_path},
             {"sha256", r.sha256},
             {"size", r.size},
             {"bytes_per_target", r.bytes_per_target}};
  if (!r.wheel_from.empty()) wheel["from_wheelhouse"] = r.wheel_from;
  j["wheel"] = wheel;
  j["checks"] = nlohmann::json::array();
  for (const auto& c : r.checks)
    j["checks"].push_back(
        {{"name", c.name}, {"status", check_status_name(c.status)}, {"detail", c.detail}});
  j["log"] = r.log_path;
  if (r.provenance) {
    j["provenance"] = to_json(*r.provenance);
    j["provenance"]["left_out_of_wheel"] = r.provenance->left_out;
  }
  if (r.torch)
    j["torch"] = {{"plan", r.torch->plan},
                  {"targets_verified", r.torch->targets_verified},
                  {"manylinux_needed", r.torch->manylinux_needed},
                  {"import", r.torch->import_check},
                  {"gpu_smoke_test", r.torch->gpu_smoke_test},
                  {"runtime_packages", r.torch->runtime_packages}};
  return j;
}

std::string render_summary(const BuildReport& r) {
  std::string out;
  if (!r.wheel.empty())
    out += fmt::format("wheel     {} ({})\n", r.wheel_path.empty() ? r.wheel : r.wheel_path,
                       human_bytes(r.size));
  if (!r.sha256.empty()) out += fmt::format("sha256    {}\n", r.sha256);
  if (!r.wheel_from.empty())
    out += fmt::format("fetched   {} (a wheelhouse wheel of the same inputs: nothing compiled)\n",
                       r.wheel_from);
  std::vector<std::string> per_target;
  for (const auto& t : r.targets) {
    auto it = r.bytes_per_target.find(t);
    per_target.push_back(
        it == r.bytes_per_target.end() ? t : fmt::format("{} {}", t, human_bytes(it->second)));
  }
  out += fmt::format("targets   {}\n", join(per_target, ", "));
  // A fetched wheel compiled nothing here: no job count, no compiler cache to speak of.
  const bool fetched = !r.wheel_from.empty();
  if (fetched)
    out +=
        fmt::format("time      {:.1f} s (fetched and verified: nothing compiled)\n", r.duration_s);
  else if (r.governor && r.governor->mode == "governor")
    out += fmt::format("time      {:.1f} s under the memory governor ({})\n", r.duration_s,
                       r.governor->reason);
  else
    out +=
        fmt::format("time      {:.1f} s with {} jobs ({})\n", r.duration_s, r.jobs, r.jobs_reason);
  if (!r.phases.empty()) {
    std::vector<std::string> parts;
    const auto span = compile_span_s(r.job_timeline);
    for (const auto& ph : r.phases) {
      if (ph.name == "build" && span)
        parts.push_back(fmt::format("build {:.1f} (compiles {:.1f})", ph.seconds, *span));
      else
        parts.push_back(fmt::format("{} {:.1f}", ph.name, ph.seconds));
    }
    out += fmt::format("phases    {} s\n", join(parts, ", "));
  }
  if (r.governor) out += governor::render_governor_summary(*r.governor);
  if (fetched) {
  } else if (r.cache_tool == cache::CacheTool::none)
    out += "cache     none (install ccache to make rebuilds fast)\n";
  else if (r.cache_hits && r.cache_misses) {
    auto rate = [](uint64_t h, uint64_t m) {
      return h + m ? fmt::format("{:.0f}%",
                                 100.0 * static_cast<double>(h) / static_cast<double>(h + m))
                   : std::string("-");
    };
    out +=
        fmt::format("cache     {}{}: {} hits, {} misses ({})", cache::cache_tool_name(r.cache_tool),
                    r.cache_storage.empty() ? "" : " (" + r.cache_storage + ")", *r.cache_hits,
                    *r.cache_misses, rate(*r.cache_hits, *r.cache_misses));
    std::vector<std::string> parts;
    for (const auto& [name, hm] : r.cache_categories)
      parts.push_back(fmt::format("{} {}", name, rate(hm.first, hm.second)));
    if (!parts.empty()) out += "; " + join(parts, ", ");
    if (r.cache_errors) out += fmt::format("; {} storage errors", r.cache_errors);
    out += "\n";
  } else
    out += fmt::format("cache     {} (statistics unavailable)\n",
                       cache::cache_tool_name(r.cache_tool));
  if (r.dist) {
    std::vector<std::string> servers;
    for (const auto& [server, n] : r.dist->per_server)
      servers.push_back(fmt::format("{} {}", server, n));
    out +=
        fmt::format("dist      {} of {} compiler runs on build servers{}, {} dist errors\n",
                    r.dist->dist_compiles, r.dist->compilations,
                    servers.empty() ? "" : " (" + join(servers, ", ") + ")", r.dist->dist_errors);
    for (const auto& n : r.dist->notes) out += fmt::format("dist      note: {}\n", n);
  }
  if (const NinjaJob* longest = longest_unit(r.job_timeline))
    out += fmt::format(
        "longest   {} {:.1f} s{}{}\n", longest->input.empty() ? longest->output : longest->input,
        static_cast<double>(longest->end_ms - longest->start_ms) / 1000.0,
        longest->split > 0 ? fmt::format(", split {} ways (nvcc -split-compile)", longest->split)
                           : ", not split",
        r.units_known ? fmt::format("; {} units started longest first, times from {}",
                                    r.units_known, r.unit_times_from)
                      : "");
  for (const auto& c : r.package_choices) out += fmt::format("package   {}\n", c);
  // One line per change; a package with hundreds (AT_CHECK everywhere) lists the first 40
  // here and all in the report.
  constexpr size_t k_compat_lines = 40;
  for (size_t i = 0; i < r.compat_changes.size() && i < k_compat_lines; ++i)
    out += fmt::format("package   {}\n", r.compat_changes[i].text);
  if (r.compat_changes.size() > k_compat_lines)
    out += fmt::format("package   ... {} more API removals bridged (run.compat_changes)\n",
                       r.compat_changes.size() - k_compat_lines);
  for (const auto& c : r.compat_left_alone) out += fmt::format("package   left alone: {}\n", c);
  if (r.units_reused && r.units_total)
    out += fmt::format("reused    {} of {} Ninja steps from an earlier run ({})\n", *r.units_reused,
                       *r.units_total, r.units_source);
  for (const auto& c : r.checks)
    out += fmt::format("check     {:<10} {}{}\n", c.name, check_status_name(c.status),
                       c.detail.empty() ? "" : ": " + c.detail);
  // Where the steps saw the work folder; a build without a fixed path repeats its warning
  // here, at the end, where it does not scroll away.
  if (!r.work_path.empty())
    out += r.work_path_route == "none" && !r.work_path_note.empty()
               ? fmt::format("path      warning: {}\n", r.work_path_note)
               : fmt::format("path      {}{}\n", r.work_path,
                             r.work_path_route.empty()
                                 ? ""
                                 : " (" + r.work_path_route + (r.sandbox ? ", sandbox)" : ")"));
  if (!r.log_path.empty()) out += fmt::format("log       {}\n", r.log_path);
  if (r.provenance)
    out += fmt::format("source    {} {} (SOURCE_DATE_EPOCH {}, {})\n", r.provenance->digest_kind,
                       r.provenance->digest.substr(0, 16), r.provenance->source_date_epoch,
                       r.provenance->epoch_from);
  return out;
}

}  // namespace tailor::outputs
