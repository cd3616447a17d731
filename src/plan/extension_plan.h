// An extension build resolved against a host: every variable, every command, the job
// count and why. Pure: resolving runs nothing; `apply_patches` is the only side effect.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cache/cache_settings.h"
#include "cuda/target_set.h"
#include "plan/build_plan.h"
#include "plan/cross_target.h"
#include "plan/extension_recipe.h"
#include "probe/host_report.h"
#include "util/expected.h"

namespace tailor::plan {

struct ExtensionBuildRequest {
  std::string package_name;  ///< dist name; picks the recipe
  std::string source_dir;    ///< the unpacked source tree
  cuda::TargetSet targets;
  std::string python = "python3";
  std::optional<int> jobs;                ///< --jobs: wins over the memory formula
  std::optional<cache::CacheTool> cache;  ///< --cache: nullopt is auto
  /// Where the cache keeps its entries (tailor.toml [cache], TAILOR_CACHE_URL, --cache-url)
  /// and its tool when --cache is auto.
  cache::CacheSettings cache_settings;
  std::string out_dir;  ///< where the wheel goes
  /// The caller's environment, for what it configures (SCCACHE_* picks sccache under
  /// Cache::automatic); nothing else is read from it.
  std::map<std::string, std::string> environment;
  /// A recipe profile (`[profile.<name>]`) to build with: restrictions the package
  /// allows. Empty: none. A name the recipe lacks is an error that lists its profiles.
  std::string profile;
  /// --keep-package-archs: the package's own target flags stand. Otherwise, for a package
  /// without a recipe, the build driver replaces every target the package chose itself
  /// (nvcc options in its extra_compile_args, a TORCH_CUDA_ARCH_LIST it sets, CUDA
  /// architectures in its CMake files and cmake calls) with the requested ones.
  bool keep_package_archs = false;
  // How the plan runs (ExecutionPolicy, plan/build_plan.h):
  std::string work_dir;                   ///< the build's work folder: its log, lock, fifo
  std::optional<uint64_t> memory_budget;  ///< --memory-budget, bytes
  bool sandbox = false;                   ///< --sandbox
  std::optional<std::string> dist;        ///< --dist as given
  bool wait_for_lock = true;              ///< false: --no-wait
  /// --verify-reproducible: the units the wheel's build split on its own.
  std::optional<std::map<std::string, int>> split_units;
  /// --platform for another architecture than the host's: the prepared target the build is
  /// steered to (cross compilers, the target's torch, Python and CUDA runtime).
  std::optional<CrossTarget> cross;
};

/// A file of tailor's own that the build writes before its steps run (the build driver's
/// program and its package's modules); `path` is inside the build's work folder, its
/// folder made when missing.
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
std::vector<PackageAddition> package_additions(const std::string& package,
                                               const VerifyPolicy& policy,
                                               const cuda::TargetSet& requested);

/// An extension package's plan: the decisions every build has (plan/build_plan.h) and the
/// recipe's own.
struct ExtensionBuildPlan : BuildPlan {
  std::string recipe_name;
  int nvcc_threads = 1;
  std::vector<SourcePatch> patches;
  /// What the recipe did so a serial package uses the cores ("ninja switched on by recipe
  /// patch"); empty when nothing was needed or --jobs 1 kept it serial.
  std::string parallel_fix;
  std::vector<PackageAddition> package_additions;
  std::string profile;                   ///< the recipe profile applied, "" for none
  std::vector<HelperFile> helper_files;  ///< written before the steps run
  std::string smoke_test;                ///< Python source
  std::string import_name;
};

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
