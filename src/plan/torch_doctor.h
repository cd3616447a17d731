// `tailor doctor`: the pre-flight checks of a PyTorch build with their fixes, as a pure
// function of the plan, the host and a few gathered facts (installed Python packages,
// empty submodules), so every check is tested with hand-made facts.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "plan/torch_plan.h"
#include "probe/host_report.h"

namespace tailor::plan {

struct DoctorFacts {
  /// Installed distribution versions in the build Python (nullopt: not installed);
  /// empty map: not checked (no Python to ask).
  std::map<std::string, std::optional<std::string>> python_packages;
  bool python_checked = false;
  /// Source tree checks (only with --source or an existing clone).
  bool source_checked = false;
  bool source_exists = false;
  std::vector<std::string> empty_submodules;  ///< third_party/* folders that are empty
  /// The plan's system libraries (TorchPlan::system_libraries) not installed here.
  MissingSystemLibraries system_missing;
};

struct DoctorCheck {
  std::string name;  ///< disk, memory, swap, nvcc, host-compiler, python, python-deps, submodules,
                     ///< system-libs, plan
  bool ok = true;
  bool warning = false;  ///< not fatal
  std::string detail;
  std::string fix;
};

struct DoctorReport {
  std::vector<DoctorCheck> checks;
  bool ok() const;  ///< no failed non-warning check
};

DoctorReport run_torch_doctor(const TorchPlan& plan, const probe::HostReport& host,
                              const DoctorFacts& facts);
std::string render_doctor(const DoctorReport& report);

/// "packaging>=22,<24" -> name "packaging", specs {">=22", "<24"}.
struct Requirement {
  std::string name;
  std::vector<std::string> specs;
};
Requirement parse_requirement(std::string_view text);
/// Whether `version` satisfies every spec (<, <=, >, >=, ==, !=, ~= on dotted numbers).
bool satisfies(std::string_view version, const std::vector<std::string>& specs);

}  // namespace tailor::plan
