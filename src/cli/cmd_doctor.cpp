// `tailor doctor [VARIANT FLAGS]`: the pre-flight checks of a PyTorch build with fixes
// (disk, memory and swap against jobs, toolchain, Python build requirements, submodules).
#include <cstdio>

#include "build/torch_build.h"
#include "cli/commands.h"
#include "cli/torch_variant_flags.h"
#include "plan/torch_doctor.h"

namespace tailor::cli {

namespace {
int run_doctor(const TorchVariantFlags& f) {
  auto variant = variant_from_flags(f);
  if (!variant) return report_error(variant.error().message);
  probe::HostReport host = probe_for_torch(f, *variant);
  plan::ResolveOptions ropts;
  ropts.purpose = plan::PlanPurpose::build_here;
  ropts.work_dir = f.work_dir;
  plan::BuildPlan p = plan::resolve_torch_plan(*variant, host, ropts);
  SystemCommandRunner runner;
  plan::DoctorFacts facts = build::gather_doctor_facts(p, runner);
  plan::DoctorReport report = plan::run_torch_doctor(p, host, facts);
  std::printf("Pre-flight checks for %s (%s)\n", p.name.c_str(), p.wheel_name.c_str());
  std::fputs(plan::render_doctor(report).c_str(), stdout);
  if (p.exit_code() == k_exit_bad_input) return k_exit_bad_input;
  return report.ok() ? k_exit_ok : k_exit_failed;
}
}  // namespace

void setup_doctor(CLI::App& sub, RunFn& run) {
  auto f = std::make_shared<TorchVariantFlags>();
  std::string package;
  sub.add_option("package", package, "torch (the default)");
  add_torch_variant_flags(sub, *f);
  sub.callback([&run, f] { run = [f] { return run_doctor(*f); }; });
}

}  // namespace tailor::cli
