// How one package of the PyTorch CUDA ecosystem takes its targets and options: which
// variable carries the arch list in which spelling, how to force a CUDA build without a
// GPU, how to bound jobs and nvcc threads, how to stop it from downloading a prebuilt
// wheel, its memory per compile job, and any source patch it needs. One TOML file per
// package under data/recipes/; this is their one loader.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/expected.h"

namespace tailor::plan {

/// How the package builds.
enum class BuildSystem {
  pip,  ///< the source's PEP 517 backend, no build isolation (setup.py / cpp_extension), as `pip
        ///< wheel --no-build-isolation --no-deps` would
  cmake_then_pip,  ///< configure + build native code with CMake, then the wheel as for `pip`
                   ///< (bitsandbytes)
};

/// How the arch list reaches the package.
enum class ArchVia {
  env,           ///< an environment variable (TORCH_CUDA_ARCH_LIST, FLASH_ATTN_CUDA_ARCHS)
  cmake_define,  ///< a -D option of the CMake configure step (COMPUTE_CAPABILITY)
  patch,         ///< nothing reads it: the source's hard-coded list is patched
};

/// Which of the cuda module's renderers spells the target set.
enum class ArchSpelling {
  torch,       ///< "8.0;9.0+PTX"                        render_torch_arch_list
  cmake,       ///< "80-real;90"                         render_cmake_architectures
  flash_attn,  ///< "80;90"                              render_flash_attn_archs
  bnb,         ///< "75;80;90"                           render_bnb_compute_capability
  gencode,     ///< -gencode arch=compute_80,code=sm_80  render_gencode_flags
};

/// How the compiler cache is hooked in.
enum class CacheHook {
  torch_env,       ///< PYTORCH_NVCC="ccache nvcc", CC/CXX="ccache gcc/g++"
  cmake_launcher,  ///< CMAKE_{C,CXX,CUDA}_COMPILER_LAUNCHER (CMake, or a setup.py driving it)
};

/// A source edit a package needs before it honours the requested targets (causal-conv1d
/// and mamba-ssm hard-code their -gencode list). Line based: the lines from the first
/// that matches `start` to the last that matches `end` are replaced by `replace`, a
/// template with {indent} (the first line's indentation), {gencode_python} (the target
/// set as Python string items: '-gencode=arch=compute_80,code=sm_80', ...) and
/// {targets} ("sm_80 sm_90"). The replacement carries `marker`, which makes it
/// idempotent: a file that has it gets its marked line re-rendered instead.
struct RecipePatch {
  std::string file;  ///< relative to the source tree
  std::string description;
  std::string start;  ///< ECMAScript regex: first line of the region
  std::string end;    ///< ECMAScript regex: the last line matching it ends the region
  std::string replace;
  std::string marker;
};

/// What a package's own build adds to the requested targets by design, so verification
/// accepts it and names it instead of refusing the wheel (`[verify]` in the recipe).
/// bitsandbytes' CMakeLists.txt, for one, appends PTX of the highest requested capability.
struct VerifyPolicy {
  bool ptx_of_highest = false;             ///< compute_XY of the highest requested CC
  bool ptx_of_each = false;                ///< compute_XY of every requested CC
  std::vector<std::string> extra_targets;  ///< fixed targets the package always adds ("sm_80")
  std::string why;  ///< shown with the addition: "its CMakeLists.txt adds ..."
  bool any() const { return ptx_of_highest || ptx_of_each || !extra_targets.empty(); }
};

/// How a package that compiles one file at a time is made to use the cores: a source
/// patch (`[[parallel.patch]]`, same fields as `[[patch]]` but the replacement is fixed
/// text) that switches its parallel backend on, after which the jobs variable counts.
struct ParallelFix {
  std::vector<RecipePatch> patches;
  std::string summary;  ///< "ninja switched on by recipe patch"
  /// What still runs serially after the fix, for the jobs reason (may be empty):
  /// "its 8 extension modules build one after another".
  std::string limit;
};

/// A named restriction the package allows (`[profile.<name>]`): variables that build
/// less (flash-attn's FLASH_ATTENTION_DISABLE_*, xformers' XFORMERS_DISABLE_FLASH_ATTN),
/// chosen with `tailor build --profile <name>`. What it leaves out is the user's choice;
/// the description says what the wheel then lacks.
struct RecipeProfile {
  std::string name;
  std::string description;
  std::map<std::string, std::string> env;
};

struct ExtensionRecipe {
  std::string name;                  ///< normalised dist name, e.g. "flash-attn"
  std::vector<std::string> aliases;  ///< other dist names (normalised)
  std::string import_name;           ///< e.g. "flash_attn"
  std::string checked;               ///< the version/commit the recipe was checked against
  BuildSystem build_system = BuildSystem::pip;
  ArchVia arch_via = ArchVia::env;
  std::string arch_variable;  ///< env var or CMake define name (empty for patch)
  ArchSpelling arch_spelling = ArchSpelling::torch;
  std::map<std::string, std::string> force_cuda_env;   ///< forces a CUDA build with no GPU
  std::map<std::string, std::string> force_build_env;  ///< stops prebuilt-wheel downloads
  std::map<std::string, std::string> extra_env;
  std::vector<std::string> unset_env;  ///< variables that would mislead the package
  /// Also set TORCH_CUDA_ARCH_LIST (torch spelling) when the arch variable is another:
  /// cpp_extension without a GPU and without the list raises IndexError.
  bool also_torch_arch_list = false;
  std::string jobs_variable = "MAX_JOBS";  ///< or CMAKE_BUILD_PARALLEL_LEVEL
  /// nvcc threads: the variable (NVCC_THREADS), or with `nvcc_threads_in_flags` a flags
  /// variable that gets "--threads N" (NVCC_APPEND_FLAGS). Empty: fixed by the package.
  std::string nvcc_threads_variable;
  bool nvcc_threads_in_flags = false;
  int nvcc_threads = 1;                 ///< threads per nvcc: the package's default
  double memory_per_job_gib = 3.0;      ///< peak memory per compile job
  bool memory_per_nvcc_thread = false;  ///< per-job memory is per nvcc thread (flash-attn)
  /// The jobs variable counts nvcc threads, not compiles (vllm: MAX_JOBS / NVCC_THREADS).
  bool jobs_count_nvcc_threads = false;
  bool serial = false;  ///< the package compiles one file at a time
  CacheHook cache_hook = CacheHook::torch_env;
  std::vector<std::string> cmake_args;  ///< extra configure args (cmake_then_pip)
  std::vector<RecipePatch> patches;
  VerifyPolicy verify;
  std::vector<RecipeProfile> profiles;
  std::optional<ParallelFix> parallel_fix;  ///< only for `serial` packages
  std::string smoke_test;                   ///< Python run after install, e.g. "import flash_attn"
  /// Modules the package imports at run time without naming them in its metadata
  /// (torch-sparse imports torch_scatter): the import check counts them as declared.
  std::vector<std::string> undeclared_requires;
  std::string notes;
};

/// Normalise a distribution name as pip does (PEP 503: lower case, runs of -_. to -).
std::string normalise_dist_name(std::string_view name);

/// Every built-in recipe (data/recipes/*.toml), loaded once.
const std::vector<ExtensionRecipe>& all_recipes();

/// The recipe for a package (by normalised name or alias); the generic torch
/// cpp_extension recipe when tailor has none for it.
const ExtensionRecipe& recipe_for(std::string_view package_name);

/// Parses one recipe file; errors name the file and field.
Expected<ExtensionRecipe> parse_recipe(std::string_view toml_text, std::string_view source_name);

}  // namespace tailor::plan
