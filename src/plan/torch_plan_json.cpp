#include <fmt/format.h>

#include "plan/torch_plan_render.h"
#include "util/strings.h"

namespace tailor::plan {

namespace {
const char* severity_name(ProblemSeverity s) {
  return s == ProblemSeverity::error ? "error" : "warning";
}
}  // namespace

nlohmann::json plan_to_json(const TorchPlan& p) {
  nlohmann::json j;
  j["name"] = p.name;
  j["torch"] = p.torch_version;
  j["git_tag"] = p.git_tag;
  j["git_url"] = p.git_url;
  j["system_libraries"] = nlohmann::json::array();
  for (const auto& l : p.system_libraries)
    j["system_libraries"].push_back({{"name", l.name},
                                     {"folder", l.folder},
                                     {"switch", l.switch_var},
                                     {"value", l.value},
                                     {"packages", l.debian},
                                     {"reason", l.reason}});
  j["cuda"] = p.cuda ? nlohmann::json(p.cuda_text()) : nlohmann::json(nullptr);
  j["python"] = p.python_version;
  j["python_interpreter"] = p.python;
  j["platform"] = p.platform;
  j["host_platform"] = p.host_platform;
  j["for_this_host"] = p.for_this_host();
  // Resolved here, but found or counted again by the sh script on the build host.
  j["build_host_env"] = build_host_variables(p);
  j["targets"] = p.targets.names();
  j["cpu_target"] = p.cpu_target.empty() ? nlohmann::json(nullptr) : nlohmann::json(p.cpu_target);
  j["cpu_flags"] = p.cpu_flags;
  j["blas"] = p.blas;
  j["features"] = p.features;
  j["build_type"] = p.build_type;
  j["host_compiler"] = p.host_compiler;
  j["manylinux"] = "manylinux_" + p.manylinux + "_" + p.platform;
  j["wheel_version"] = p.wheel_version;
  j["wheel_name"] = p.wheel_name;
  j["env"] = p.env;
  j["requirements"] = p.requirements;
  j["layout"] = {{"work_dir", p.layout.work_dir},
                 {"source_dir", p.layout.source_dir},
                 {"venv_dir", p.layout.venv_dir}};
  auto& steps = j["steps"] = nlohmann::json::array();
  for (const auto& s : p.steps)
    steps.push_back(
        {{"title", s.title}, {"argv", s.argv}, {"cwd", s.cwd}, {"uses_env", s.uses_plan_env}});
  const auto& e = p.estimate;
  j["estimates"] = {{"jobs", p.jobs},
                    {"jobs_reason", p.jobs_reason},
                    {"wheel_mib", e.wheel_mib},
                    {"wheel_formula", e.wheel_formula},
                    {"per_target_mib", e.per_target_mib},
                    {"build_hours", e.build_hours},
                    {"time_formula", e.time_formula},
                    {"disk_gib", e.disk_gib},
                    {"disk_formula", e.disk_formula}};
  auto& problems = j["problems"] = nlohmann::json::array();
  for (const auto& pr : p.problems)
    problems.push_back({{"severity", severity_name(pr.severity)},
                        {"kind", pr.kind == ProblemKind::input ? "input" : "host"},
                        {"field", pr.field},
                        {"message", pr.message},
                        {"fix", pr.fix}});
  j["notes"] = p.notes;
  {
    const TorchCatalog& cat = torch_catalog();
    j["checked_against"] = cat.checked_against;
    if (const TorchRelease* rel = cat.find_release(p.torch_version))
      j["release_checked_against"] = rel->checked_against;
  }
  return j;
}

std::string render_problems(const TorchPlan& p) {
  std::string out;
  for (const auto& pr : p.problems)
    out += fmt::format("tailor: {}: {}: {}\n  fix: {}\n", severity_name(pr.severity), pr.field,
                       pr.message, pr.fix);
  return out;
}

std::string render_plan_text(const TorchPlan& p) {
  std::string o;
  o += fmt::format("PyTorch build plan: {}\n", p.name);
  o += fmt::format("  torch        {}{}\n", p.torch_version,
                   p.git_tag.empty() ? " (local source " + p.layout.source_dir + ")"
                                     : " (" + p.git_tag + " from " + p.git_url + ")");
  o += fmt::format("  CUDA         {}\n",
                   p.cuda ? p.cuda_text() + " at " + p.cuda_home : "none (CPU-only)");
  if (p.cuda) o += fmt::format("  GPU targets  {}\n", join(p.targets.names(), " "));
  o += fmt::format(
      "  CPU target   {}{}\n", p.cpu_target.empty() ? "compiler default" : p.cpu_target,
      p.cpu_flags.empty() ? "" : " (" + join(p.cpu_flags, " ") + ", host compiler only)");
  o += fmt::format("  Python       {} ({})\n", p.python_version, p.python);
  o += fmt::format("  platform     {}{}\n", p.platform,
                   p.platform == p.host_platform ? "" : " (this host: " + p.host_platform + ")");
  std::vector<std::string> on, off;
  for (const auto& [f, v] : p.features) (v ? on : off).push_back(f);
  o += fmt::format("  features on  {}\n", on.empty() ? "-" : join(on, ", "));
  o += fmt::format("  features off {}\n", off.empty() ? "-" : join(off, ", "));
  o += fmt::format("  BLAS         {}    build type {}\n", p.blas, p.build_type);
  if (!p.system_libraries.empty()) {
    std::vector<std::string> names;
    for (const auto& l : p.system_libraries) names.push_back(l.name);
    o += fmt::format("  system libs  {} (from the system, not third_party/)\n", join(names, " "));
  }
  o += fmt::format("  wheel        {}\n", p.wheel_name);
  o += "\nEnvironment:\n";
  for (const auto& [k, v] : p.env) o += fmt::format("  {}={}\n", k, shell_quote(v));
  o += "\nPython build requirements:\n  " + join(p.requirements, " ") + "\n";
  o += "\nSteps:\n";
  int n = 1;
  for (const auto& s : p.steps) {
    std::vector<std::string> q;
    for (const auto& a : s.argv) q.push_back(shell_quote(a));
    o += fmt::format("  {}. {}{}: {}{}\n", n++, s.title,
                     s.uses_plan_env ? " (with the environment above)" : "",
                     s.cwd.empty() ? "" : "cd " + shell_quote(s.cwd) + " && ", join(q, " "));
  }
  const auto& e = p.estimate;
  o += "\nEstimates:\n";
  o += fmt::format("  jobs         {}: {}\n", p.jobs, p.jobs_reason);
  o += fmt::format("  wheel        ~{:.0f} MiB: {}\n", e.wheel_mib, e.wheel_formula);
  for (const auto& [t, mib] : e.per_target_mib)
    o += fmt::format("    {:<12} ~{:.0f} MiB\n", t, mib);
  o += fmt::format("  build time   ~{:.1f} h: {}\n", e.build_hours, e.time_formula);
  o += fmt::format("  disk         ~{:.0f} GiB: {}\n", e.disk_gib, e.disk_formula);
  if (!p.notes.empty()) {
    o += "\nNotes:\n";
    for (const auto& n2 : p.notes) o += "  - " + n2 + "\n";
  }
  if (!p.problems.empty()) o += "\nProblems:\n" + render_problems(p);
  return o;
}

}  // namespace tailor::plan
