// What every build plan decides, for an extension package and for PyTorch alike: the GPU
// targets, the jobs and why, the compiler cache (tool, storage, its variables), the
// build environment and the steps. TorchPlan (plan/torch_plan.h) and ExtensionBuildPlan
// (plan/extension_plan.h) are this plus what only their kind of build has; the builder
// runs any of them through `BuildPlan` alone (builder/build_runner.h: `plan_steps`).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cache/cache_settings.h"
#include "cache/compiler_cache.h"
#include "cuda/target_set.h"
#include "plan/step.h"
#include "probe/host_report.h"
#include "util/expected.h"

namespace tailor::plan {

/// `--cache` as typed, read once: nullopt is `auto` (the settings, then what is installed).
/// Anything but auto, ccache, sccache and none is an error that names the flag.
Expected<std::optional<cache::CacheTool>> parse_cache_flag(std::string_view text);

/// The compiler cache a plan builds with.
struct CacheDecision {
  cache::CacheTool tool = cache::CacheTool::none;
  std::string executable;  ///< the tool's path; empty for none
  std::string storage;     ///< cache::describe_cache_storage(): no secrets
  /// The variables that point the tool at its storage (SCCACHE_REDIS_ENDPOINT, ...). Kept
  /// apart from the plan's `env`: they may hold a password, and reports print `env`.
  std::map<std::string, std::string> env;
  bool used() const { return tool != cache::CacheTool::none; }
  /// "ccache", "sccache", "none".
  std::string_view tool_name() const { return cache::cache_tool_name(tool); }
};

/// The compiler cache tool a build uses: `flag` (--cache) wins, then the settings' tool;
/// auto takes sccache for a shared storage (ccache for Redis when sccache is missing),
/// sccache when SCCACHE_* variables are set, else ccache, else none. `path_of` finds a tool
/// ("" when it is missing). The tool's path, "" for none; an error when the tool asked for
/// (or the one a shared storage needs) is missing.
Expected<std::string> choose_cache_tool(
    const cache::CacheSettings& settings, std::optional<cache::CacheTool> flag,
    const std::map<std::string, std::string>& environment,
    const std::function<std::string(std::string_view)>& path_of);

/// Where the probe found a tool on the host ("ccache", "sccache"): its path, the bare name
/// when the probe saw it without one, "" when it is missing. The `path_of` of a plan made
/// for this host.
std::string host_tool_path(const probe::HostReport& host, std::string_view name);

/// choose_cache_tool plus the tool's variables for the storage, with `basedirs` (the work
/// folder) stripped from the keys so two folders share hits.
Expected<CacheDecision> decide_cache(const cache::CacheSettings& settings,
                                     std::optional<cache::CacheTool> flag,
                                     const std::map<std::string, std::string>& environment,
                                     const std::function<std::string(std::string_view)>& path_of,
                                     const std::vector<std::string>& basedirs);

/// How many jobs the build runs: a fixed count (`fixed`: --jobs) or as many as the memory
/// governor hands out tokens for (under `budget`, --memory-budget, when set), where the build
/// can take a jobserver (governor/memory_governor.h's static_reason decides from these).
struct JobPolicy {
  std::optional<int> fixed;           ///< --jobs
  std::optional<uint64_t> budget;     ///< --memory-budget, bytes
  std::string variable = "MAX_JOBS";  ///< where the build reads its count
  bool counts_nvcc_threads = false;   ///< the variable counts nvcc threads, not jobs
  int nvcc_threads = 1;
  uint64_t prior_job_bytes = 0;  ///< one job's memory before any is measured
  std::string recipe;            ///< names the build in the governor's reasons
  bool pip_build = true;         ///< pip over torch's cpp_extension (its ninja)
  bool serial = false;           ///< compiles one file at a time
  std::string ninja_version;     ///< the ninja on the build's PATH; "" none
  /// A GNU make older than 4.4 on PATH (cannot read the fifo jobserver): it gets a shim.
  std::string make_without_jobserver;
  size_t max_jobs = 1;        ///< the build's cores
  uint64_t memory_limit = 0;  ///< the cgroup's limit, else the machine's memory
};

/// What the host says of a build's jobs, the same for every plan: the ninja and an old make
/// on PATH as the probe found them, the build's cores and its memory limit.
void fill_host_jobs(JobPolicy& jobs, const probe::HostReport& host);

/// What makes the build's bytes the same from any folder and at any time, applied by the
/// builder to the steps' environment (builder::add_reproducible_build_env): the epoch
/// (SOURCE_DATE_EPOCH), -ffile-prefix-map for the source folder, nvcc's -objtemp and its fixed
/// cudafe++ seed. Known once the source is (its identity gives the epoch).
struct Reproducibility {
  int64_t source_date_epoch = 0;
  std::string source_dir;                 ///< mapped to "." in file names the compilers record
  bool nvcc_objtemp = true;               ///< false under sccache, which runs nvcc's steps itself
  std::optional<cuda::CudaVersion> nvcc;  ///< the build's nvcc: its seed flags, when it takes them
};

/// How the builder runs a plan (builder/run_plan.h), decided once by plan: where, at
/// which path the steps see their folder, how many jobs, what the run learns from and
/// hands back. Paths are absolute.
struct ExecutionPolicy {
  std::string package;      ///< names the fixed work path and the learned records
  std::string record_name;  ///< the recipe (and profile) that keys the learned records
  std::string work_dir;     ///< the run's own files: lock, log, jobserver fifo, resume state
  std::string build_dir;    ///< the steps' default folder; its build/ is the resumed tree
  std::string mapped_dir;   ///< the folder the steps see at the fixed path
  std::string ninja_root;   ///< where the steps' .ninja_log files are
  std::string fresh_dir;    ///< emptied before the run (the wheel's folder); "" none
  enum class WorkPath { real, fixed };
  WorkPath work_path = WorkPath::fixed;
  bool sandbox = false;             ///< --sandbox: no network, read-only but the work folder
  std::optional<std::string> dist;  ///< --dist as given
  bool wait_for_lock = true;
  JobPolicy jobs;
  /// The recipe and profile whose measured unit times order the compiles (plan/unit_times.h);
  /// empty recipe: only what this machine learned.
  std::string unit_times_recipe, unit_times_profile;
  /// The units a rebuild splits as the wheel's provenance says (--verify-reproducible).
  std::optional<std::map<std::string, int>> split_units;
  bool resume = true;            ///< keep the build tree while the configuration is the same
  bool cache_statistics = true;  ///< count the cache's hits (not for a configure alone)
  /// The reproducibility settings; unset: none (a clone not made yet has no epoch).
  std::optional<Reproducibility> reproducible;
};

struct BuildPlan {
  cuda::TargetSet targets;
  int jobs = 1;
  /// Shown to the user: "23.1 GiB usable (cgroup) / 4 GiB per job = 5, capped by 2 cores".
  std::string jobs_reason;
  CacheDecision cache;
  /// The build's variables (the steps with `uses_plan_env` get them); never secrets.
  std::map<std::string, std::string> env;
  std::vector<std::string> unset_env;
  /// The chosen toolkit's bin/ folder, put first on PATH so `nvcc` is the nvcc chosen.
  std::string path_prepend;
  std::vector<Step> steps;
  /// What the user should know: spellings that lose something, a toolkit that does not
  /// match torch's CUDA, why tailor's choice differs from the hand-written recipes.
  std::vector<std::string> notes;
  /// The compilers the build reads from CC/CXX, each launched by the compiler cache (the
  /// builder writes a wrapper named after each compiler and points the variable at it).
  std::vector<cache::CompilerLaunch> cached_compilers;
  ExecutionPolicy run;
};

}  // namespace tailor::plan
