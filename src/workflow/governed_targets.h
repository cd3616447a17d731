// Chosen Ninja targets of a configured build tree run under the one builder (run_plan: the
// BuildRunner, the memory governor's jobserver, the job timeline and per-unit peaks), as a
// whole build runs its units: for measuring units a whole build reaches only late (PyTorch's
// CUDA kernels come after all of torch_cpu). Behind the hidden `tailor __governed`.
#pragma once
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "outputs/build_report.h"
#include "plan/build_plan.h"
#include "probe/host_report.h"
#include "util/expected.h"
#include "util/process.h"

namespace tailor::workflow {

struct GovernedOptions {
  std::string build_dir;                         ///< holds build.ninja
  std::string work_dir;                          ///< the run's log, jobserver fifo and report
  std::vector<std::string> targets;              ///< Ninja targets, as `ninja TARGET...` takes them
  std::string report_path;                       ///< "": WORK/governed.report.json
  int max_jobs = 0;                              ///< 0: the host's build cores
  uint64_t prior_job_bytes = uint64_t{2} << 30;  ///< a job's memory before one is measured
  std::chrono::seconds timeout{3600};
};

/// The options checked: build.ninja in build_dir, at least one target, no target that is
/// an option to Ninja. Paths made absolute.
Expected<GovernedOptions> check_governed_options(GovernedOptions o);

/// The plan the builder runs: one step `ninja -C BUILD TARGET...` at the real path, no
/// resume, no compiler cache, jobs governed when the host's Ninja is a jobserver client.
plan::BuildPlan governed_plan(const GovernedOptions& o, const probe::HostReport& host);

struct GovernedResult {
  outputs::BuildReport report;
  bool ok = false;
  bool interrupted = false;
  std::string stop;  ///< why the run ended without every target built; "" when ok
};

/// Runs the targets, writes the report (outputs::to_json) to `report_path` whatever the
/// end, and prints one line per finished unit (time, peak) on `out`.
GovernedResult run_governed(const GovernedOptions& o, CommandRunner& runner, std::FILE* out);

}  // namespace tailor::workflow
