// `tailor build --platform NAME` on a host of another architecture: the steps' cross parts
// (which platform, its prerequisites, the prepared target, the wheel's machine, the import
// test under qemu-user). Declared in extension_helpers.h.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "cuda/gpu_platform.h"
#include "util/process.h"
#include "util/strings.h"
#include "workflow/cross_prepare.h"
#include "workflow/extension_helpers.h"

namespace tailor::workflow::detail {
namespace fs = std::filesystem;
using outputs::CheckResult;
using outputs::CheckStatus;

std::string host_machine(const probe::HostReport& host) {
  return !host.os.arch.empty() ? host.os.arch : host.cpu.arch;
}

StepResult choose_cross_platform(const ExtensionBuildOptions& o, ExtensionBuildState& s,
                                 const std::optional<std::string>& implied) {
  const std::string host = host_machine(s.host);
  if (o.platform.empty() || o.platform == host) {
    if (implied && !implied->empty() && *implied != host)
      return stop(BuildStatus::bad_input,
                  fmt::format("{}: a {} GPU, and this host is {}: add --platform {} to "
                              "cross-build its wheel here, or build on an {} machine",
                              s.result.report.targets_spec, *implied, host, *implied, *implied));
    return std::nullopt;
  }
  const plan::CrossPlatform* p = plan::cross_platform(o.platform);
  if (!p)
    return stop(BuildStatus::bad_input,
                fmt::format("--platform {}: tailor cross-builds for {} (this host is {})",
                            o.platform, join(plan::cross_platform_names(), ", "), host));
  if (implied && !implied->empty() && *implied != p->name)
    return stop(BuildStatus::bad_input, fmt::format("--platform {}: {} is a {} GPU", p->name,
                                                    s.result.report.targets_spec, *implied));
  s.cross_platform = p;
  s.result.report.platform = p->name;
  // Its own work folder: a native and a cross build of one source run side by side.
  s.work_dir += "-" + p->name;
  return std::nullopt;
}

StepResult check_cross_prerequisites(const ExtensionBuildState& s) {
  const plan::CrossPlatform* p = s.cross_platform;
  if (!p) return std::nullopt;
  std::vector<std::string> missing;
  for (const auto& tool : {p->cc, p->cxx})
    if (find_in_path(tool).empty()) missing.push_back(tool);
  if (!missing.empty())
    return stop(BuildStatus::preflight_failed,
                fmt::format("a cross build for {} needs {} on PATH: install it with `{}`", p->name,
                            join(missing, " and "), p->install));
  if (!s.toolkit || s.toolkit->nvcc.empty())
    return stop(BuildStatus::preflight_failed,
                fmt::format("a cross build for {} compiles device code with this host's nvcc, and "
                            "none was found",
                            p->name));
  if (!s.python || !s.python->torch)
    return stop(
        BuildStatus::preflight_failed,
        fmt::format(
            "a cross build runs the package's build in {} with its torch (the "
            "target's is torch of the same version for {}): it has no torch{}",
            s.python_arg, p->name,
            s.python && !s.python->torch_error.empty() ? " (" + s.python->torch_error + ")" : ""));
  return std::nullopt;
}

namespace {
CrossRequest cross_request(const ExtensionBuildOptions& o, const ExtensionBuildState& s) {
  const std::string& v = s.python->version;
  CrossRequest r;
  r.platform = s.cross_platform;
  r.python = s.python->path;
  r.python_version = v.substr(0, v.find('.', v.find('.') + 1));
  r.torch_version = s.python->torch->version;
  r.nvcc = s.toolkit->release;
  r.cache_root = o.cross_cache;
  r.for_import_test =
      !find_qemu(*s.cross_platform).empty() && o.tests != ExtensionBuildOptions::Tests::never;
  r.say = [&o](const std::string& line) { status(o, line); };
  return r;
}
}  // namespace

void plan_cross_paths(const ExtensionBuildOptions& o, ExtensionBuildState& s) {
  if (s.cross_platform) s.request.cross = cross_target_paths(cross_request(o, s));
}

StepResult prepare_cross(const ExtensionBuildOptions& o, ExtensionBuildContext& ctx,
                         ExtensionBuildState& s) {
  if (!s.cross_platform) return std::nullopt;
  const CrossRequest r = cross_request(o, s);
  status(o, fmt::format("==> preparing the {} target (torch {}, Python {})", r.platform->name,
                        r.torch_version, r.python_version));
  auto target = prepare_cross_target(r, ctx.runner);
  if (!target)
    return stop(BuildStatus::build_failed, fmt::format("preparing the {} target: {}",
                                                       r.platform->name, target.error().message));
  s.cross = *target;
  s.request.cross = *target;
  auto& tc = s.result.report.toolchain;
  tc["cross"] =
      fmt::format("{} ({}), torch {} (CUDA {}) for {}", r.platform->cxx, r.platform->triplet,
                  target->torch_version, target->torch_cuda, r.platform->name);
  return std::nullopt;
}

StepResult check_wheel_machine(const ExtensionBuildState& s,
                               const std::vector<std::pair<std::string, std::string>>& machines) {
  const std::string want = s.cross_platform ? s.cross_platform->name : host_machine(s.host);
  std::vector<std::string> foreign;
  for (const auto& [path, machine] : machines)
    if (!machine.empty() && machine != want) foreign.push_back(path + " (" + machine + ")");
  if (foreign.empty()) return std::nullopt;
  // A package that calls the host's compiler itself instead of $CC/$CXX.
  return stop(BuildStatus::verify_failed,
              fmt::format("the wheel is for {}, and {} {} built for another machine: the package "
                          "compiled {} with a compiler of its own choosing instead of $CC/$CXX",
                          want, join(foreign, ", "), foreign.size() == 1 ? "was" : "were",
                          foreign.size() == 1 ? "it" : "them"));
}

StepResult cross_import_check(const ExtensionBuildOptions& o, ExtensionBuildContext& ctx,
                              ExtensionBuildState& s, const std::string& import_names) {
  outputs::BuildReport& rep = s.result.report;
  const plan::CrossPlatform& p = *s.cross_platform;
  const std::string qemu = find_qemu(p);
  if (qemu.empty() || !s.cross || !fs::exists(s.cross->site_dir)) {
    rep.checks.push_back(
        {"import", CheckStatus::skipped,
         fmt::format("no qemu-user for {} here (install it with `{}`): the wheel was not imported",
                     p.name, p.install)});
    return std::nullopt;
  }
  std::error_code ec;
  const fs::path target = fs::path(s.work_dir) / "cross-import";
  fs::remove_all(target, ec);
  s.venv = target.string();
  status(o, fmt::format("==> import test under {} ({} Python {}, torch {})",
                        fs::path(qemu).filename().string(), p.name, s.cross->python_version,
                        s.cross->torch_version));
  std::ofstream log(rep.log_path, std::ios::app);
  auto run = [&](std::vector<std::string> argv,
                 std::map<std::string, std::optional<std::string>> env,
                 std::chrono::seconds limit) {
    CommandSpec spec;
    spec.argv = std::move(argv);
    spec.env = std::move(env);
    spec.cwd = s.work_dir;
    spec.timeout = limit;
    std::string out;
    spec.on_line = [&](std::string_view line) { out.append(line).push_back('\n'); };
    CommandResult r = ctx.runner.run(spec);
    log << "### tailor check: " << join(spec.argv, " ") << "\n" << out;
    log << "### exit " << r.exit_code << (r.timed_out ? " (timed out)" : "") << "\n";
    return std::make_pair(r.ok(), out);
  };
  std::vector<std::string> install = {rep.python,
                                      "-m",
                                      "pip",
                                      "install",
                                      "-q",
                                      "--no-deps",
                                      "--no-index",
                                      "--target",
                                      target.string(),
                                      "--only-binary=:all:",
                                      "--implementation",
                                      "cp",
                                      "--python-version",
                                      s.cross->python_version};
  for (const auto& w : p.wheel_platforms) {
    install.push_back("--platform");
    install.push_back(w);
  }
  install.push_back(s.wheel);
  auto [installed, install_out] = run(install, {}, std::chrono::seconds(300));
  std::string code = fmt::format("import torch, {}; print({}.__file__)", import_names,
                                 split_any(import_names, ", ").front());
  auto [ok, out] =
      installed ? run({qemu, "-L", s.cross->sysroot, s.cross->python, "-c", code},
                      {{"PYTHONPATH", target.string() + ":" +
                                          fs::path(s.cross->torch_dir).parent_path().string() +
                                          ":" + s.cross->site_dir},
                       {"PYTHONHOME", std::nullopt},
                       {"QEMU_LD_PREFIX", s.cross->sysroot},
                       {"PYTHONWARNINGS", "ignore"}},
                      std::chrono::seconds(900))
                : std::make_pair(false, install_out);
  if (!ok) {
    rep.checks.push_back({"import", CheckStatus::failed, "import " + import_names + " under qemu"});
    auto lines = split_any(out, "\n");
    if (lines.size() > 30) lines.erase(lines.begin(), lines.end() - 30);
    s.result.check_output = join(lines, "\n");
    return stop(BuildStatus::check_failed,
                fmt::format("the built wheel does not import under {} ({})",
                            fs::path(qemu).filename().string(), import_names));
  }
  rep.checks.push_back({"import", CheckStatus::passed,
                        fmt::format("import {} under {} with {} Python {} and torch {}",
                                    import_names, fs::path(qemu).filename().string(), p.name,
                                    s.cross->python_version, s.cross->torch_version)});
  return std::nullopt;
}

}  // namespace tailor::workflow::detail
