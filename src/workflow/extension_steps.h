// The steps of `tailor build` for an extension package, in the order build_extension runs
// them. Each is a function over the run's context (what it reaches the outside through:
// processes, the probe, the caller's environment, the progress display) and the state the
// earlier steps left; each returns a StepStop to end the run (status + one line) or
// nothing to go on. Unit tests drive them one at a time over fakes
// (tests/workflow/extension_steps_test.cpp).
#pragma once
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "builder/build_runner.h"
#include "builder/build_session.h"
#include "plan/extension_plan.h"
#include "plan/extension_recipe.h"
#include "probe/probe.h"
#include "source/source_identity.h"
#include "util/process.h"
#include "wheelhouse/wheelhouse_store.h"
#include "workflow/build_context.h"
#include "workflow/extension_build.h"
#include "workpath/fixed_path.h"
#include "workpath/folder_lock.h"

namespace tailor::workflow {

/// What an extension build reaches the outside world through: a build's (BuildContext) and
/// the probe. `system` gives the real ones; tests hand in fakes. Files are written only
/// under the options' work root and out folder.
struct ExtensionBuildContext : BuildContext {
  /// The host as probe sees it (Pythons are not probed there: the target one is, alone).
  std::function<probe::HostReport(const probe::ProbeOptions&)> probe_host;
  /// One interpreter and its torch; nullopt when it cannot run. `may_write` false: a
  /// cached answer may be read but nothing is written (--print-env writes no file).
  std::function<std::optional<probe::PythonInstall>(const std::string& python, bool may_write)>
      probe_python;

  static ExtensionBuildContext system(CommandRunner& runner);
  /// The one builder's session over this context: headlines on the options' status_out in
  /// their display style.
  builder::BuildSession session(const ExtensionBuildOptions& o,
                                outputs::BuildReport& report) const {
    return BuildContext::session(report, o.status_out, o.display);
  }
};

/// What the steps so far found, for the steps after them.
struct ExtensionBuildState {
  ExtensionBuildResult result;  ///< report, diagnosis, published files
  std::chrono::steady_clock::time_point started;
  source::SourceSpec spec;
  std::string work_root, work_dir;
  probe::HostReport host;
  std::optional<probe::PythonInstall> python;  ///< the target interpreter, when it runs
  std::string python_arg;                      ///< as asked (--python, else python3)
  cuda::TargetSet targets;
  const probe::CudaToolkit* toolkit = nullptr;  ///< into `host`: plan::choose_toolkit's choice
  std::string package;
  const plan::ExtensionRecipe* recipe = nullptr;
  plan::ExtensionBuildRequest request;
  plan::ExtensionBuildPlan build_plan;
  std::string source_dir;  ///< the prepared copy in the work folder
  std::string wheel;       ///< the built wheel
  std::string wheelhouse;  ///< --wheelhouse, else [wheelhouse] url of --config; "" none
  std::shared_ptr<const wheelhouse::WheelhouseStore> wheelhouse_store;  ///< opened once
  std::string venv, venv_python;
  /// A module the package imports at run time that the target environment lacks (and the
  /// wheel does not provide): its import and smoke checks are skipped, not failed.
  std::string missing_dependency;
  /// The GPU smoke test when it ran in the import test's interpreter (one import of the
  /// package, not two: mamba-ssm's takes 14 s): whether it passed, and its output.
  std::optional<std::pair<bool, std::string>> smoke_run;
  std::optional<source::SourceIdentity> identity;  ///< what the source is, its SOURCE_DATE_EPOCH
  /// --platform for another machine: its facts, and the target prepare_build readied.
  const plan::CrossPlatform* cross_platform = nullptr;
  std::optional<plan::CrossTarget> cross;
  std::optional<workpath::FolderLock> work_lock,
      out_lock;  ///< held from preflight to the end of the run
};

using builder::StepResult;
using builder::StepStop;

/// 1. Source, options, probe, targets, toolkit, toolchain report, recipe, plan request.
StepResult resolve_inputs(const ExtensionBuildOptions& o, ExtensionBuildContext& ctx,
                          ExtensionBuildState& s);
/// --print-env instead of 2-8: the plan as a shell script, nothing fetched or built.
StepResult print_build_env(const ExtensionBuildOptions& o, ExtensionBuildContext& ctx,
                           ExtensionBuildState& s);
/// 2. Preflight: every problem at once.
StepResult check_toolchain(const ExtensionBuildOptions& o, ExtensionBuildContext& ctx,
                           ExtensionBuildState& s);
/// 3. Source into the work folder, the plan, its patches, the environment.
StepResult prepare_build(const ExtensionBuildOptions& o, ExtensionBuildContext& ctx,
                         ExtensionBuildState& s);
/// 4. The plan's commands under the BuildRunner; a failure is diagnosed from the log.
StepResult run_build(const ExtensionBuildOptions& o, ExtensionBuildContext& ctx,
                     ExtensionBuildState& s);
/// 5. The wheel, its hash, its targets against the request.
StepResult verify_wheel(const ExtensionBuildOptions& o, ExtensionBuildContext& ctx,
                        ExtensionBuildState& s);
/// 6. Install into a clean venv that sees the target's torch, and import.
StepResult import_check(const ExtensionBuildOptions& o, ExtensionBuildContext& ctx,
                        ExtensionBuildState& s);
/// 7. The package's tests, then the GPU smoke test (skipped without a GPU).
StepResult run_package_tests(const ExtensionBuildOptions& o, ExtensionBuildContext& ctx,
                             ExtensionBuildState& s);
/// 8. Wheel, report and log published together.
StepResult publish_outputs(const ExtensionBuildOptions& o, ExtensionBuildContext& ctx,
                           ExtensionBuildState& s);

/// The steps in order over `ctx`; build_extension(options) is this over the real host.
ExtensionBuildResult build_extension(const ExtensionBuildOptions& o, ExtensionBuildContext& ctx);

/// The module Python could not find, from an import's output (the last
/// "ModuleNotFoundError: No module named 'X'"), or nullopt.
std::optional<std::string> missing_module_in(std::string_view import_output);

}  // namespace tailor::workflow
