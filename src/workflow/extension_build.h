// `tailor build [SOURCE]`: the whole run for one extension package. Check first (every
// problem with its fix), build with the recipe's plan under the runner (progress, log,
// compiler cache), diagnose a failure, verify the wheel's targets, install it into a
// clean venv and import it, run the example's tests / the GPU smoke test, then publish
// wheel + report + log atomically. Returns data; the CLI renders it.
#pragma once
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "builder/build_runner.h"
#include "builder/preflight.h"
#include "builder/step_list.h"
#include "cache/cache_settings.h"
#include "cuda/target_request.h"
#include "cuda/target_set.h"
#include "diagnose/diagnosis.h"
#include "outputs/build_report.h"
#include "probe/host_report.h"
#include "source/extension_source.h"
#include "util/expected.h"

namespace tailor::workflow {

struct ExtensionBuildOptions {
  std::string source;             ///< as given; empty: the bundled example
  std::vector<std::string> arch;  ///< --arch SPEC, once per flag (cuda::TargetRequest)
  std::vector<std::string> gpu;   ///< --gpu SPEC, once per flag
  std::string python;             ///< --python; empty: python3 on PATH
  std::string out_dir = "dist";
  std::optional<int> jobs;                ///< --jobs: a static count, no memory governor
  std::optional<uint64_t> memory_budget;  ///< --memory-budget in bytes: the governor's ceiling
  std::string package;                    ///< --package: recipe override
  /// --cache as read (plan::parse_cache_flag: auto|ccache|sccache|none); nullopt: auto.
  std::optional<cache::CacheTool> cache;
  std::string cache_url;  ///< --cache-url: redis://, s3://, a folder; "" none
  std::string config;     ///< --config: a tailor.toml whose [cache] applies; "" none
  /// --wheelhouse DIR|file:///DIR: a published wheel of the same inputs is fetched and
  /// verified instead of compiled; "" none.
  std::string wheelhouse;
  /// ...else [wheelhouse] url of --config's tailor.toml (set by resolve_inputs).
  /// --dist [STATE_DIR_OR_CLIENT_CONFIG]: compile on an sccache-dist cluster ("" means
  /// $TAILOR_DIST, else the default state folder); nullopt: no distribution.
  std::optional<std::string> dist;
  std::string profile;  ///< --profile: a recipe restriction profile, "" none
  /// --platform: the machine the wheel is for ("aarch64"); "" or the host's own: a native
  /// build. Another is a cross build (workflow/cross_prepare.h).
  std::string platform;
  std::string cross_cache;          ///< where cross targets are kept; "" user_cache_dir("cross")
  bool keep_package_archs = false;  ///< --keep-package-archs: the package's own target flags stand
  /// --keep-package-source: the known API removals (data/compat/removals.toml) are not
  /// bridged in the copy of a package without a recipe; it builds as it is.
  bool keep_package_source = false;
  /// Set by --verify-reproducible: the units the wheel's build split on its own, split the
  /// same (none learned). nullopt: a build decides from what it has learned.
  std::optional<std::map<std::string, int>> split_units;
  std::string work_root;  ///< empty: default_work_root()
  enum class Tests { automatic, always, never } tests = Tests::automatic;
  bool print_env = false;
  bool wait_for_lock = true;  ///< false (--no-wait): fail when another build holds the folders
  /// --sandbox: the steps run in tailor's own namespace with no network and nothing
  /// writable but the work folder (where the wheel is written), the compiler cache's
  /// folder and /dev/shm; a package that writes elsewhere or connects gets its own error.
  bool sandbox = false;
  builder::DisplayStyle display = builder::DisplayStyle::plain;
  std::FILE* status_out = stderr;  ///< step headlines and progress
  std::string cwd = ".";           ///< where to look for tailor's repository
};

using builder::BuildStatus;

struct ExtensionBuildResult {
  BuildStatus status = BuildStatus::bad_input;
  std::string message;  ///< one line for errors
  builder::PreflightReport preflight;
  std::optional<diagnose::ErrorBlock> error_block;
  std::vector<diagnose::Diagnosis> diagnoses;
  std::string print_env;
  std::string check_output;  ///< tail of a failed import/test run
  outputs::BuildReport report;
  std::vector<std::string> published;
};

/// Targets from --arch / --gpu, else the GPUs the probe found (cuda::resolve_target_request,
/// as every command); an error (bad input) when there is neither: never a silent "all
/// architectures".
Expected<cuda::ResolvedTargets> resolve_targets(const std::vector<std::string>& arch,
                                                const std::vector<std::string>& gpu,
                                                const probe::HostReport& host);

/// The facts the pre-flight checks judge, from the probe and the chosen interpreter.
/// `environment`: the caller's (its CXX is the compiler the build uses).
builder::PreflightFacts preflight_facts(const probe::HostReport& host,
                                        const probe::PythonInstall* python,
                                        const probe::CudaToolkit* toolkit,
                                        const cuda::TargetSet& targets, const std::string& work_dir,
                                        CommandRunner& runner,
                                        const std::map<std::string, std::string>& environment);

ExtensionBuildResult build_extension(const ExtensionBuildOptions& options);

}  // namespace tailor::workflow
