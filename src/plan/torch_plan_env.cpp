// What a resolved torch plan writes out (torch_plan_context.h): the build's environment,
// its work layout, compiler cache, steps and run policy, and the flags that ask for the same
// plan again. The resolution of the variant against the host is torch_plan.cpp's.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "cuda/renderers.h"
#include "plan/torch_plan_context.h"
#include "util/strings.h"

namespace tailor::plan {
namespace torch_context {
namespace {

Step step(std::string title, std::vector<std::string> argv, std::string cwd, bool uses_plan_env,
          StepRole role = StepRole::build) {
  return Step{.title = std::move(title),
              .argv = std::move(argv),
              .cwd = std::move(cwd),
              .uses_plan_env = uses_plan_env,
              .role = role};
}

std::string nvcc_flags(const Context& c) {
  const auto& p = c.plan;
  const auto& fat = c.catalog.fatbin;
  std::string mode = p.variant.compress ? to_lower(*p.variant.compress) : "";
  if (mode.empty() && p.cuda_version && *p.cuda_version >= cuda::CudaVersion{13, 0})
    mode = fat.default_since_13;
  if (mode.empty()) mode = "size";
  bool has_mode = p.cuda_version && *p.cuda_version >= fat.compress_mode_since;
  auto it = fat.flags.find(has_mode ? mode : "legacy_" + mode);
  return it == fat.flags.end() ? "" : it->second;
}

std::string absolute_under(const std::string& base, const std::string& path) {
  std::filesystem::path p(path);
  if (p.is_absolute()) return p.lexically_normal().string();
  std::string out = (std::filesystem::path(base) / p).lexically_normal().string();
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

}  // namespace

/// The wheel's local label: "cu126", "cpu"; a CUDA build whose version could not be
/// chosen (a problem already says so) keeps the bare "cu".
std::string wheel_label(const TorchPlan& p) {
  if (!p.cuda) return "cpu";
  return p.cuda_version ? p.cuda_version->label() : "cu";
}

void build_env(Context& c, const probe::CudaToolkit* tk) {
  auto& p = c.plan;
  auto& env = p.env;
  env["CMAKE_GENERATOR"] = "Ninja";
  env["CMAKE_BUILD_TYPE"] = p.build_type;
  env["MAX_JOBS"] = std::to_string(p.jobs);
  env["USE_CUDA"] = p.cuda ? "1" : "0";
  for (const auto& f : c.catalog.features) {
    bool on = p.features[f.name];
    for (const auto& var : f.vars) env[var] = on ? "1" : "0";
  }
  env["BLAS"] = p.blas;
  if (p.platform == "aarch64") env["USE_PRIORITIZED_TEXT_FOR_LD"] = "1";
  std::vector<std::string> cflags;
  bool keep_debug =
      p.variant.keep_debug.value_or(p.build_type == "Debug" || p.build_type == "RelWithDebInfo");
  if (!keep_debug) cflags.push_back("-g0");
  for (const auto& f : p.cpu_flags) cflags.push_back(f);
  if (!cflags.empty()) {
    env["CFLAGS"] = join(cflags, " ");
    env["CXXFLAGS"] = join(cflags, " ");
  }
  if (p.cuda) {
    env["TORCH_CUDA_ARCH_LIST"] = cuda::render_torch_arch_list(p.targets);
    env["CMAKE_CUDA_ARCHITECTURES"] = cuda::render_cmake_architectures(p.targets);
    env["CUDAARCHS"] = env["CMAKE_CUDA_ARCHITECTURES"];
    env["CUDA_HOME"] = p.cuda_home;
    std::string nvcc = tk ? tk->nvcc : p.cuda_home + "/bin/nvcc";
    env["CUDACXX"] = nvcc;
    env["CMAKE_CUDA_COMPILER"] = nvcc;
    if (!p.host_compiler.empty()) env["CUDAHOSTCXX"] = p.host_compiler;
    std::string flags = nvcc_flags(c);
    if (!flags.empty()) env["TORCH_NVCC_FLAGS"] = flags;
  }
  p.wheel_version = p.torch_version + "+" + wheel_label(p);
  env["PYTORCH_BUILD_VERSION"] = p.wheel_version;
  env["PYTORCH_BUILD_NUMBER"] = "1";
}

void build_layout(Context& c) {
  auto& p = c.plan;
  auto& L = p.layout;
  std::error_code ec;
  L.base_dir = c.options.base_dir;
  if (L.base_dir.empty()) L.base_dir = std::filesystem::current_path(ec).string();
  if (L.base_dir.empty()) L.base_dir = "/";
  L.work_dir_given = c.options.work_dir.empty() ? "tailor-work" : c.options.work_dir;
  L.source_dir_given = p.variant.source_dir.value_or("");
  L.work_dir = absolute_under(L.base_dir, L.work_dir_given);
  L.source_dir = p.variant.source_dir ? absolute_under(L.base_dir, *p.variant.source_dir)
                                      : L.work_dir + "/pytorch";
  L.venv_dir = L.work_dir + "/venv";
}

/// The compiler cache: plan::decide_cache over the options, with the tools the host report
/// found (ccache and sccache on PATH) and the work folder stripped from the cache's keys.
/// A tool that is asked for and missing, or that cannot use the storage (ccache and S3),
/// stops a build here (exit 2); a plan for elsewhere only warns.
void resolve_cache(Context& c) {
  auto& p = c.plan;
  const auto& o = c.options;
  auto path_of = [&](std::string_view name) { return host_tool_path(c.host, name); };
  auto decision =
      decide_cache(o.cache_settings, o.cache, o.environment, path_of, {p.layout.work_dir});
  if (!decision) {
    c.add(c.host_severity(), ProblemKind::input, "cache", decision.error().message,
          "install the tool, choose another with --cache, or build with --cache none");
    decision = CacheDecision{};
  }
  set_torch_cache(p, std::move(*decision));
}

void build_steps(Context& c, const TorchRelease* rel) {
  auto& p = c.plan;
  auto& L = p.layout;
  if (!p.variant.source_dir) {
    // One command, run from the work folder (which exists before the first step): the tag
    // with its submodules, shallow. A build runs it through tailor's own clone step
    // (source/source_clone.h), which reuses a clone of the same tag and never leaves a
    // half-made one at the destination.
    p.steps.push_back(step("clone source",
                           {"git", "clone", "--recurse-submodules", "--shallow-submodules",
                            "--depth", "1", "--branch", p.git_tag, p.git_url, L.source_dir},
                           L.work_dir, false, StepRole::clone));
  }
  p.steps.push_back(
      step("create venv", {p.python, "-m", "venv", L.venv_dir}, "", false, StepRole::make_venv));
  std::string vpy = L.venv_dir + "/bin/python";
  std::vector<std::string> pip = {vpy, "-m", "pip", "install", "-r", "requirements.txt"};
  for (const auto& r : p.requirements) pip.push_back(r);
  p.steps.push_back(
      step("install build requirements", pip, L.source_dir, false, StepRole::install_requirements));
  if (rel) {
    auto it = c.catalog.build_commands.find(rel->build);
    std::vector<std::string> argv;
    if (it != c.catalog.build_commands.end())
      for (const auto& a : it->second) argv.push_back(a == "{python}" ? vpy : a);
    p.build_style = rel->build;
    p.steps.push_back(step("build wheel", argv, L.source_dir, true));
  }
}

// How a build here runs (builder/run_plan.h): the source tree at the fixed work path (the
// work folder when the source is a clone inside it), the jobs governed (torch's setup.py
// runs its CMake's Ninja without -j when MAX_JOBS is unset, so from ninja 1.13 it takes the
// jobserver's tokens) unless --jobs fixed them.
ExecutionPolicy torch_run_policy(const TorchPlan& plan, const probe::HostReport& host,
                                 const ResolveOptions& options) {
  ExecutionPolicy run;
  const WorkLayout& L = plan.layout;
  run.package = "torch";
  run.record_name = "pytorch " + plan.torch_version;
  run.work_dir = L.work_dir;
  run.build_dir = L.source_dir;
  run.mapped_dir = L.source_dir.rfind(L.work_dir + "/", 0) == 0 ? L.work_dir : L.source_dir;
  run.ninja_root = L.source_dir + "/build";
  run.wait_for_lock = options.wait_for_lock;
  run.cache_statistics = !options.configure_only;
  JobPolicy& j = run.jobs;
  j.fixed = options.jobs;
  j.variable = "MAX_JOBS";
  j.prior_job_bytes =
      static_cast<uint64_t>(plan.estimate.gib_per_job * static_cast<double>(1ull << 30));
  j.recipe = "pytorch";
  j.pip_build = true;
  fill_host_jobs(j, host);
  return run;
}

}  // namespace torch_context

void set_torch_cache(TorchPlan& p, CacheDecision decision) {
  p.cache = std::move(decision);
  if (p.cache.tool == cache::CacheTool::sccache) {
    p.cache.env["USE_CCACHE"] = "0";
    for (const char* lang : {"C", "CXX", "CUDA"})
      p.cache.env[fmt::format("CMAKE_{}_COMPILER_LAUNCHER", lang)] = p.cache.executable;
  } else if (p.cache.tool == cache::CacheTool::none) {
    p.cache.env["USE_CCACHE"] = "0";
  }
}

std::vector<std::string> build_host_variables(const TorchPlan& p) {
  std::vector<std::string> out;
  if (p.for_this_host()) return out;
  for (const char* k : {"CUDA_HOME", "CUDACXX", "CMAKE_CUDA_COMPILER", "CUDAHOSTCXX", "MAX_JOBS"})
    if (p.env.count(k)) out.push_back(k);
  return out;
}

std::string plan_command_flags(const TorchPlan& p) {
  const TorchVariant& v = p.variant;
  std::vector<std::string> out;
  auto add = [&](std::string_view flag, const std::string& value) {
    if (value.empty()) return;
    out.push_back(std::string(flag));
    out.push_back(shell_quote(value));
  };
  if (v.source_dir) add("--source", *v.source_dir);
  if (v.git_url && !v.source_dir) add("--git", *v.git_url);
  add("--torch", !p.torch_version.empty() ? p.torch_version : v.torch.value_or(""));
  add("--python", !p.python_version.empty() ? p.python_version : v.python.value_or(""));
  if (p.cuda)
    add("--cuda", p.cuda_text());
  else
    out.push_back("--cpu-only");
  if (p.cuda) {
    if (!v.gpu.empty())
      add("--gpu", join(v.gpu, ";"));
    else if (!v.arch.empty())
      add("--arch", join(v.arch, ";"));
    else
      add("--arch", join(p.targets.names(), ";"));
  }
  add("--platform", p.platform);
  if (v.cpu_target) add("--cpu-target", *v.cpu_target);
  if (v.blas) add("--blas", *v.blas);
  for (const auto& [feature, on] : v.features) add(on ? "--with" : "--without", feature);
  if (v.build_type) add("--build-type", *v.build_type);
  if (v.keep_debug.value_or(false)) out.push_back("--keep-debug");
  if (v.compress) add("--compress", *v.compress);
  if (v.manylinux) add("--manylinux", *v.manylinux);
  if (v.system_libs.value_or(false)) out.push_back("--system-libs");
  return join(out, " ");
}

}  // namespace tailor::plan
