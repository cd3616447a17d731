// An extension build resolved against a host: every variable, every command, the job
// count and why. Pure: resolving runs nothing; `apply_patches` is the only side effect.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cuda/target_set.h"
#include "plan/step.h"
#include "cache/cache_settings.h"
#include "plan/extension_recipe.h"
#include "probe/host_report.h"
#include "util/expected.h"

namespace tailor::plan {

struct ExtensionBuildRequest {
  std::string package_name;  ///< dist name; picks the recipe
  std::string source_dir;    ///< the unpacked source tree
  cuda::TargetSet targets;
  std::string python = "python3";
  std::optional<int> jobs;   ///< --jobs: wins over the memory formula
  enum class Cache { automatic, ccache, sccache, none } cache = Cache::automatic;
  /// Where the cache keeps its entries (tailor.toml [cache], TAILOR_CACHE_URL, --cache-url)
  /// and its tool when --cache is auto.
  cache::CacheSettings cache_settings;
  std::string out_dir;       ///< where the wheel goes
  /// The caller's environment, for what it configures (SCCACHE_* picks sccache under
  /// Cache::automatic); nothing else is read from it.
  std::map<std::string, std::string> environment;
  /// A recipe profile (`[profile.<name>]`) to build with: restrictions the package
  /// allows. Empty: none. A name the recipe lacks is an error that lists its profiles.
  std::string profile;
};

/// A file of tailor's own that the build writes before its steps run (the PEP 517
/// driver); `path` is inside the build's work folder.
struct HelperFile {
  std::string path;
  std::string text;
};

/// A recipe patch made concrete for one target set (see RecipePatch).
struct SourcePatch {
  std::string file;  ///< relative to the source tree
  std::string description;
  std::string start;        ///< regex: first line of the replaced region
  std::string end;          ///< regex: the last line matching it ends the region
  std::string replacement;  ///< rendered from the target set; {indent} still open
  std::string marker;       ///< present in `replacement`; makes re-applying idempotent
};

/// A target the package's own build adds to the request by design (recipe `[verify]`);
/// verification accepts it and names it.
struct PackageAddition {
  cuda::CudaTarget target;
  std::string reason;  ///< "added by bitsandbytes' build (PTX of the highest target)"
};

/// The targets `policy` makes the package add to `requested` (none already requested).
std::vector<PackageAddition> package_additions(const std::string& package, const VerifyPolicy& policy,
                                               const cuda::TargetSet& requested);

struct ExtensionBuildPlan {
  std::string recipe_name;
  std::map<std::string, std::string> env;
  std::vector<std::string> unset_env;
  /// The chosen toolkit's bin/ folder, put first on PATH so `nvcc` is the nvcc chosen.
  std::string path_prepend;
  int jobs = 1;
  /// Shown to the user: "23.1 GiB usable (cgroup) / 4 GiB per job = 5, capped by 2 cores".
  std::string jobs_reason;
  int nvcc_threads = 1;
  std::string cache_tool;  ///< "ccache", "sccache" or "" (none)
  /// The variables that point the cache tool at its storage (SCCACHE_REDIS_ENDPOINT, ...).
  /// Kept apart from `env`: they may hold a password, and reports print `env`.
  std::map<std::string, std::string> cache_env;
  std::string cache_storage;  ///< cache::describe_cache_storage(): no secrets
  std::vector<SourcePatch> patches;
  /// What the recipe did so a serial package uses the cores ("ninja switched on by recipe
  /// patch"); empty when nothing was needed or --jobs 1 kept it serial.
  std::string parallel_fix;
  std::vector<PackageAddition> package_additions;
  std::string profile;  ///< the recipe profile applied, "" for none
  std::vector<Step> steps;
  std::vector<HelperFile> helper_files;  ///< written before the steps run
  std::string smoke_test;  ///< Python source
  std::string import_name;
  /// What the user should know: spellings that lose something, a toolkit that does not
  /// match torch's CUDA, a package that ignores the job count.
  std::vector<std::string> notes;
};

/// The compiler cache a build uses: --cache (`flag`) wins, then the settings' tool; auto
/// takes sccache for a shared storage (ccache for Redis when sccache is missing), sccache
/// when SCCACHE_* variables are set, else ccache, else none. `path_of` finds a tool ("" when
/// it is missing). The path of the tool, "" for none; an error when the tool asked for is
/// missing.
Expected<std::string> choose_cache_tool(const cache::CacheSettings& settings, ExtensionBuildRequest::Cache flag,
                                        const std::map<std::string, std::string>& environment,
                                        const std::function<std::string(std::string_view)>& path_of);

Expected<ExtensionBuildPlan> resolve_extension_build(const ExtensionBuildRequest& request,
                                                     const probe::HostReport& host);

/// Shell-ready: comments, `unset`/`export` lines, the patches, then the commands.
std::string render_print_env(const ExtensionBuildPlan& plan);

/// The patch applied to one file's text (pure; apply_patches is this plus the disk).
Expected<std::string> apply_patch_to_text(const SourcePatch& patch, const std::string& text);

/// Applies the plan's patches to `source_dir`. Idempotent (a file already carrying the
/// marker is left alone); an error when a pattern is not found or a file is missing.
Expected<void> apply_patches(const ExtensionBuildPlan& plan, const std::string& source_dir);

}  // namespace tailor::plan
