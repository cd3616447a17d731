// `tailor plan [torch] [VARIANT FLAGS | --config tailor.toml --variant NAME]
//  [--format text|json|sh|dockerfile]`: the resolved PyTorch build without building.
// `tailor plan torch --measured REPORT.json... --build-ninja FILE [--cores N] [--memory GIB]
//  [--check] [--format json]`: the whole build's time and memory predicted from the units a
// (partial) build measured (plan/torch_estimate.h).
#include <cstdio>

#include "cli/commands.h"
#include "cli/torch_variant_flags.h"
#include "plan/torch_plan_render.h"
#include "probe/probe.h"
#include "workflow/build_prediction.h"

namespace tailor::cli {

namespace {
struct PlanOptions {
  TorchVariantFlags variant;
  std::string package = "torch";
  std::string format = "text";
  std::vector<std::string> measured;  ///< build reports (run.job_timeline, unit peaks)
  std::string build_ninja;
  int cores = 0;          ///< 0: this machine's build cores
  double memory_gib = 0;  ///< 0: this machine's memory
  bool check = false;
  bool cpu_time = false;
};

int run_prediction(const PlanOptions& o) {
  if (o.build_ninja.empty())
    return report_error("plan --measured: --build-ninja FILE (the tree's build.ninja) is needed");
  if (o.format != "text" && o.format != "json")
    return report_error("plan --measured: --format text or json");
  workflow::PredictionInput in{o.measured,   o.build_ninja, o.cores,
                               o.memory_gib, o.check,       o.cpu_time};
  if (in.cores <= 0 || in.memory_gib <= 0) {
    probe::SystemHostFiles files;
    if (in.cores <= 0) in.cores = probe::probe_cpu(files).build_cores();
    if (in.memory_gib <= 0) {
      probe::HostMemory m = probe::probe_memory(files);
      in.memory_gib = static_cast<double>(m.cgroup_limit ? m.cgroup_limit : m.total) / (1ull << 30);
    }
  }
  auto r = workflow::predict_from_files(in);
  if (!r) return report_error(r.error().message);
  if (o.format == "json") {
    std::fputs(
        (with_schema(workflow::prediction_json(*r), "plan-prediction").dump(2) + "\n").c_str(),
        stdout);
    return k_exit_ok;
  }
  std::string text = plan::render_prediction(r->prediction);
  for (const auto& c : r->checks) text += plan::render_check(c) + "\n";
  std::fputs(text.c_str(), stdout);
  return k_exit_ok;
}

int run_plan(const PlanOptions& o) {
  if (!o.measured.empty() && o.package == "torch") return run_prediction(o);
  if (!o.build_ninja.empty() || o.check || o.cpu_time || o.cores || o.memory_gib)
    return report_error(
        "plan: --build-ninja, --check, --cpu-time, --cores and --memory go with --measured");
  if (o.package != "torch")
    return report_error(
        "plan: only 'torch' can be planned here (extensions: tailor build --print-env)");
  auto variant = variant_from_flags(o.variant);
  if (!variant) return report_error(variant.error().message);
  probe::HostReport host = probe_for_torch(o.variant, *variant);
  plan::ResolveOptions ropts = resolve_options_from_flags(o.variant);
  plan::TorchPlan p = plan::resolve_torch_plan(*variant, host, ropts);
  if (p.has_errors()) {
    // Nothing on stdout: a half-right script is worse than none.
    std::fputs(plan::render_problems(p).c_str(), stderr);
    return report_error("the variant has problems (listed above); no plan written", p.exit_code());
  }
  std::string out;
  if (o.format == "json")
    out = with_schema(plan::plan_to_json(p), "plan").dump(2) + "\n";
  else if (o.format == "sh")
    out = plan::render_plan_script(p);
  else if (o.format == "dockerfile")
    out = plan::render_plan_dockerfile(p);
  else
    out = plan::render_plan_text(p);
  if (o.format != "text" && !p.problems.empty())
    std::fputs(plan::render_problems(p).c_str(), stderr);
  std::fputs(out.c_str(), stdout);
  return k_exit_ok;
}
}  // namespace

void setup_plan(CLI::App& sub, RunFn& run) {
  auto o = std::make_shared<PlanOptions>();
  sub.add_option("package", o->package, "what to plan (torch)");
  add_torch_variant_flags(sub, o->variant);
  sub.add_option("--format", o->format, "text, json, sh or dockerfile")
      ->check(CLI::IsMember({"text", "json", "sh", "dockerfile"}));
  sub.add_option("--measured", o->measured,
                 "a build report (a partial run leaves last-run.report.json in its work folder) "
                 "or a .ninja_log: predict the whole build from the units it measured "
                 "(repeatable)");
  sub.add_option("--build-ninja", o->build_ninja,
                 "with --measured: the configured tree's build.ninja (every unit of the build)");
  sub.add_option("--cores", o->cores, "with --measured: the machine's cores (default this one's)")
      ->check(CLI::Range(1, 100000));
  sub.add_option("--memory", o->memory_gib,
                 "with --measured: the machine's memory in GiB (default this one's)")
      ->check(CLI::Range(0.5, 1.0e6));
  sub.add_flag("--check", o->check,
               "with --measured: check the model on the measured units (every other unit from "
               "the rest; the second half of the run from the first)");
  sub.add_flag("--cpu-time", o->cpu_time,
               "with --measured: each unit's CPU time (the governor's unit_cpu_ms) instead of its "
               "wall time, which grows with what else the machine runs");
  sub.callback([&run, o] { run = [o] { return run_plan(*o); }; });
}

}  // namespace tailor::cli
