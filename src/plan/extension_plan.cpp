#include "plan/extension_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "cuda/cuda_version.h"
#include "cuda/renderers.h"
#include "data/data_files.h"
#include "data/driver_files.h"
#include "data/toml_document.h"
#include "plan/toolkit_choice.h"
#include "util/files.h"
#include "util/strings.h"
#include "util/user_file.h"
#include "util/version.h"

namespace tailor::plan {
using namespace tailor::cache;

namespace {

constexpr double k_gib = 1024.0 * 1024.0 * 1024.0;
constexpr const char* k_build_driver = "tailor-build-wheel.py";

/// The build driver (driver/, embedded): the wheel through the source's PEP 517 backend.
/// Its files in `folder`, the program it runs first: tailor-build-wheel.py, and the
/// tailor_driver package beside it.
std::vector<HelperFile> build_driver_files(const std::filesystem::path& folder) {
  std::vector<HelperFile> files;
  for (const auto& f : data::driver_files())
    files.push_back({(folder / std::string(f.path)).string(), std::string(f.text)});
  // The program first, then its package.
  std::stable_partition(files.begin(), files.end(), [&](const HelperFile& f) {
    return f.path == (folder / k_build_driver).string();
  });
  if (files.empty() || files.front().path != (folder / k_build_driver).string())
    throw data::DataError(std::string("driver/") + k_build_driver + ": missing");
  return files;
}

/// data/build/parallel.toml: every module at once and nvcc's -split-compile.
struct PackageParallelism {
  bool modules_at_once = true;
  int split_reference_cores = 16;
  int split_max = 8;
  cuda::CudaVersion split_min_nvcc;
};

const PackageParallelism& package_parallelism() {
  static const PackageParallelism p = [] {
    auto doc = data::toml_document("build/parallel.toml");
    PackageParallelism r;
    r.modules_at_once = doc["modules_at_once"].boolean();
    r.split_reference_cores =
        static_cast<int>(doc.at_path("split_compile.reference_cores").integer());
    if (r.split_reference_cores < 1 || r.split_reference_cores > 1024)
      doc.at_path("split_compile.reference_cores").fail("expected 1 to 1024");
    r.split_max = static_cast<int>(doc.at_path("split_compile.max").integer());
    if (r.split_max < 1 || r.split_max > 64)
      doc.at_path("split_compile.max").fail("expected 1 to 64");
    auto min = cuda::parse_cuda_version(doc.at_path("split_compile.min_nvcc").string());
    if (!min) doc.at_path("split_compile.min_nvcc").fail("expected a CUDA version such as 12.0");
    r.split_min_nvcc = *min;
    return r;
  }();
  return p;
}

std::string gib_text(double gib) {
  return std::fabs(gib - std::round(gib)) < 0.05 ? fmt::format("{:.0f}", gib)
                                                 : fmt::format("{:.1f}", gib);
}

std::string replace_all(std::string text, std::string_view from, std::string_view to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

std::string render_arch(ArchSpelling spelling, const cuda::TargetSet& set) {
  switch (spelling) {
    case ArchSpelling::torch:
      return cuda::render_torch_arch_list(set);
    case ArchSpelling::cmake:
      return cuda::render_cmake_architectures(set);
    case ArchSpelling::flash_attn:
      return cuda::render_flash_attn_archs(set);
    case ArchSpelling::bnb:
      return cuda::render_bnb_compute_capability(set);
    case ArchSpelling::gencode:
      return join(cuda::render_gencode_flags(set), " ");
  }
  return {};
}

std::optional<cuda::Consumer> consumer_of(ArchSpelling spelling) {
  switch (spelling) {
    case ArchSpelling::torch:
      return cuda::Consumer::torch;
    case ArchSpelling::cmake:
      return cuda::Consumer::cmake;
    case ArchSpelling::flash_attn:
      return cuda::Consumer::flash_attn;
    case ArchSpelling::bnb:
      return cuda::Consumer::bitsandbytes;
    case ArchSpelling::gencode:
      return cuda::Consumer::nvcc;
  }
  return std::nullopt;
}

struct JobChoice {
  int jobs = 1;
  int nvcc_threads = 1;
  std::string reason;
};

/// jobs = usable memory / memory per job, capped by cores, at least 1; --jobs wins.
/// nvcc's --threads compiles the device targets of one file side by side, so no more
/// threads than `device_compiles` (targets asked for plus what the package adds) can run:
/// with one target, flash-attn's 4 threads (and 4x its memory budget) are 1.
/// Where the package lets us set nvcc threads and even one job does not fit, fewer
/// threads per job come first (flash-attn on a small machine).
JobChoice choose_jobs(const ExtensionRecipe& recipe, const ExtensionBuildRequest& request,
                      const probe::HostReport& host, size_t device_compiles) {
  JobChoice c;
  c.nvcc_threads = recipe.nvcc_threads;
  if (!recipe.nvcc_threads_variable.empty() && device_compiles > 0)
    c.nvcc_threads =
        std::min(c.nvcc_threads, static_cast<int>(std::min<size_t>(device_compiles, 64)));
  const int cores = std::max(1, host.cpu.build_cores());
  if (request.jobs) {
    c.jobs = std::max(1, *request.jobs);
    c.reason = fmt::format("--jobs {}", c.jobs);
    return c;
  }
  if (recipe.serial && !recipe.parallel_fix) {
    c.jobs = 1;
    c.reason = fmt::format("{} compiles one file at a time", recipe.name);
    return c;
  }
  const auto& m = host.memory;
  uint64_t usable = m.usable ? m.usable : (m.available ? m.available : m.total);
  if (usable == 0) {
    c.jobs = std::min(cores, 2);
    c.reason = fmt::format("memory unknown: {} (of {} cores)", c.jobs, cores);
    return c;
  }
  const std::string source =
      !m.limited_by.empty() ? m.limited_by : std::string(m.usable ? "usable" : "MemAvailable");
  const double usable_gib = static_cast<double>(usable) / k_gib;
  auto per_job = [&](int threads) {
    return recipe.memory_per_job_gib * (recipe.memory_per_nvcc_thread ? threads : 1);
  };
  const bool threads_settable = !recipe.nvcc_threads_variable.empty();
  while (threads_settable && recipe.memory_per_nvcc_thread && c.nvcc_threads > 1 &&
         usable_gib < per_job(c.nvcc_threads))
    --c.nvcc_threads;

  const double job_gib = per_job(c.nvcc_threads);
  const int by_memory = static_cast<int>(std::floor(usable_gib / job_gib));
  c.jobs = std::clamp(by_memory, 1, cores);
  std::string per =
      recipe.memory_per_nvcc_thread
          ? fmt::format("{} GiB per job ({} GiB x {} nvcc threads)", gib_text(job_gib),
                        gib_text(recipe.memory_per_job_gib), c.nvcc_threads)
          : fmt::format("{} GiB per job", gib_text(job_gib));
  c.reason = fmt::format("{:.1f} GiB usable ({}) / {} = {}", usable_gib, source, per, by_memory);
  if (by_memory > cores)
    c.reason += host.cpu.cores_limited_by.empty() ? fmt::format(", capped by {} cores", cores)
                                                  : fmt::format(", capped by {} usable cores ({})",
                                                                cores, host.cpu.cores_limited_by);
  if (by_memory < 1) c.reason += ", at least 1";
  return c;
}

// The copied source is under the work folder: strip it so two work folders (two
// checkouts, users, machines) share hits.
Expected<CacheDecision> choose_cache(const ExtensionBuildRequest& request,
                                     const probe::HostReport& host) {
  return decide_cache(request.cache_settings, request.cache, request.environment,
                      [&](std::string_view name) { return host_tool_path(host, name); },
                      {std::filesystem::path(request.source_dir).parent_path().string()});
}

std::string gencode_python(const cuda::TargetSet& set) {
  std::vector<std::string> items;
  for (const auto& flag : cuda::render_gencode_flags(set)) items.push_back("'" + flag + "'");
  return join(items, ", ");
}

std::vector<std::string> split_keep_newlines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    size_t end = nl == std::string::npos ? text.size() : nl + 1;
    lines.push_back(text.substr(start, end - start));
    start = end;
  }
  return lines;
}

std::string without_newline(const std::string& line) {
  std::string s = line;
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

std::string indent_of(const std::string& line) {
  return line.substr(0, line.find_first_not_of(" \t"));
}

}  // namespace

std::vector<PackageAddition> package_additions(const std::string& package,
                                               const VerifyPolicy& policy,
                                               const cuda::TargetSet& requested) {
  std::vector<PackageAddition> out;
  auto add = [&](const cuda::CudaTarget& t, const std::string& what) {
    if (requested.contains(t)) return;
    for (const auto& a : out)
      if (a.target == t) return;
    const bool ends_in_s = !package.empty() && package.back() == 's';
    std::string reason =
        fmt::format("added by {}{} build ({})", package, ends_in_s ? "'" : "'s", what);
    if (!policy.why.empty()) reason += ": " + policy.why;
    out.push_back({t, std::move(reason)});
  };
  const auto ccs = requested.capabilities();
  if (policy.ptx_of_highest && !ccs.empty())
    add(cuda::ptx(ccs.back()), "PTX of the highest target");
  if (policy.ptx_of_each)
    for (const auto& cc : ccs) add(cuda::ptx(cc), "PTX of each target");
  for (const auto& name : policy.extra_targets)
    if (auto t = cuda::parse_target_name(name)) add(*t, "a fixed target of the package");
  return out;
}

namespace {

// How the plan runs (builder/run_plan.h): the work folder at the fixed path (--dist keeps
// the real one: the dist servers compile at the client's paths), the jobs fixed or governed
// as the recipe allows, the learned records keyed by the recipe and profile.
ExecutionPolicy extension_run_policy(const ExtensionBuildRequest& request,
                                     const ExtensionRecipe& recipe, const ExtensionBuildPlan& plan,
                                     const probe::HostReport& host) {
  ExecutionPolicy run;
  run.package = request.package_name;
  // A profile builds other units (flash-attn's minimal one leaves the backward out), so
  // its peaks and unit times are its own.
  run.record_name =
      plan.profile.empty() ? recipe.name : fmt::format("{} profile={}", recipe.name, plan.profile);
  run.work_dir = request.work_dir;
  run.build_dir = request.source_dir;
  run.mapped_dir = request.work_dir;
  run.ninja_root = (std::filesystem::path(request.source_dir) / "build").string();
  run.fresh_dir = request.out_dir;
  run.work_path = request.dist ? ExecutionPolicy::WorkPath::real : ExecutionPolicy::WorkPath::fixed;
  run.sandbox = request.sandbox;
  run.dist = request.dist;
  run.wait_for_lock = request.wait_for_lock;
  run.unit_times_recipe = recipe.name;
  run.unit_times_profile = plan.profile;
  run.split_units = request.split_units;
  JobPolicy& j = run.jobs;
  j.fixed = request.jobs;
  j.budget = request.memory_budget;
  j.variable = recipe.jobs_variable;
  j.counts_nvcc_threads = recipe.jobs_count_nvcc_threads;
  j.nvcc_threads = plan.nvcc_threads;
  j.prior_job_bytes = static_cast<uint64_t>(
      recipe.memory_per_job_gib * (recipe.memory_per_nvcc_thread ? plan.nvcc_threads : 1) *
      static_cast<double>(1ull << 30));
  j.recipe = recipe.name;
  j.pip_build = recipe.build_system == BuildSystem::pip;
  j.serial = recipe.serial && !recipe.parallel_fix;
  // The ninja torch's cpp_extension runs: the first on PATH, as the probe found it (the
  // plan prepends only the toolkit's bin folder).
  fill_host_jobs(j, host);
  return run;
}

// Parallelism: the jobs and why, nvcc's threads, the package's modules at once and
// -split-compile. A serial package with a [parallel] fix gets its patch (switching its
// parallel backend on) unless the user asked for one job.
void set_parallelism(ExtensionBuildPlan& plan, const ExtensionRecipe& recipe,
                     const ExtensionBuildRequest& request, const probe::HostReport& host,
                     const probe::CudaToolkit* toolkit) {
  plan.package_additions = package_additions(recipe.name, recipe.verify, request.targets);
  JobChoice jobs =
      choose_jobs(recipe, request, host, request.targets.size() + plan.package_additions.size());
  plan.jobs = jobs.jobs;
  plan.jobs_reason = jobs.reason;
  if (recipe.parallel_fix && !(request.jobs && *request.jobs <= 1)) {
    const ParallelFix& fix = *recipe.parallel_fix;
    for (const auto& p : fix.patches)
      plan.patches.push_back({p.file, p.description, p.start, p.end, p.replace, p.marker});
    plan.parallel_fix = fix.summary;
    plan.jobs_reason = fmt::format(
        "{}; {}={} ({})", fix.summary, recipe.jobs_variable,
        recipe.jobs_count_nvcc_threads ? jobs.jobs * jobs.nvcc_threads : jobs.jobs, jobs.reason);
    if (!fix.limit.empty()) plan.jobs_reason += "; " + fix.limit;
  }
  plan.nvcc_threads = jobs.nvcc_threads;
  const int jobs_value = recipe.jobs_count_nvcc_threads ? jobs.jobs * jobs.nvcc_threads : jobs.jobs;
  plan.env[recipe.jobs_variable] = std::to_string(jobs_value);
  if (!recipe.nvcc_threads_variable.empty())
    plan.env[recipe.nvcc_threads_variable] = recipe.nvcc_threads_in_flags
                                                 ? fmt::format("--threads {}", jobs.nvcc_threads)
                                                 : std::to_string(jobs.nvcc_threads);
  // Every extension module at once, and -split-compile for packages of few nvcc units
  // (the build driver's modules_at_once acts on these inside torch's BuildExtension; a user's own
  // TAILOR_MODULES_AT_ONCE wins).
  if (const auto& par = package_parallelism();
      par.modules_at_once && recipe.build_system == BuildSystem::pip &&
      !request.environment.count("TAILOR_MODULES_AT_ONCE")) {
    plan.env["TAILOR_MODULES_AT_ONCE"] = "1";
    if (toolkit && par.split_max >= 2 && toolkit->release >= par.split_min_nvcc)
      plan.env["TAILOR_SPLIT_COMPILE"] =
          fmt::format("{}:{}", par.split_reference_cores, par.split_max);
  }
  if (recipe.serial && !recipe.parallel_fix && request.jobs)
    plan.notes.push_back(recipe.name + " compiles one file at a time; --jobs has no effect");
}

// How the package's build takes the compiler cache the plan chose: torch's cpp_extension
// through PYTORCH_NVCC and the compilers CC/CXX name (each a typed launch), a CMake build
// through its compiler launchers.
void hook_compiler_cache(ExtensionBuildPlan& plan, const ExtensionRecipe& recipe,
                         const ExtensionBuildRequest& request, const std::string& nvcc) {
  if (!plan.cache.used()) return;
  const std::string& cache_path = plan.cache.executable;
  if (recipe.cache_hook != CacheHook::torch_env) {
    for (const char* lang : {"C", "CXX", "CUDA"})
      plan.env[fmt::format("CMAKE_{}_COMPILER_LAUNCHER", lang)] = cache_path;
    return;
  }
  plan.env["PYTORCH_NVCC"] = cache_path + " " + nvcc;
  // torch passes $CC to nvcc as -ccbin: under sccache a cached host compiler inside a
  // cached nvcc fails ("Failed to preprocess host compiler properties"), so CC stays
  // the plain compiler there and only the C++ and CUDA compiles go through the cache.
  // The compilers the build would use without a cache: the caller's CC/CXX (a machine
  // may point them at a newer gcc than PATH's), else torch's defaults.
  // A cross build: the cross compilers (the caller's CC/CXX are the host's).
  auto compiler = [&](const char* var, const char* fallback) {
    if (request.cross)
      return std::string(var == std::string_view("CC") ? request.cross->platform->cc
                                                       : request.cross->platform->cxx);
    auto it = request.environment.find(var);
    return it != request.environment.end() && !it->second.empty() &&
                   it->second.find(' ') == std::string::npos
               ? it->second
               : std::string(fallback);
  };
  if (plan.cache.tool != CacheTool::sccache)
    plan.cached_compilers.push_back({"CC", cache_path, compiler("CC", "gcc")});
  plan.cached_compilers.push_back({"CXX", cache_path, compiler("CXX", "g++")});
}

// The targets, in the package's own variable and spelling; the -D defines for its CMake
// configure, when that is how it takes them.
std::vector<std::string> set_targets(ExtensionBuildPlan& plan, const ExtensionRecipe& recipe,
                                     const ExtensionBuildRequest& request,
                                     const probe::HostReport& host) {
  const std::string arch_value = render_arch(recipe.arch_spelling, request.targets);
  if (auto consumer = consumer_of(recipe.arch_spelling))
    for (const auto& loss : cuda::render_losses(*consumer, request.targets))
      plan.notes.push_back(recipe.name + ": " + loss);
  std::vector<std::string> cmake_defines;
  switch (recipe.arch_via) {
    case ArchVia::env:
      plan.env[recipe.arch_variable] = arch_value;
      break;
    case ArchVia::cmake_define:
      cmake_defines.push_back("-D" + recipe.arch_variable + "=" + arch_value);
      break;
    case ArchVia::patch:
      for (const auto& p : recipe.patches) {
        SourcePatch sp{p.file, p.description, p.start, p.end, p.replace, p.marker};
        sp.replacement =
            replace_all(sp.replacement, "{gencode_python}", gencode_python(request.targets));
        sp.replacement =
            replace_all(sp.replacement, "{targets}", join(request.targets.names(), " "));
        plan.patches.push_back(std::move(sp));
      }
      break;
  }
  if (recipe.also_torch_arch_list)
    plan.env["TORCH_CUDA_ARCH_LIST"] = cuda::render_torch_arch_list(request.targets);
  // A package without a recipe: the requested targets win over those it chose itself
  // (the build driver, driver/tailor_driver: choices, cmake). A recipe knows
  // its package's own choices (bitsandbytes' PTX, flash-attn's list) and keeps them.
  if (recipe.name == "generic" && !request.keep_package_archs) {
    plan.env["TAILOR_TORCH_ARCH_LIST"] = cuda::render_torch_arch_list(request.targets);
    plan.env["TAILOR_CMAKE_ARCHS"] = cuda::render_cmake_architectures(request.targets);
    // CMake's default when the package's CMake files set no targets at all (3.20+).
    plan.env["CUDAARCHS"] = plan.env["TAILOR_CMAKE_ARCHS"];
  }
  for (const auto* table : {&recipe.force_cuda_env, &recipe.force_build_env, &recipe.extra_env})
    for (const auto& [k, v] : *table) plan.env[k] = v;
  // No GPU here: a setup.py that asks torch.cuda whether to build CUDA code is answered as
  // by one GPU of the highest target (the build driver's stand_in).
  if (host.gpus.empty() && !request.targets.empty())
    plan.env["TAILOR_STAND_IN_GPU"] = request.targets.capabilities().back().str();
  return cmake_defines;
}

// The toolkit the build uses, put into the plan's environment; nvcc's path ("nvcc" when
// no toolkit was found: then it must be on PATH).
std::string set_toolkit(ExtensionBuildPlan& plan, const ExtensionRecipe& recipe,
                        const ToolkitChoice& choice) {
  if (!choice.note.empty()) plan.notes.push_back(choice.note);
  const auto* toolkit = choice.toolkit;
  if (!toolkit) {
    plan.notes.push_back("no CUDA toolkit found: nvcc must be on PATH");
    return "nvcc";
  }
  std::string nvcc = "nvcc";
  if (!toolkit->root.empty()) plan.env["CUDA_HOME"] = toolkit->root;
  if (!toolkit->nvcc.empty()) {
    nvcc = toolkit->nvcc;
    plan.path_prepend = std::filesystem::path(nvcc).parent_path().string();
  }
  if (recipe.build_system == BuildSystem::cmake_then_pip ||
      recipe.cache_hook == CacheHook::cmake_launcher)
    plan.env["CUDACXX"] = nvcc;
  return nvcc;
}

// A restriction profile the package allows, when one was asked for.
Expected<void> apply_profile(ExtensionBuildPlan& plan, const ExtensionRecipe& recipe,
                             const std::string& profile) {
  if (profile.empty()) return {};
  auto it = std::find_if(recipe.profiles.begin(), recipe.profiles.end(),
                         [&](const RecipeProfile& p) { return p.name == profile; });
  if (it == recipe.profiles.end()) {
    std::vector<std::string> names;
    for (const auto& p : recipe.profiles) names.push_back(p.name);
    return make_error(fmt::format(
        "--profile {}: the {} recipe has {}", profile, recipe.name,
        names.empty() ? std::string("no profiles") : "the profiles " + join(names, ", ")));
  }
  plan.profile = it->name;
  for (const auto& [k, v] : it->env) plan.env[k] = v;
  plan.notes.push_back(fmt::format("profile {}: {}", it->name, it->description));
  return {};
}

/// Where a build's commands run and what they read and write.
struct BuildFolders {
  std::string python;
  std::string out_dir;
  std::string source;
};

// The commands. The wheel: the source's PEP 517 backend, called once in the target
// interpreter with no build isolation (the build driver, driver/, written beside the
// source). pip would run setup.py (and its `import torch`) once more for metadata first.
// A CMake package is configured and compiled first.
void add_build_steps(ExtensionBuildPlan& plan, const ExtensionRecipe& recipe,
                     const BuildFolders& at, const std::string& nvcc, bool nvcc_found,
                     const std::vector<std::string>& cmake_defines) {
  const std::string& source = at.source;
  for (auto& file : build_driver_files(std::filesystem::path(source).parent_path()))
    plan.helper_files.push_back(std::move(file));
  const std::string driver =
      (std::filesystem::path(source).parent_path() / k_build_driver).string();
  Step wheel_step{.title = "build the " + recipe.name + " wheel (PEP 517)",
                  .argv = {at.python, "-u", driver, at.out_dir},
                  .cwd = source,
                  .by_hand = {at.python, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps",
                              "-w", at.out_dir, source},
                  .uses_plan_env = true};
  if (recipe.build_system == BuildSystem::cmake_then_pip) {
    const std::string build_dir = source + "/build";
    std::vector<std::string> configure = {"cmake", "-S", source, "-B", build_dir};
    configure.insert(configure.end(), recipe.cmake_args.begin(), recipe.cmake_args.end());
    configure.insert(configure.end(), cmake_defines.begin(), cmake_defines.end());
    if (nvcc_found) configure.push_back("-DCMAKE_CUDA_COMPILER=" + nvcc);
    plan.steps.push_back({.title = "configure " + recipe.name + " (CMake)",
                          .argv = configure,
                          .cwd = source,
                          .uses_plan_env = true});
    plan.steps.push_back({.title = "compile " + recipe.name + " (CMake)",
                          .argv = {"cmake", "--build", build_dir},
                          .cwd = source,
                          .uses_plan_env = true});
  }
  plan.steps.push_back(std::move(wheel_step));
}

// --platform: the package's own build steered to the target (plan/cross_target.h); the
// compilers a cache wraps stay wrapped, and CMake's toolchain file is written beside the
// source.
void steer_cross_build(ExtensionBuildPlan& plan, const CrossTarget& cross, const BuildFolders& at,
                       const std::string& nvcc) {
  CrossTarget target = cross;
  target.toolchain_file =
      (std::filesystem::path(at.source).parent_path() / "tailor-cross-toolchain.cmake").string();
  plan.helper_files.push_back({target.toolchain_file, cmake_toolchain_file(target, nvcc)});
  for (auto& [k, v] : cross_environment(target)) {
    bool wrapped = false;
    for (const auto& c : plan.cached_compilers) wrapped = wrapped || c.variable == k;
    if (!wrapped) plan.env[k] = std::move(v);
  }
  plan.notes.push_back(
      fmt::format("cross build for {} ({}): torch {}{} and Python {} of the platform from {}",
                  cross.platform->name, cross.platform->cxx, cross.torch_version,
                  cross.torch_cuda.empty() ? "" : " (CUDA " + cross.torch_cuda + ")",
                  cross.python_version, cross.root));
}

}  // namespace

Expected<ExtensionBuildPlan> resolve_extension_build(const ExtensionBuildRequest& request,
                                                     const probe::HostReport& host) {
  if (request.targets.empty())
    return make_error("no CUDA targets to build for: give --arch or --gpu");
  if (request.package_name.empty()) return make_error("no package name to pick a recipe by");
  const ExtensionRecipe& recipe = recipe_for(request.package_name);
  ExtensionBuildPlan plan;
  plan.recipe_name = recipe.name;
  plan.import_name = !recipe.import_name.empty()
                         ? recipe.import_name
                         : replace_all(normalise_dist_name(request.package_name), "-", "_");
  plan.smoke_test = replace_all(recipe.smoke_test, "{import_name}", plan.import_name);
  plan.unset_env = recipe.unset_env;
  const BuildFolders at{request.python.empty() ? "python3" : request.python,
                        request.out_dir.empty() ? "dist" : request.out_dir,
                        request.source_dir.empty() ? "." : request.source_dir};

  const auto cmake_defines = set_targets(plan, recipe, request, host);
  const ToolkitChoice choice = choose_toolkit(host, choose_python(host, at.python));
  const auto* toolkit = choice.toolkit;
  const std::string nvcc = set_toolkit(plan, recipe, choice);
  set_parallelism(plan, recipe, request, host, toolkit);
  TAILOR_TRY_VOID(apply_profile(plan, recipe, request.profile));
  TAILOR_TRY(cache_decision, choose_cache(request, host));
  plan.cache = std::move(cache_decision);
  hook_compiler_cache(plan, recipe, request, nvcc);
  if (request.cross) steer_cross_build(plan, *request.cross, at, nvcc);
  add_build_steps(plan, recipe, at, nvcc, toolkit && !toolkit->nvcc.empty(), cmake_defines);
  plan.run = extension_run_policy(request, recipe, plan, host);
  return plan;
}

std::string render_print_env(const ExtensionBuildPlan& plan) {
  std::ostringstream out;
  out << "# tailor build plan (recipe: " << plan.recipe_name << ")\n";
  out << "# jobs: " << plan.jobs << " (" << plan.jobs_reason << ")\n";
  out << "# nvcc threads per job: " << plan.nvcc_threads << "\n";
  if (!plan.parallel_fix.empty()) out << "# parallel: " << plan.parallel_fix << "\n";
  if (!plan.profile.empty()) out << "# profile: " << plan.profile << "\n";
  for (const auto& a : plan.package_additions)
    out << "# verify accepts " << a.target.name() << ": " << a.reason << "\n";
  out << "# compiler cache: "
      << (plan.cache.used() ? std::string(plan.cache.tool_name()) + ", " + plan.cache.storage
                            : "none")
      << "\n";
  for (const auto& [k, v] : plan.cache.env) {
    if (v.find('@') != std::string::npos && v.find("://") != std::string::npos)
      out << "# " << k << ": holds credentials; set it yourself (" << plan.cache.storage << ")\n";
    else
      out << "export " << k << "=" << shell_quote(v) << "\n";
  }
  for (const auto& n : plan.notes) out << "# note: " << n << "\n";
  for (const auto& name : plan.unset_env) out << "unset " << name << "\n";
  if (!plan.path_prepend.empty())
    out << "export PATH=" << shell_quote(plan.path_prepend) << ":\"$PATH\"\n";
  for (const auto& [k, v] : plan.env) out << "export " << k << "=" << shell_quote(v) << "\n";
  // torch.utils.cpp_extension checks $CC/$CXX by name and version, so CXX="ccache g++"
  // fails there; the build runs the cache through a wrapper named after the compiler
  // (cache::wrap_cached_compilers), and the printed script does the same so it works when
  // pasted.
  for (const auto& launch : plan.cached_compilers) {
    std::string wrapper = "\"${TMPDIR:-/tmp}/tailor-compiler-wrappers/" + launch.compiler + "\"";
    out << "mkdir -p \"${TMPDIR:-/tmp}/tailor-compiler-wrappers\"\n";
    out << "printf '#!/bin/sh\\nexec %s %s \"$@\"\\n' " << shell_quote(launch.launcher)
        << " \"$(command -v " << shell_quote(launch.compiler) << ")\" > " << wrapper
        << " && chmod +x " << wrapper << "\n";
    out << "export " << launch.variable << "=" << wrapper << "\n";
  }
  for (const auto& p : plan.patches) {
    out << "# patch " << p.file << ": " << p.description << "\n";
    out << "#   lines from /" << p.start << "/ to the last /" << p.end << "/ become:\n";
    out << "#   " << replace_all(p.replacement, "{indent}", "") << "\n";
  }
  for (const auto& s : plan.steps) {
    out << "# " << s.title << "\n";
    std::vector<std::string> quoted;
    for (const auto& a : s.argv) quoted.push_back(shell_quote(a));
    if (!s.by_hand.empty()) {
      // The helper file exists only inside a build; pip gives the same wheel by hand.
      out << "# tailor runs: " << join(quoted, " ") << "\n";
      quoted.clear();
      for (const auto& a : s.by_hand) quoted.push_back(shell_quote(a));
    }
    out << "(cd " << shell_quote(s.cwd) << " && " << join(quoted, " ") << ")\n";
  }
  if (!plan.smoke_test.empty()) {
    out << "# smoke test after install\n";
    out << "# python -c " << shell_quote(plan.smoke_test) << "\n";
  }
  return out.str();
}

Expected<std::string> apply_patch_to_text(const SourcePatch& patch, const std::string& text) {
  auto lines = split_keep_newlines(text);
  auto rendered = [&](const std::string& line) {
    std::string nl = line.size() >= 2 && line.ends_with("\r\n") ? "\r\n" : "\n";
    return replace_all(patch.replacement, "{indent}", indent_of(line)) + nl;
  };
  // Applied before: re-render the marked line (same targets: same text).
  for (auto& line : lines) {
    if (line.find(patch.marker) != std::string::npos) {
      line = rendered(line);
      return join(lines, "");
    }
  }
  std::regex start, end;
  try {
    start = std::regex(patch.start, std::regex::ECMAScript);
    end = std::regex(patch.end, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return make_error(patch.file + ": patch '" + patch.description +
                      "' has an invalid regex: " + e.what());
  }
  size_t first = lines.size();
  for (size_t i = 0; i < lines.size() && first == lines.size(); ++i)
    if (std::regex_search(without_newline(lines[i]), start)) first = i;
  if (first == lines.size())
    return make_error(patch.file + ": patch '" + patch.description + "': no line matches /" +
                      patch.start + "/ (has the package changed? the recipe needs updating)");
  size_t last = lines.size();
  for (size_t i = first; i < lines.size(); ++i)
    if (std::regex_search(without_newline(lines[i]), end)) last = i;
  if (last == lines.size())
    return make_error(patch.file + ": patch '" + patch.description + "': no line after line " +
                      std::to_string(first + 1) + " matches /" + patch.end + "/");
  std::string replacement = rendered(lines[first]);
  lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(first),
              lines.begin() + static_cast<std::ptrdiff_t>(last) + 1);
  lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(first), replacement);
  return join(lines, "");
}

Expected<void> apply_patches(const ExtensionBuildPlan& plan, const std::string& source_dir) {
  namespace fs = std::filesystem;
  for (const auto& patch : plan.patches) {
    const fs::path path = fs::path(source_dir) / patch.file;
    auto text = read_text_file(path.string(), uint64_t{16} << 20, BinaryData::refused);
    if (!text) return make_error("the file to patch: " + text.error().message);
    const std::string before = std::move(*text);
    auto after = apply_patch_to_text(patch, before);
    if (!after) return make_error(source_dir + "/" + after.error().message);
    if (*after == before) continue;
    // Write beside and rename, so an interrupted patch never leaves half a file.
    if (auto written = write_file_atomic(path.string(), *after); !written)
      return make_error(written.error().message + " (the patched file)");
  }
  return {};
}

}  // namespace tailor::plan
