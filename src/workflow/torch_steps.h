// The steps of `tailor build torch`, in the order build_torch runs them (torch_build_steps()).
// Every decision is the plan's (plan/torch_plan.h: targets, toolkit, host compiler, the
// compiler cache and its variables, the commands); the steps carry it out: lock, check the
// source, run the commands through the one builder (builder/run_plan.h), verify, import,
// smoke-test, publish. Each is a function over the run's context (what it reaches the
// outside through: processes, the caller's environment, the cache storage, the progress
// display, the output streams) and the state the earlier steps left; each returns a
// StepStop to end the run (builder::BuildStatus + one line) or nothing to go on. Unit tests drive
// them over fakes (tests/workflow/torch_steps_test.cpp); the whole chain with the real nvcc is
// tests/e2e/build_torch*.sh.
#pragma once
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "builder/build_runner.h"
#include "builder/build_session.h"
#include "builder/step_list.h"
#include "cache/compiler_cache.h"
#include "outputs/build_report.h"
#include "outputs/ninja_log.h"
#include "outputs/verify.h"
#include "plan/torch_plan.h"
#include "probe/host_report.h"
#include "source/source_identity.h"
#include "util/process.h"
#include "workflow/build_context.h"
#include "workflow/torch_build.h"
#include "workpath/folder_lock.h"

namespace tailor::workflow {

/// What a torch build reaches the outside world through: a build's (BuildContext) and its
/// two streams. `system` gives the real ones; tests hand in fakes. Files are written only
/// under the plan's work folder, the source tree the build runs in and the out folder.
struct TorchBuildContext : BuildContext {
  std::FILE* out = stdout;  ///< what the build says as it goes: the plan, checks, the wheel
  std::FILE* err = stderr;  ///< problems, warnings, the first error and its diagnosis

  static TorchBuildContext system(CommandRunner& runner);
  /// The one builder's session over this context: headlines on `out` (plain under a
  /// display handed in, else its default style), warnings on `err`.
  builder::BuildSession session(outputs::BuildReport& report) const {
    return BuildContext::session(
        report, out, display ? builder::DisplayStyle::plain : builder::default_display_style(out),
        err);
  }
};

/// The request, then what the steps so far found, for the steps after them.
struct TorchBuildState {
  plan::TorchVariant variant;
  probe::HostReport host;
  plan::ResolveOptions resolve;

  cache::CacheSettings cache_settings;  ///< the config's [cache], TAILOR_CACHE(_URL), --cache-url
  plan::TorchPlan plan;
  std::string work;                                         ///< the plan's work folder, absolute
  std::optional<workpath::FolderLock> work_lock, out_lock;  ///< held to the end of the run
  std::optional<int64_t> epoch_override;                    ///< SOURCE_DATE_EPOCH from the caller
  /// What the source is and its SOURCE_DATE_EPOCH; known before the build when the source
  /// is already there, else (a clone) after it.
  std::optional<source::SourceIdentity> identity;
  std::vector<plan::Step> steps;  ///< the plan's commands as this run runs them
  std::string log_path;
  /// The build's record: what the run found (log, work path, governor, cache, jobs) and
  /// the torch section the later steps fill.
  outputs::BuildReport report;

  std::string built;  ///< the wheel the build left in the source's dist/
  outputs::TargetVerification verification;
  std::string manylinux_needed;             ///< "manylinux_2_35_aarch64"
  std::vector<std::string> needed_sonames;  ///< DT_NEEDED outside the wheel (runtime packages)
  std::string wheel_name;                   ///< torch-<version>-cpXY-cpXY-<tag>.whl
  std::string renamed;                      ///< the normalised wheel in the work folder
  std::string venv;                         ///< the import check's clean venv
  std::string import_json;                  ///< what data/build/torch_import_check.py printed
  std::string smoke = "skipped (no GPU)";
  TorchBuildResult result;
};

using builder::BuildStatus;
using builder::StepStop;
using TorchStepResult = builder::StepResult;
using TorchStepFn = TorchStepResult (*)(const TorchBuildOptions&, TorchBuildContext&,
                                        TorchBuildState&);

namespace torch_steps {
/// 1. The plan over the request, the cache settings layered and --cache, the shared
/// storage checked first (builder::settle_cache_storage: one that nothing answers at is a
/// warning and an uncached build, one that refuses stops it); every problem printed, then
/// a stop with the plan's status.
TorchStepResult resolve_plan(const TorchBuildOptions& o, TorchBuildContext& ctx,
                             TorchBuildState& s);
/// 2. The work folder (created) and the out folder: one build at a time in each.
TorchStepResult lock_folders(const TorchBuildOptions& o, TorchBuildContext& ctx,
                             TorchBuildState& s);
/// 3. SOURCE_DATE_EPOCH, the source's identity when it is there, a --source tree with its
/// submodules; the plan's commands as this run runs them (a clone already made is kept:
/// the build resumes; --no-venv drops the venv and its requirements).
TorchStepResult check_source(const TorchBuildOptions& o, TorchBuildContext& ctx,
                             TorchBuildState& s);
/// 4. The commands through builder::run_plan: the fixed work path, the build's own
/// sccache server, the memory governor, the unit times, the resume fingerprint; the Ninja
/// job timeline; a failure diagnosed from the log. --configure-only ends here (exit 0).
TorchStepResult run_build(const TorchBuildOptions& o, TorchBuildContext& ctx, TorchBuildState& s);
/// 5. The wheel: exactly the targets in libtorch_cuda.so, the manylinux tag its libraries
/// need, normalised and renamed in the official style.
TorchStepResult verify_wheel(const TorchBuildOptions& o, TorchBuildContext& ctx,
                             TorchBuildState& s);
/// 6. The wheel alone in a clean venv: torch imports from it, with the targets' arch list.
TorchStepResult import_check(const TorchBuildOptions& o, TorchBuildContext& ctx,
                             TorchBuildState& s);
/// 7. A GPU smoke test on a GPU the targets cover; skipped (and said why) otherwise.
TorchStepResult smoke_test(const TorchBuildOptions& o, TorchBuildContext& ctx, TorchBuildState& s);
/// 8. Wheel, report (JSON and HTML), release notes, runtime Dockerfile and log, together.
TorchStepResult publish(const TorchBuildOptions& o, TorchBuildContext& ctx, TorchBuildState& s);
}  // namespace torch_steps

struct TorchStep {
  const char* name;
  TorchStepFn run;
};
/// The steps above, in order.
const std::vector<TorchStep>& torch_build_steps();

/// The steps in order over `ctx`, from the request in `s` (variant, host, resolve options);
/// the first stop ends the run, an error line printed for it unless tailor was interrupted
/// (the CLI says "interrupted" then). The public build_torch is this over the real host.
TorchBuildResult build_torch(const TorchBuildOptions& o, TorchBuildContext& ctx,
                             TorchBuildState& s);

}  // namespace tailor::workflow
