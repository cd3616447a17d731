// `tailor plan [torch] [VARIANT FLAGS | --config tailor.toml --variant NAME]
//  [--format text|json|sh|dockerfile]`: the resolved PyTorch build without building.
#include <cstdio>

#include "cli/commands.h"
#include "cli/torch_variant_flags.h"
#include "plan/torch_plan_render.h"

namespace tailor::cli {

namespace {
struct PlanOptions {
  TorchVariantFlags variant;
  std::string package = "torch";
  std::string format = "text";
};

int run_plan(const PlanOptions& o) {
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
  sub.callback([&run, o] { run = [o] { return run_plan(*o); }; });
}

}  // namespace tailor::cli
