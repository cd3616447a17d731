// `tailor build [SOURCE]`: options into ExtensionBuildOptions, build_extension() does the
// work, this file renders the result (human text or --json). `tailor build torch ...` is
// a nested subcommand owned by cmd_build_torch.cpp; CLI11 matches a subcommand name before
// filling the positional SOURCE, so `build torch` reaches it and `build ./torch` does not.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/build_interrupt.h"
#include "cli/build_output.h"
#include "cli/build_verify.h"
#include "cli/commands.h"
#include "diagnose/diagnosis.h"
#include "plan/build_plan.h"
#include "workflow/extension_build.h"

namespace tailor::cli {
namespace {

struct BuildCommandOptions {
  workflow::ExtensionBuildOptions core;
  std::string progress = "auto";
  std::optional<int> jobs;
  std::string memory_budget;
  std::string verify_wheel;    ///< --verify-reproducible WHEEL
  std::string cache = "auto";  ///< --cache as typed, read once by plan::parse_cache_flag
  bool json = false, tests = false, no_tests = false;
};

nlohmann::json diagnosis_json(const workflow::ExtensionBuildResult& r) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& d : r.diagnoses)
    j.push_back({{"pattern", d.pattern_id},
                 {"line", d.line_number},
                 {"quoted", d.quoted_line},
                 {"cause", d.cause},
                 {"fix", d.fix}});
  return j;
}

nlohmann::json result_json(const workflow::ExtensionBuildResult& r) {
  nlohmann::json j = outputs::to_json(r.report);
  if (!r.message.empty()) j["error"] = r.message;
  if (!r.preflight.checks.empty()) {
    j["preflight"] = nlohmann::json::array();
    for (const auto& c : r.preflight.checks)
      j["preflight"].push_back({{"check", c.name},
                                {"ok", c.ok},
                                {"detail", c.detail},
                                {"problem", c.problem},
                                {"fix", c.fix}});
  }
  if (r.error_block) {
    j["first_error"] = {{"first_line", r.error_block->first_line},
                        {"last_line", r.error_block->last_line},
                        {"lines", r.error_block->lines}};
  }
  if (!r.diagnoses.empty()) j["diagnoses"] = diagnosis_json(r);
  if (!r.check_output.empty()) j["check_output"] = r.check_output;
  return j;
}

int run_build(BuildCommandOptions& o) {
  // Two ways of naming targets; merging them silently would build what neither said.
  // The one resolution (cuda::resolve_target_request) says so too; this says it before
  // anything else is checked.
  if (!o.core.arch.empty() && !o.core.gpu.empty())
    return report_error("use --arch or --gpu, not both");
  if (!o.core.print_env)
    if (auto usable = check_out_dir(o.core.out_dir); !usable)
      return report_error(usable.error().message);
  o.core.jobs = o.jobs;
  if (!o.memory_budget.empty()) {
    auto budget = governor::parse_memory_size(o.memory_budget);
    if (!budget) return report_error(budget.error().message);
    o.core.memory_budget = *budget;
  }
  if (o.tests && o.no_tests) return report_error("--tests and --no-tests exclude each other");
  if (o.tests) o.core.tests = workflow::ExtensionBuildOptions::Tests::always;
  if (o.no_tests) o.core.tests = workflow::ExtensionBuildOptions::Tests::never;
  if (o.progress == "auto")
    o.core.display = builder::default_display_style(stderr);
  else if (o.progress == "live")
    o.core.display = builder::DisplayStyle::live;
  else if (o.progress == "plain")
    o.core.display = builder::DisplayStyle::plain;
  else if (o.progress == "quiet")
    o.core.display = builder::DisplayStyle::quiet;
  else
    return report_error(
        fmt::format("--progress {}: expected auto, live, plain or quiet", o.progress));
  if (o.progress == "quiet") o.core.status_out = nullptr;
  auto cache = plan::parse_cache_flag(o.cache);
  if (!cache) return report_error(cache.error().message, k_exit_bad_input);
  o.core.cache = *cache;
  if (o.core.dist) {
    // Distribution goes through sccache: it is the cache of a --dist build.
    if (!o.core.cache) o.core.cache = cache::CacheTool::sccache;
    if (*o.core.cache != cache::CacheTool::sccache)
      return report_error(fmt::format(
          "--dist compiles through sccache; --cache {} cannot be used with it", o.cache));
  }

  if (!o.verify_wheel.empty()) {
    if (o.core.print_env) return report_error("--verify-reproducible builds: no --print-env");
    return run_verify_reproducible(o.verify_wheel, o.core, o.json);
  }
  install_interrupt_handlers();
  workflow::ExtensionBuildResult r = workflow::build_extension(o.core);
  if (int sig = interrupt_signal(); sig != 0)
    return report_interrupt(sig, r.status == workflow::BuildStatus::ok);
  switch (r.status) {
    case workflow::BuildStatus::printed_env:
      std::fputs(r.print_env.c_str(), stdout);
      return k_exit_ok;
    case workflow::BuildStatus::bad_input:
      return report_error(r.message, k_exit_bad_input);
    case workflow::BuildStatus::ok:
      if (o.json)
        std::printf("%s\n", with_schema(result_json(r), "build").dump(2).c_str());
      else
        std::fputs(render_build_success(r).c_str(), stdout);
      return k_exit_ok;
    default:
      break;
  }
  if (o.json) std::printf("%s\n", with_schema(result_json(r), "build").dump(2).c_str());
  report_error(r.message, k_exit_failed);
  std::fputs(render_build_failure(r).c_str(), stderr);
  return k_exit_failed;
}

}  // namespace

void setup_build(CLI::App& sub, RunFn& run) {
  auto o = std::make_shared<BuildCommandOptions>();
  sub.add_option("SOURCE", o->core.source,
                 "a source folder, an sdist, NAME==VERSION from the index, or a git URL@ref; "
                 "none: the bundled example (inside tailor's repository)");
  // One value per flag (repeat it for several): SOURCE after it stays SOURCE.
  sub.add_option("--arch", o->core.arch,
                 "targets in any spelling `tailor arch` takes (8.6, sm_90a, 8.0+PTX, Hopper); "
                 "repeat it for several")
      ->allow_extra_args(false);
  sub.add_option("--gpu", o->core.gpu,
                 "build for these GPUs: each one's SASS (T4G, A10G, H100, g5g.xlarge); repeat it "
                 "for several")
      ->allow_extra_args(false);
  sub.add_option("--python", o->core.python,
                 "the interpreter whose torch to build against (default python3)");
  sub.add_option(
         "--platform", o->core.platform,
         "the machine the wheel is for: aarch64 on an x86_64 host cross-builds it (Debian's "
         "cross compiler, the index's torch for that platform, the import test under "
         "qemu-user); default: this host's")
      ->type_name("MACHINE");
  sub.add_option("--out", o->core.out_dir,
                 "output folder for wheel, report and log (default ./dist)");
  sub.add_option(
      "--jobs", o->jobs,
      "a fixed count of parallel compile jobs, no memory governor (default: the governor where the "
      "build's ninja is a jobserver client, 1.13 or newer; else from usable memory and the "
      "recipe)");
  sub.add_option("--memory-budget", o->memory_budget,
                 "the most memory the build may use, e.g. 6G: the governor hands out job tokens so "
                 "the build's "
                 "measured RSS stays under it and stops (SIGSTOP) the youngest job when it would "
                 "not; with a "
                 "static count, jobs = budget / the recipe's memory per job (default: cgroup-aware "
                 "free memory)")
      ->type_name("SIZE");
  sub.add_option("--package", o->core.package,
                 "the recipe to use (default: the name the source declares)");
  sub.add_option(
      "--profile", o->core.profile,
      "a restriction the package's recipe allows (e.g. minimal: fewer kernels, a faster build)");
  sub.add_flag(
      "--keep-package-archs", o->core.keep_package_archs,
      "keep the GPU targets a package without a recipe chose itself (nvcc -arch/-gencode in its "
      "setup.py, CUDA_ARCHITECTURES in its CMake files); default: the requested targets replace "
      "them");
  sub.add_flag("--keep-package-source", o->core.keep_package_source,
               "build a package without a recipe exactly as its source is: no bridging of the "
               "torch, CUDA and libstdc++ APIs it uses that today's releases removed, its own "
               "-std=c++14 stays (default: "
               "tailor's copy of the source gets the exact replacement, each listed in the "
               "summary and report)");
  sub.add_option(
      "--cache", o->cache,
      "compiler cache: auto, ccache, sccache or none (default auto: sccache for a shared storage, "
      "else ccache when installed)");
  sub.add_option("--cache-url", o->core.cache_url,
                 "where the cache keeps its entries: redis://HOST[:PORT][/DB], "
                 "s3://BUCKET[/PREFIX] or a folder "
                 "(default: tailor.toml [cache], TAILOR_CACHE_URL, else the tool's own folder)");
  sub.add_option("--config", o->core.config,
                 "a tailor.toml whose [cache] table applies to this build");
  sub.add_option("--wheelhouse", o->core.wheelhouse,
                 "a `tailor publish` wheelhouse (a folder, file:///DIR, http(s)://HOST/PATH or "
                 "s3://BUCKET/PREFIX[?endpoint=URL]): a wheel published for "
                 "the same inputs (source, targets, torch, CUDA, Python) is fetched, checked "
                 "against the index's sha256 and used instead of compiling")
      ->type_name("DIR|URL");
  sub.add_option("--dist", o->core.dist,
                 "compile on an sccache-dist cluster: a `tailor dist` state folder or an sccache "
                 "client config "
                 "(default $TAILOR_DIST, else ~/.cache/tailor/dist)")
      ->expected(0, 1)
      ->default_str("");
  sub.add_option("--work-dir", o->core.work_root,
                 "where sources are copied and built (default ~/.cache/tailor/extensions)");
  sub.add_option("--progress", o->progress,
                 "auto, live, plain or quiet (default auto: live on a terminal)");
  sub.add_flag("--tests", o->tests,
               "run the package's tests/ against the built wheel (default: only for the example)");
  sub.add_flag("--no-tests", o->no_tests, "skip the package's tests");
  sub.add_option(
      "--verify-reproducible", o->verify_wheel,
      "rebuild WHEEL from its tailor provenance (SOURCE when it came from a folder or an sdist) "
      "and compare the bytes: exit 0 when the same, 1 with the members that differ");
  sub.add_flag("--print-env", o->core.print_env,
               "print the variables and commands of the build, build nothing");
  sub.add_flag("--json", o->json, "print the build report as JSON");
  sub.add_flag_function(
      "--no-wait", [o](std::int64_t) { o->core.wait_for_lock = false; },
      "fail at once when another tailor build uses the work or output folder (default: wait)");
  sub.add_flag(
      "--sandbox", o->core.sandbox,
      "no network for the build, and nothing writable but its work folder and the compiler cache: "
      "a setup.py "
      "that writes to $HOME or connects fails with its own error (needs a private namespace)");
  setup_build_torch(
      *sub.add_subcommand(
          "torch", "Build PyTorch itself for chosen targets (see `tailor build torch --help`)"),
      run);
  sub.callback([o, &run, &sub] {
    // The nested `torch` subcommand sets `run` itself; do not overwrite it.
    if (sub.get_subcommands().empty()) run = [o] { return run_build(*o); };
  });
}

}  // namespace tailor::cli
