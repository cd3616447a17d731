// The one builder: any plan's steps, torch's or an extension's, run the same way. Over a
// BuildSession (builder/build_session.h) `run_plan` carries out the plan's execution
// policy (plan/build_plan.h): the steps at the fixed work path (or the sandbox), the
// build's own sccache server or the --dist session, the resume fingerprint, the memory
// governor or the static count, the learned unit times handed to the build driver, the
// steps under the BuildRunner with one log, then the job timeline, the reused units, the
// cache's counts and what the run teaches the next build of the same key. Everything it
// finds goes into the BuildReport; a failed step is diagnosed once, from its last lines.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "builder/build_runner.h"
#include "builder/build_session.h"
#include "builder/preflight.h"
#include "builder/step_list.h"
#include "diagnose/diagnosis.h"
#include "outputs/build_report.h"
#include "plan/build_plan.h"

namespace tailor::builder {

struct PlanRun {
  /// Why the run ended without a whole build: it could not start (bad input, a sandbox this
  /// machine cannot make, a cache server that did not start), a step failed, or a signal
  /// came; nullopt when every step ran and succeeded.
  std::optional<StepStop> stop;
  /// The steps as they ran (the plan's with the run's additions), for the log's readers.
  std::vector<plan::Step> steps;
  std::optional<RunOutcome> outcome;  ///< unset when no step started; its facts: what the
                                      ///< run said (the driver's events, Ninja's steps)
  /// A failed step, diagnosed once from its last lines (the runner's LogTail): the first
  /// error block and what the failure patterns say of it, line numbers the log's.
  std::optional<diagnose::ErrorBlock> error_block;
  std::vector<diagnose::Diagnosis> diagnoses;
  bool tree_kept = false;                 ///< an earlier run's build tree was kept (resume)
  std::vector<PreflightCheck> preflight;  ///< --dist's checks, one line each
};

/// Runs `plan`'s steps as its `run` policy says, over `session`, recording in the session's
/// report (targets and env as the caller filled them) the log, the work path, the governor,
/// the cache's counts, --dist's counts, the job timeline, the reused units and the unit times.
PlanRun run_plan(const plan::BuildPlan& plan, BuildSession& session);

/// The shared cache storage (Redis, S3) asked once, before the plan decides the cache, for
/// torch and extension builds alike: one that nothing answers at is a warning and `tool`
/// becomes none (sccache would refuse to start its server); one that answers and refuses
/// is a setting to fix: a bad_input stop, rather than building uncached every time. Not
/// asked for a local storage, for --cache none, or without the session's check.
StepResult settle_cache_storage(const cache::CacheSettings& settings,
                                std::optional<cache::CacheTool>& tool, const BuildSession& session);

/// The key of a plan's learned records (governor/governor_profile.h).
std::string plan_record_key(const plan::BuildPlan& plan, const std::vector<std::string>& targets);

}  // namespace tailor::builder
