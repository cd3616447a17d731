#include "build/build_report.h"

#include <fmt/format.h>

#include "util/strings.h"

namespace tailor::build {

std::string_view check_status_name(CheckStatus s) {
  switch (s) {
    case CheckStatus::passed: return "passed";
    case CheckStatus::failed: return "failed";
    case CheckStatus::skipped: break;
  }
  return "skipped";
}

nlohmann::json to_json(const BuildReport& r) {
  nlohmann::json j;
  j["tool"] = {{"name", "tailor"}, {"version", r.tool_version}};
  j["ok"] = r.ok;
  j["inputs"] = {{"package", r.package},   {"source", r.source},   {"source_kind", r.source_kind},
                 {"targets", r.targets},   {"targets_from", r.targets_spec}, {"recipe", r.recipe},
                 {"python", r.python}};
  j["environment"] = {{"set", r.env}, {"unset", r.unset_env}};
  j["toolchain"] = r.toolchain;
  j["run"] = {{"started_at", r.started_at}, {"duration_s", r.duration_s}, {"jobs", r.jobs},
              {"jobs_reason", r.jobs_reason}};
  nlohmann::json cache = {{"tool", r.cache_tool}};
  cache["hits"] = r.cache_hits ? nlohmann::json(*r.cache_hits) : nlohmann::json(nullptr);
  cache["misses"] = r.cache_misses ? nlohmann::json(*r.cache_misses) : nlohmann::json(nullptr);
  j["run"]["cache"] = cache;
  nlohmann::json units = nullptr;
  if (r.units_reused && r.units_total)
    units = {{"reused", *r.units_reused}, {"total", *r.units_total}, {"source", r.units_source}};
  j["run"]["reused_units"] = units;
  nlohmann::json wheel = nullptr;
  if (!r.wheel.empty())
    wheel = {{"name", r.wheel}, {"path", r.wheel_path}, {"sha256", r.sha256}, {"size", r.size},
             {"bytes_per_target", r.bytes_per_target}};
  j["wheel"] = wheel;
  j["checks"] = nlohmann::json::array();
  for (const auto& c : r.checks)
    j["checks"].push_back({{"name", c.name}, {"status", check_status_name(c.status)}, {"detail", c.detail}});
  j["log"] = r.log_path;
  return j;
}

std::string render_summary(const BuildReport& r) {
  std::string out;
  if (!r.wheel.empty())
    out += fmt::format("wheel     {} ({})\n", r.wheel_path.empty() ? r.wheel : r.wheel_path, human_bytes(r.size));
  if (!r.sha256.empty()) out += fmt::format("sha256    {}\n", r.sha256);
  std::vector<std::string> per_target;
  for (const auto& t : r.targets) {
    auto it = r.bytes_per_target.find(t);
    per_target.push_back(it == r.bytes_per_target.end() ? t : fmt::format("{} {}", t, human_bytes(it->second)));
  }
  out += fmt::format("targets   {}\n", join(per_target, ", "));
  out += fmt::format("time      {:.1f} s with {} jobs ({})\n", r.duration_s, r.jobs, r.jobs_reason);
  if (r.cache_tool.empty() || r.cache_tool == "none")
    out += "cache     none (install ccache to make rebuilds fast)\n";
  else if (r.cache_hits && r.cache_misses)
    out += fmt::format("cache     {}: {} hits, {} misses\n", r.cache_tool, *r.cache_hits, *r.cache_misses);
  else
    out += fmt::format("cache     {} (statistics unavailable)\n", r.cache_tool);
  if (r.units_reused && r.units_total)
    out += fmt::format("reused    {} of {} Ninja steps from an earlier run ({})\n", *r.units_reused, *r.units_total, r.units_source);
  for (const auto& c : r.checks)
    out += fmt::format("check     {:<10} {}{}\n", c.name, check_status_name(c.status),
                       c.detail.empty() ? "" : ": " + c.detail);
  if (!r.log_path.empty()) out += fmt::format("log       {}\n", r.log_path);
  return out;
}

}  // namespace tailor::build
