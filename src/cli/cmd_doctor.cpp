// `tailor doctor [torch] [VARIANT FLAGS]`: the pre-flight checks of a PyTorch build with
// fixes (disk, memory and swap against jobs, toolchain, Python build requirements,
// submodules).
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>

#include "cache/sccache_dist.h"
#include "cli/commands.h"
#include "cli/torch_variant_flags.h"
#include "plan/cross_target.h"
#include "plan/torch_doctor.h"
#include "probe/cxx_runtime.h"
#include "util/strings.h"
#include "util/text_escape.h"
#include "workflow/torch_build.h"
#include "workpath/fixed_path.h"

namespace tailor::cli {

namespace {
/// Owned by the command (shared with the callback): CLI11 writes into these fields
/// while parsing, after setup_doctor has returned.
struct DoctorOptions {
  TorchVariantFlags variant;
  std::string package = "torch";
  bool json = false;
  std::optional<std::string>
      dist;  ///< --dist [STATE_DIR_OR_CLIENT_CONFIG]: the distributed-compile checks
};

/// `tailor doctor --dist [...]`: what can be known about distributed compiles before a build.
int run_dist_doctor(const DoctorOptions& o) {
  SystemCommandRunner runner;
  auto checks = cache::dist::check_dist(*o.dist, std::getenv("TAILOR_DIST"), runner);
  if (o.json) {
    nlohmann::json j{{"ready", cache::dist::checks_ok(checks)},
                     {"checks", nlohmann::json::array()}};
    for (const auto& c : checks)
      j["checks"].push_back(
          {{"name", c.name}, {"status", cache::dist::level_name(c.level)}, {"detail", c.line}});
    std::printf("%s\n", with_schema(j, "doctor").dump(2).c_str());
  } else {
    for (const auto& c : checks)
      std::printf("%-7s %-16s %s\n", std::string(cache::dist::level_name(c.level)).c_str(),
                  c.name.c_str(), terminal_safe(c.line).c_str());
  }
  return cache::dist::checks_ok(checks) ? k_exit_ok : k_exit_failed;
}

// Next to the compiler checks: the C++ runtime $CXX links (torch's libraries and every
// extension must share libstdc++.so.6; a static copy crashes on the first exception).
void add_cxx_runtime_check(plan::DoctorReport& report, CommandRunner& runner) {
  std::error_code ec;
  probe::CxxRuntime rt =
      probe::check_cxx_runtime(probe::extension_cxx(std::getenv("CXX")),
                               std::filesystem::temp_directory_path(ec).string(), runner);
  plan::DoctorCheck c;
  c.name = "cxx-runtime";
  c.detail = rt.checked ? rt.detail : "not checked: " + rt.detail;
  c.ok = !rt.checked || rt.dynamic;
  c.warning = !rt.checked;
  if (!c.ok)
    c.fix =
        "set CXX to a g++ that links libstdc++.so.6 dynamically (the system's /usr/bin/g++), or "
        "unset CXX";
  auto at = std::find_if(report.checks.begin(), report.checks.end(),
                         [](const plan::DoctorCheck& d) { return d.name == "host-compiler"; });
  report.checks.insert(at == report.checks.end() ? at : at + 1, c);
}

plan::DoctorCheck fixed_path_check(CommandRunner& runner) {
  // How extension builds see their work folder at one path (the same bytes and cache
  // keys from any folder): the route this machine takes, a warning without one.
  plan::DoctorCheck c;
  c.name = "fixed-path";
  auto forced = workpath::parse_fixed_path_route(
      std::getenv(std::string(workpath::k_fixed_path_route_variable).c_str()));
  if (!forced) {
    c.ok = false;
    c.detail = forced.error().message;
    c.fix = fmt::format("unset {}", workpath::k_fixed_path_route_variable);
  } else {
    auto choice = workpath::probe_fixed_path_route(
        {workpath::self_executable(), find_in_path("bwrap")}, *forced, runner);
    const workpath::FixedPathRoute route = choice.route();
    c.ok = route != workpath::FixedPathRoute::none;
    c.warning = !c.ok;  // a warning, never a failed check: builds go on, with other bytes
    c.detail = fmt::format("{}{}: {}", workpath::fixed_path_route_name(route),
                           choice.forced.empty() ? "" : " (" + choice.forced + ")",
                           route == workpath::FixedPathRoute::none
                               ? workpath::no_fixed_path_warning(choice)
                               : workpath::describe_fixed_path_route(route));
    if (route != workpath::FixedPathRoute::none && !choice.refused.empty())
      c.detail += "; not " + choice.refusals();
  }
  return c;
}

// A torch for another platform is built there; its extensions cross-build here
// (`tailor build --platform`): the tools that takes, and the command that installs them.
std::optional<plan::DoctorCheck> cross_build_check(const std::string& platform,
                                                   const probe::HostReport& host) {
  const std::string machine = !host.os.arch.empty() ? host.os.arch : host.cpu.arch;
  const plan::CrossPlatform* cross = plan::cross_platform(platform);
  if (!cross || platform == machine) return std::nullopt;
  plan::DoctorCheck c;
  c.name = "cross-extensions";
  std::vector<std::string> have, missing;
  for (const auto& tool : {cross->cxx, cross->qemu.front()})
    (find_in_path(tool).empty() ? missing : have).push_back(tool);
  c.ok = missing.empty();
  c.warning = !c.ok;
  c.detail = fmt::format(
      "torch for {} is built on an {} machine; its extensions cross-build on this {} host with "
      "`tailor build SOURCE --platform {} --gpu ...`{}{}",
      platform, platform, machine, platform, have.empty() ? "" : ": " + join(have, ", ") + " found",
      missing.empty() ? "" : (have.empty() ? ": " : "; ") + join(missing, ", ") + " missing");
  if (!c.ok) c.fix = cross->install;
  return c;
}

int run_doctor(const DoctorOptions& o) {
  if (o.dist) return run_dist_doctor(o);
  if (o.package != "torch")
    return report_error(
        "doctor: only 'torch' can be checked here (extensions: tailor build --print-env)");
  const TorchVariantFlags& f = o.variant;
  auto variant = variant_from_flags(f);
  if (!variant) return report_error(variant.error().message);
  probe::HostReport host = probe_for_torch(f, *variant);
  plan::ResolveOptions ropts = resolve_options_from_flags(f);
  ropts.purpose = plan::PlanPurpose::build_here;
  plan::TorchPlan p = plan::resolve_torch_plan(*variant, host, ropts);
  // No targets asked and no GPU here: the targets are not checked, which is no failure of
  // this machine; say what was checked and what to pass (a build needs them).
  std::optional<plan::DoctorCheck> targets_unchecked;
  if (variant->arch.empty() && variant->gpu.empty() && host.gpus.empty() && p.cuda) {
    auto it = std::find_if(p.problems.begin(), p.problems.end(), [](const plan::PlanProblem& q) {
      return q.field == "arch" && q.kind == plan::ProblemKind::input;
    });
    if (it != p.problems.end()) {
      p.problems.erase(it);
      plan::DoctorCheck c{"arch"};
      c.ok = false;
      c.warning = true;
      c.detail =
          "not checked: no --arch or --gpu given and no GPU on this host (the disk line counts one "
          "target; each "
          "more adds to it)";
      c.fix =
          "pass the GPUs the wheel is for, e.g. --arch '8.0;9.0' or --gpu H100 (`tailor arch "
          "--help` lists the spellings); "
          "`tailor build torch` needs them too";
      targets_unchecked = c;
    }
  }
  SystemCommandRunner runner;
  plan::DoctorFacts facts = workflow::gather_doctor_facts(p, runner);
  plan::DoctorReport report = plan::run_torch_doctor(p, host, facts);
  if (targets_unchecked) report.checks.push_back(*targets_unchecked);
  add_cxx_runtime_check(report, runner);
  report.checks.push_back(fixed_path_check(runner));
  if (auto cross = cross_build_check(p.platform, host)) report.checks.push_back(*cross);
  if (o.json) {
    nlohmann::json j{{"variant", p.name}, {"wheel", p.wheel_name}, {"ready", report.ok()}};
    j["checks"] = nlohmann::json::array();
    for (const auto& c : report.checks)
      j["checks"].push_back({{"name", c.name},
                             {"status", c.ok        ? "ok"
                                        : c.warning ? "warning"
                                                    : "fail"},
                             {"detail", c.detail},
                             {"fix", c.fix}});
    std::printf("%s\n", with_schema(j, "doctor").dump(2).c_str());
  } else {
    std::printf("Pre-flight checks for %s (%s)\n", p.name.c_str(), p.wheel_name.c_str());
    std::string text = plan::render_doctor(report);
    const std::string ready = "ready to build\n";
    if (targets_unchecked && text.ends_with(ready))
      text.replace(text.size() - ready.size(), ready.size(),
                   "ready to build once --arch or --gpu names the targets\n");
    std::fputs(text.c_str(), stdout);
  }
  if (p.exit_code() == k_exit_bad_input) return k_exit_bad_input;
  return report.ok() ? k_exit_ok : k_exit_failed;
}
}  // namespace

void setup_doctor(CLI::App& sub, RunFn& run) {
  auto o = std::make_shared<DoctorOptions>();
  sub.add_option("package", o->package, "torch (the default)");
  add_torch_variant_flags(sub, o->variant);
  sub.add_flag("--json", o->json, "Machine-readable output");
  sub.add_option("--dist", o->dist,
                 "check distributed compiles instead: scheduler, token, servers, bubblewrap, nvcc "
                 "(a `tailor dist` state "
                 "folder or client config; default $TAILOR_DIST, else ~/.cache/tailor/dist)")
      ->expected(0, 1)
      ->default_str("");
  sub.callback([&run, o] { run = [o] { return run_doctor(*o); }; });
}

}  // namespace tailor::cli
