// The state resolve_torch_plan's steps share, and the steps that render what a resolved
// torch plan writes out (torch_plan_env.cpp: the build's environment, work layout,
// compiler cache, steps and run policy). Internal to plan/: torch_plan.cpp resolves the
// variant against the host and calls these.
#pragma once
#include <optional>
#include <string>

#include "plan/torch_catalog.h"
#include "plan/torch_plan.h"
#include "plan/torch_platform.h"
#include "plan/torch_validation.h"
#include "probe/host_report.h"

namespace tailor::plan::torch_context {

struct Context {
  const TorchCatalog& catalog;
  const probe::HostReport& host;
  const ResolveOptions& options;
  TorchPlan& plan;
  std::optional<ImpliedPlatform> implied;  ///< what the GPU names say about the platform

  ProblemSeverity host_severity() const {
    return options.purpose == PlanPurpose::describe ? ProblemSeverity::warning
                                                    : ProblemSeverity::error;
  }
  void add(ProblemSeverity s, ProblemKind k, std::string field, std::string msg, std::string fix) {
    plan.problems.push_back({s, k, std::move(field), std::move(msg), std::move(fix)});
  }
  void input_error(std::string field, std::string msg, std::string fix) {
    add(ProblemSeverity::error, ProblemKind::input, std::move(field), std::move(msg),
        std::move(fix));
  }
  void host_problem(std::string field, std::string msg, std::string fix) {
    add(host_severity(), ProblemKind::host, std::move(field), std::move(msg), std::move(fix));
  }
  void take(Problems ps) {
    for (auto& p : ps) plan.problems.push_back(std::move(p));
  }
  bool same_platform() const { return plan.platform == plan.host_platform; }
};

/// The wheel's local label: "cu126", "cpu"; a CUDA build whose version could not be
/// chosen (a problem already says so) keeps the bare "cu".
std::string wheel_label(const TorchPlan& p);

/// The build's environment: CMake and torch's switches, features, BLAS, CFLAGS, the CUDA
/// targets, toolkit and nvcc flags, and the wheel's version.
void build_env(Context& c, const probe::CudaToolkit* tk);
/// Every work path, absolute (under the options' base folder).
void build_layout(Context& c);
void resolve_cache(Context& c);
/// The libraries taken from the system (plan/system_libraries.h), after the layout.
void resolve_system_libraries(Context& c);
/// Clone (unless a source folder was given), venv, requirements, and the release's build.
void build_steps(Context& c, const TorchRelease* rel);
ExecutionPolicy torch_run_policy(const TorchPlan& plan, const probe::HostReport& host,
                                 const ResolveOptions& options);

}  // namespace tailor::plan::torch_context
