#include "workflow/governed_targets.h"

#include <fmt/format.h>

#include <filesystem>

#include "builder/run_plan.h"
#include "plan/build_plan.h"
#include "probe/probe.h"
#include "util/files.h"
#include "util/interrupt.h"
#include "workflow/build_context.h"

namespace tailor::workflow {

namespace fs = std::filesystem;

Expected<GovernedOptions> check_governed_options(GovernedOptions o) {
  std::error_code ec;
  if (o.build_dir.empty()) return make_error("__governed: --build-dir is required");
  if (o.work_dir.empty()) return make_error("__governed: --work-dir is required");
  o.build_dir = fs::absolute(o.build_dir, ec).lexically_normal().string();
  if (!fs::is_regular_file(fs::path(o.build_dir) / "build.ninja", ec))
    return make_error(
        fmt::format("__governed: {}: no build.ninja (a configured build folder)", o.build_dir));
  o.work_dir = fs::absolute(o.work_dir, ec).lexically_normal().string();
  if (o.targets.empty()) return make_error("__governed: no Ninja target given");
  for (const auto& t : o.targets)
    if (t.empty() || t.front() == '-')
      return make_error(fmt::format("__governed: '{}' is not a Ninja target", t));
  if (o.max_jobs < 0 || o.max_jobs > 4096)
    return make_error(fmt::format("__governed: --max-jobs {}: expected 1 to 4096", o.max_jobs));
  if (o.timeout.count() <= 0) return make_error("__governed: --timeout must be positive");
  if (o.report_path.empty())
    o.report_path = (fs::path(o.work_dir) / "governed.report.json").string();
  return o;
}

plan::BuildPlan governed_plan(const GovernedOptions& o, const probe::HostReport& host) {
  plan::BuildPlan p;
  plan::Step st;
  st.title = fmt::format("ninja {} target{}", o.targets.size(), o.targets.size() == 1 ? "" : "s");
  st.argv = {"ninja", "-C", o.build_dir};
  st.argv.insert(st.argv.end(), o.targets.begin(), o.targets.end());
  st.cwd = o.build_dir;
  st.timeout = o.timeout;
  st.uses_plan_env = true;  // the governor's MAKEFLAGS reach the build's steps only
  p.steps.push_back(std::move(st));
  plan::ExecutionPolicy& run = p.run;
  run.package = "ninja-targets";
  run.record_name = "ninja targets";
  run.work_dir = o.work_dir;
  run.build_dir = o.build_dir;
  run.mapped_dir = o.build_dir;
  run.ninja_root = o.build_dir;
  run.work_path = plan::ExecutionPolicy::WorkPath::real;  // a configured tree names its paths
  run.resume = false;
  run.cache_statistics = false;
  plan::JobPolicy& j = run.jobs;
  j.variable = "MAX_JOBS";
  j.recipe = "ninja targets";
  j.pip_build = true;  // Ninja itself is the jobserver's client
  j.prior_job_bytes = o.prior_job_bytes;
  plan::fill_host_jobs(j, host);
  if (o.max_jobs > 0) j.max_jobs = static_cast<size_t>(o.max_jobs);
  p.jobs = static_cast<int>(j.max_jobs);
  p.jobs_reason = fmt::format("up to {} jobs", j.max_jobs);
  return p;
}

namespace {
void print_units(const outputs::BuildReport& rep, std::FILE* out) {
  std::map<std::string, uint64_t> peaks;
  if (rep.governor) peaks = rep.governor->unit_peaks;
  for (const auto& j : rep.job_timeline) {
    auto it = peaks.find(j.output);
    std::fprintf(out, "unit %s %s %.1f s%s\n", j.kind.c_str(), j.output.c_str(),
                 static_cast<double>(j.end_ms - j.start_ms) / 1000.0,
                 it == peaks.end() ? "" : fmt::format(" peak {} MiB", it->second >> 20).c_str());
  }
}
}  // namespace

GovernedResult run_governed(const GovernedOptions& o, CommandRunner& runner, std::FILE* out) {
  GovernedResult result;
  std::error_code ec;
  fs::create_directories(o.work_dir, ec);
  probe::SystemHostFiles files;
  probe::HostReport host;
  host.cpu = probe::probe_cpu(files);
  host.memory = probe::probe_memory(files);
  host.tools = probe::find_tools(files, runner);
  plan::BuildPlan p = governed_plan(o, host);
  outputs::BuildReport& rep = result.report;
  rep.package = p.run.package;
  rep.source = o.build_dir;
  rep.source_kind = "directory";
  BuildContext ctx = BuildContext::system(runner);
  builder::BuildSession session = ctx.session(rep, stderr, builder::DisplayStyle::plain);
  session.profile_path.clear();  // these units teach no package's record
  session.record_cache_use = false;
  builder::PlanRun run = builder::run_plan(p, session);
  if (run.outcome) {
    rep.duration_s = std::chrono::duration<double>(run.outcome->duration).count();
    result.interrupted = run.outcome->interrupted;
  }
  result.interrupted = result.interrupted || interrupt_signal() != 0;
  result.ok = !run.stop && run.outcome && run.outcome->ok();
  if (run.stop) result.stop = run.stop->message;
  rep.ok = result.ok;
  if (auto w = write_file_atomic(o.report_path, outputs::to_json(rep).dump(2) + "\n"); !w)
    result.stop = result.stop.empty() ? "the report: " + w.error().message : result.stop;
  print_units(rep, out);
  std::fprintf(out, "report: %s\n", o.report_path.c_str());
  return result;
}

}  // namespace tailor::workflow
