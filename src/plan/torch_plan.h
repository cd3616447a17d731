// Resolution: one pure function from a variant and a detected host to a TorchPlan, the
// complete description of a PyTorch source build: every environment variable, the
// Python build requirements with the pins the release needs, the commands, the
// estimates (with how they were derived) and every problem found on the way.
// Renderers (text, json, sh, dockerfile) and the builder read only this.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cuda/target_set.h"
#include "plan/build_plan.h"
#include "plan/system_libraries.h"
#include "plan/torch_catalog.h"
#include "plan/torch_variant.h"
#include "probe/host_report.h"

namespace tailor::plan {

enum class ProblemSeverity { error, warning };
/// input: the variant itself is wrong (exit 2); host: this machine cannot build it (exit 1).
enum class ProblemKind { input, host };

struct PlanProblem {
  ProblemSeverity severity = ProblemSeverity::error;
  ProblemKind kind = ProblemKind::input;
  std::string field;    ///< "cuda", "arch", "python", "host.glibc" ...
  std::string message;  ///< what is wrong
  std::string fix;      ///< what to do about it
};

/// What the plan is for: `plan` describes a build that may run elsewhere (this host's
/// missing pieces are warnings); `build` and `doctor` run here (they are errors).
enum class PlanPurpose { describe, build_here };

/// What a torch build will cost (the jobs and their reason are the BuildPlan's).
struct PlanEstimate {
  double wheel_mib = 0;
  std::string wheel_formula;
  double build_hours = 0;
  std::string time_formula;
  double disk_gib = 0;
  std::string disk_formula;
  /// Per-target share of the device code in the wheel, MiB ("sm_75" -> 175).
  std::map<std::string, double> per_target_mib;
  /// The rule behind `jobs`, for a script that counts again on its build host:
  /// min(cores, (usable GiB - reserve) / per job), at least 1.
  double gib_per_job = 0;
  double reserve_gib = 0;
};

/// Every path absolute: steps run with other working directories (the build runs in the
/// source tree), so a relative path would name another place there. `base_dir` is the
/// folder the relative paths the user gave were read against; `*_given` keep them as
/// given, so the sh script can read them against the folder it is started from.
struct WorkLayout {
  std::string base_dir;                        ///< absolute: where relative paths were resolved
  std::string work_dir;                        ///< absolute: where the source, venv and dist go
  std::string source_dir;                      ///< absolute: work_dir/pytorch unless --source
  std::string venv_dir;                        ///< absolute: work_dir/venv
  std::string work_dir_given = "tailor-work";  ///< as given (may be relative)
  std::string source_dir_given;                ///< --source as given; empty: work_dir/pytorch
};

/// A PyTorch source build: the decisions every build has (plan/build_plan.h) and the
/// release, variant and wheel of its own.
struct TorchPlan : BuildPlan {
  TorchVariant variant;  ///< as asked (after config layering)
  std::string name;      ///< variant name or "torch-<version>-<cuda>"

  std::string torch_version;  ///< "2.9.1"
  std::string git_tag;        ///< "v2.9.1"; empty with a local source tree
  std::string git_url;        ///< where the tag is cloned from (--git, else the catalog's)
  bool cuda = false;
  /// 12.6; nullopt when CPU-only, or when no CUDA version could be chosen (a problem says why).
  std::optional<cuda::CudaVersion> cuda_version;
  std::string cuda_home;       ///< "/usr/local/cuda-12.6"
  std::string python_version;  ///< "3.10"
  std::string python;          ///< interpreter that creates the venv
  std::string platform;        ///< target: x86_64 | aarch64
  std::string host_platform;
  std::string cpu_target;  ///< canonical name, empty = compiler default
  std::vector<std::string> cpu_flags;
  std::string blas;                      ///< "OpenBLAS" | "MKL"
  std::map<std::string, bool> features;  ///< every known feature, resolved
  std::string build_type;
  std::string host_compiler;     ///< g++ path given to nvcc
  int min_gcc = 0, max_gcc = 0;  ///< the GCC majors the release and nvcc accept (0: unknown)
  std::string manylinux;         ///< "2_35"
  std::string wheel_version;     ///< "2.9.1+cu126"
  std::string wheel_name;        ///< torch-2.9.1+cu126-cp310-cp310-manylinux_2_35_aarch64.whl
  std::string build_style;       ///< setup_py | pip_wheel

  std::vector<std::string> requirements;
  /// The vendored libraries taken from the system instead (--system-libs, or a tree
  /// without their third_party/ folders), their switches already in `env`.
  std::vector<SystemLibraryUse> system_libraries;
  WorkLayout layout;
  PlanEstimate estimate;
  std::vector<PlanProblem> problems;

  bool has_errors() const;
  /// "12.6" as scripts, messages and JSON write it; empty without a CUDA version.
  std::string cuda_text() const { return cuda_version ? cuda_version->to_string() : ""; }
  /// Whether the build runs on the machine that planned it (the same platform). When not,
  /// the host's own paths and counts mean nothing there: build_host_variables().
  bool for_this_host() const { return platform == host_platform; }
  /// 0 ok, 2 when an input problem is an error, 1 when only host problems are.
  int exit_code() const;
};

struct ResolveOptions {
  PlanPurpose purpose = PlanPurpose::describe;
  std::string work_dir = "tailor-work";
  /// Relative work and source folders are read against this; empty: the current folder.
  std::string base_dir;
  /// --jobs: MAX_JOBS as given (>= 1; less is an input problem), instead of the estimate.
  std::optional<int> jobs;
  /// The compiler cache (plan's `cache`, decided by decide_cache): the settings as layered
  /// (tailor.toml's [cache], TAILOR_CACHE(_URL), --cache-url), --cache as read
  /// (nullopt: auto), and the caller's environment (SCCACHE_* makes auto take sccache).
  /// The tools are the host report's.
  cache::CacheSettings cache_settings;
  std::optional<cache::CacheTool> cache;
  std::map<std::string, std::string> environment;
  bool wait_for_lock = true;    ///< false (--no-wait): the fixed folder's lock fails at once
  bool configure_only = false;  ///< --configure-only: no cache counts for a configure
};

/// Never fails: everything wrong is a PlanProblem, all of them collected.
TorchPlan resolve_torch_plan(const TorchVariant& variant, const probe::HostReport& host,
                             const ResolveOptions& options = {});

/// `decision` as the plan's compiler cache: `plan.cache`, with how PyTorch's build takes
/// the tool added to the cache's variables (never to `env`, which describes the build for
/// any host): sccache as the C, C++ and CUDA compiler launcher (CMAKE_*_COMPILER_LAUNCHER,
/// which setup.py hands to CMake) with USE_CCACHE=0; ccache through USE_CCACHE, on by
/// default, with which torch's CMake finds it on PATH itself; no cache: USE_CCACHE=0.
/// resolve_torch_plan applies its decision; a build whose shared storage is down applies
/// none (an empty decision).
void set_torch_cache(TorchPlan& plan, CacheDecision decision);

/// The flags that ask for this plan again, as `tailor plan`, `doctor` and `build torch` take
/// them (shell-quoted): the resolved release or source tree, Python, CUDA, GPU targets
/// (as typed, else the resolved ones), platform, and whatever else the variant set, so a
/// suggested command plans the same build as the one that printed it.
std::string plan_command_flags(const TorchPlan& plan);
/// Where a fix text says this, resolve_torch_plan puts plan_command_flags.
inline constexpr std::string_view k_plan_flags_placeholder = "{plan-flags}";

/// The env variables this host resolved for the plan (the CUDA folder, nvcc, the host
/// compiler, MAX_JOBS), which the build host must find or count for itself when the plan is
/// for another machine; empty for a plan of this host. The sh script sets them there.
std::vector<std::string> build_host_variables(const TorchPlan& plan);

/// "2_35" from "2.35"; "" when not a glibc version.
std::string manylinux_from_glibc(std::string_view glibc);

}  // namespace tailor::plan
