#include <fmt/format.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <future>
#include <regex>
#include <sstream>

#include "builder/reproducible_env.h"
#include "builder/resume.h"
#include "builder/run_plan.h"
#include "builder/step_list.h"
#include "cache/cache_ledger.h"
#include "cache/compiler_cache.h"
#include "cache/sccache_dist.h"
#include "cache/tailor_toml.h"
#include "cuda/arch_spec.h"
#include "cuda/gpu_platform.h"
#include "cuda/nvcc_capabilities.h"
#include "data/data_files.h"
#include "data/toml_document.h"
#include "governor/governor_profile.h"
#include "governor/memory_governor.h"
#include "outputs/ninja_log.h"
#include "outputs/publish.h"
#include "outputs/report_page.h"
#include "outputs/verify.h"
#include "outputs/wheel_modules.h"
#include "outputs/wheel_normaliser.h"
#include "plan/extension_plan.h"
#include "plan/extension_recipe.h"
#include "plan/toolkit_choice.h"
#include "plan/unit_times.h"
#include "probe/cuda_toolkit_probe.h"
#include "probe/cxx_runtime.h"
#include "probe/host_files.h"
#include "probe/probe.h"
#include "source/source_identity.h"
#include "util/files.h"
#include "util/interrupt.h"
#include "util/mapped_file.h"
#include "util/sha256.h"
#include "util/strings.h"
#include "wheelhouse/wheelhouse_store.h"
#include "workflow/extension_build.h"
#include "workflow/extension_helpers.h"
#include "workflow/extension_steps.h"
#include "workpath/fixed_folder.h"
#include "workpath/fixed_path.h"
#include "workpath/folder_lock.h"

namespace tailor::workflow {
using namespace tailor::cache;

namespace fs = std::filesystem;
using namespace tailor::workflow::detail;

Expected<cuda::ResolvedTargets> resolve_targets(const std::vector<std::string>& arch,
                                                const std::vector<std::string>& gpu,
                                                const probe::HostReport& host) {
  cuda::TargetRequest request;
  request.arch = arch;
  request.gpu = gpu;
  request.detect = [&host] { return probe::detected_gpus(host.gpus); };
  return cuda::resolve_target_request(request);
}

builder::PreflightFacts preflight_facts(const probe::HostReport& host,
                                        const probe::PythonInstall* py,
                                        const probe::CudaToolkit* tk,
                                        const cuda::TargetSet& targets, const std::string& work_dir,
                                        CommandRunner& runner,
                                        const std::map<std::string, std::string>& environment) {
  builder::PreflightFacts f;
  if (tk) {
    f.nvcc_path = tk->nvcc;
    f.nvcc_version = tk->version;
    f.nvcc_major = tk->release.major;
    auto caps = cuda::nvcc_capabilities_from_nvcc(tk->nvcc, runner);
    if (!caps) caps = cuda::nvcc_capabilities_from_table(tk->release);
    if (caps) f.unsupported_targets = cuda::unsupported_by(targets, *caps);
    if (const probe::Compiler* cxx = host_cxx(host, environment)) {
      f.host_compiler =
          fmt::format("{} {} ({})", probe::compiler_kind_name(cxx->kind), cxx->version, cxx->path);
      f.host_compiler_accepted = probe::toolkit_accepts_compiler(*tk, *cxx);
      if (auto max = probe::host_compiler_max_major(*tk, cxx->kind))
        f.host_compiler_limit = fmt::format("{} <= {}", probe::compiler_kind_name(cxx->kind), *max);
    }
  }
  if (py) {
    f.python = py->path;
    f.python_runs = true;
    f.torch_error = py->torch_error;
    if (py->torch) {
      f.torch_version = py->torch->version;
      f.torch_cuda = py->torch->cuda_version;
    }
  }
  {
    std::error_code ec;
    std::string scratch =
        fs::exists(work_dir, ec) ? work_dir : fs::temp_directory_path(ec).string();
    probe::CxxRuntime rt = probe::check_cxx_runtime(
        probe::extension_cxx(environment.count("CXX") ? environment.at("CXX").c_str() : nullptr),
        scratch, runner);
    f.cxx_runtime_compiler = rt.compiler;
    if (rt.checked) f.cxx_runtime_dynamic = rt.dynamic;
    f.cxx_runtime_detail = rt.detail;
    // A compiler that links the runtime statically (a relocated gcc, the CXX of some GPU
    // images): the system's own pair, when it links libstdc++.so.6, builds instead.
    if (auto alt = probe::dynamic_runtime_alternative(rt, scratch, runner)) {
      f.cxx_runtime_instead = alt->cxx;
      f.cc_runtime_instead = alt->cc;
      f.cxx_runtime_instead_detail = alt->runtime.detail;
    }
  }
  f.build_dir = work_dir;
  f.disk_free_bytes = disk_free(work_dir);
  f.disk_needed_bytes = k_disk_needed_bytes;
  return f;
}

ExtensionBuildContext ExtensionBuildContext::system(CommandRunner& runner) {
  ExtensionBuildContext ctx{BuildContext::system(runner)};
  ctx.probe_host = [](const probe::ProbeOptions& popts) { return probe::probe_host(popts); };
  ctx.probe_python = [&runner](const std::string& python, bool may_write) {
    // A build waits minutes anyway: give a loaded machine time to import torch. The
    // answer is cached by the stat of torch's files, so a rebuild skips the import.
    return probe::probe_python_cached(python, runner, std::chrono::seconds(180),
                                      user_cache_dir("probe"), nullptr, may_write);
  };
  return ctx;
}

namespace {

// [cache] of --config, then TAILOR_CACHE / TAILOR_CACHE_URL, then --cache-url; the wheelhouse
// of --wheelhouse, else of --config's [wheelhouse].
builder::StepResult read_build_config(const ExtensionBuildOptions& o, ExtensionBuildContext& ctx,
                                      ExtensionBuildState& s) {
  s.wheelhouse = o.wheelhouse;
  cache::CacheSettings settings;
  if (!o.config.empty()) {
    auto loaded = cache::load_tailor_toml(o.config);
    if (!loaded) return stop(builder::BuildStatus::bad_input, loaded.error().message);
    settings = loaded->cache;
    auto table = data::expected_from([&] {
      data::TomlValue t = loaded->document["wheelhouse"];
      if (!t.present()) return std::string();
      if (!t.is_table()) loaded->document.fail("wheelhouse: expected a table ([wheelhouse])");
      for (const auto& [key, value] : t.entries())
        if (key != "url") value.fail("unknown key (known: url)");
      return t["url"].string();
    });
    if (!table) return stop(builder::BuildStatus::bad_input, table.error().message);
    if (s.wheelhouse.empty()) s.wheelhouse = *table;
  }
  // The wheelhouse's location checked before anything is built, whichever named it.
  if (!s.wheelhouse.empty()) {
    auto store = wheelhouse::open_store(s.wheelhouse);
    if (!store)
      return stop(builder::BuildStatus::bad_input, "--wheelhouse " + store.error().message);
    s.wheelhouse_store = std::move(*store);
  }
  auto with_env = cache::apply_cache_environment(settings, ctx.environment);
  if (!with_env) return stop(builder::BuildStatus::bad_input, with_env.error().message);
  settings = *with_env;
  if (!o.cache_url.empty())
    if (auto ok = cache::set_cache_url(settings, o.cache_url, "--cache-url"); !ok)
      return stop(builder::BuildStatus::bad_input, ok.error().message);
  s.request.cache_settings = settings;
  return std::nullopt;
}

// The work root and the source's work folder under it.
void choose_work_dir(const ExtensionBuildOptions& o, ExtensionBuildState& s) {
  // A shared cache and no --work-dir: a path that is the same on every machine and for
  // every checkout, so nvcc's cached steps (keyed by the source's path) hit.
  if (o.work_root.empty() && s.request.cache_settings.shared() && o.cache != CacheTool::none) {
    s.work_root = s.request.cache_settings.work_root.empty() ? cache::shared_work_root()
                                                             : s.request.cache_settings.work_root;
    s.work_dir = source::stable_work_dir_for(s.spec, s.work_root);
  } else {
    // Absolute: the steps see the work folder at the fixed path, which maps absolute paths
    // (a relative --work-dir built nowhere: its relative paths were never mapped).
    s.work_root = o.work_root.empty() ? source::default_work_root()
                                      : fs::absolute(o.work_root).lexically_normal().string();
    s.work_dir = source::work_dir_for(s.spec, s.work_root);
  }
}

// This host and the build's interpreter, probed at once.
builder::StepResult probe_build_host(const ExtensionBuildOptions& o, ExtensionBuildContext& ctx,
                                     ExtensionBuildState& s) {
  probe::ProbeOptions popts;
  popts.build_dir = fs::exists(s.work_root) ? s.work_root : ".";
  popts.probe_pythons = false;
  s.python_arg = o.python.empty() ? "python3" : o.python;
  // Importing torch takes seconds: the interpreter is probed while the host is.
  auto python_probe = std::async(
      std::launch::async, [&ctx, &s, &o] { return ctx.probe_python(s.python_arg, !o.print_env); });
  s.host = ctx.probe_host(popts);
  s.python = python_probe.get();
  if (s.python)
    s.host.pythons.insert(s.host.pythons.begin(), *s.python);
  else if (!o.python.empty())
    return stop(builder::BuildStatus::bad_input,
                fmt::format("--python {}: cannot run it", o.python));
  return std::nullopt;
}

// The targets asked for, refused when they imply a platform other than this host's.
builder::StepResult resolve_build_targets(const ExtensionBuildOptions& o, ExtensionBuildState& s) {
  outputs::BuildReport& rep = s.result.report;
  auto targets = resolve_targets(o.arch, o.gpu, s.host);
  if (!targets) return stop(builder::BuildStatus::bad_input, targets.error().message);
  s.targets = targets->targets;
  rep.targets = s.targets.names();
  rep.targets_spec = targets->described;
  // A GPU or instance that exists on one platform only (T4G, g5g.xlarge: aarch64) needs a
  // wheel for that platform: built on such a machine, or cross-built here with --platform.
  // Refused before anything is fetched or compiled rather than publish a wheel that can
  // never load there.
  std::optional<std::string> implied_name;
  if (targets->source != cuda::TargetSource::detected) {
    auto implied = cuda::implied_platform(targets->named);
    if (!implied)
      return stop(builder::BuildStatus::bad_input,
                  rep.targets_spec + ": " + implied.error().message);
    implied_name = *implied ? (*implied)->platform : std::string();
    std::string why =
        *implied ? cuda::platform_mismatch(**implied, detail::host_machine(s.host), "this host")
                 : "";
    if (!why.empty() && o.platform.empty())
      return stop(builder::BuildStatus::bad_input,
                  fmt::format("{}: {}: add --platform {} to cross-build its wheel here, or build "
                              "on an {} machine",
                              rep.targets_spec, why, (*implied)->platform, (*implied)->platform));
  } else if (!o.platform.empty() && o.platform != detail::host_machine(s.host)) {
    return stop(builder::BuildStatus::bad_input,
                fmt::format("--platform {}: give the target GPUs with --gpu or --arch (this "
                            "host's GPUs are not the {} machine's)",
                            o.platform, o.platform));
  }
  return detail::choose_cross_platform(o, s, implied_name);
}

// The toolkit the build uses, and the toolchain's versions in the report.
void record_toolchain(ExtensionBuildContext& ctx, ExtensionBuildState& s) {
  outputs::BuildReport& rep = s.result.report;
  s.toolkit = plan::choose_toolkit(s.host, s.python ? &*s.python : nullptr).toolkit;
  const probe::CudaToolkit* tk = s.toolkit;
  const auto& py = s.python;
  rep.python = py ? py->path : s.python_arg;
  if (tk) rep.toolchain["nvcc"] = tk->version + " (" + tk->nvcc + ")";
  if (py) {
    rep.toolchain["python"] = py->version;
    if (py->torch)
      rep.toolchain["torch"] =
          py->torch->version +
          (py->torch->cuda_version ? " (CUDA " + py->torch->cuda_version->to_string() + ")" : "");
  }
  if (const probe::Compiler* cxx = host_cxx(s.host, ctx.environment))
    rep.toolchain[std::string(probe::compiler_kind_name(cxx->kind))] = cxx->version;
  for (const auto& t : s.host.tools)
    if (t.name == "ninja" || t.name == "ccache" || t.name == "sccache" || t.name == "cmake" ||
        t.name == "git")
      rep.toolchain[t.name] = t.version;
}

// The package name picks the recipe: --package, else what the source declares.
void choose_package(const ExtensionBuildOptions& o, ExtensionBuildState& s) {
  s.package = o.package;
  if (s.package.empty() &&
      (s.spec.kind == source::SourceKind::directory || s.spec.kind == source::SourceKind::example))
    s.package = source::detect_package_name(s.spec.path);
  if (s.package.empty()) s.package = s.spec.name;
  // Nothing declares a name (setup(name=NAME) from a variable, say): the folder's own name
  // rather than nothing. (An sdist's name already comes from its file name.)
  if (s.package.empty()) s.package = fs::path(s.spec.path).filename().string();
  s.recipe = &plan::recipe_for(s.package);
}

// The plan's request, with the cache storage settled.
builder::StepResult fill_request(const ExtensionBuildOptions& o, ExtensionBuildContext& ctx,
                                 ExtensionBuildState& s) {
  const outputs::BuildReport& rep = s.result.report;
  plan::ExtensionBuildRequest& req = s.request;
  req.package_name = s.package;
  req.targets = s.targets;
  req.python = rep.python;
  req.jobs = o.jobs;
  // A tool the storage does not fit (ccache and S3) is bad input, before anything is asked
  // of the storage; then the storage is asked once (builder::settle_cache_storage).
  if (req.cache && *req.cache != CacheTool::none && req.cache_settings.shared())
    if (auto fits = cache::cache_tool_environment(req.cache_settings, *req.cache); !fits)
      return stop(builder::BuildStatus::bad_input, fits.error().message);
  if (auto stopped = builder::settle_cache_storage(req.cache_settings, req.cache,
                                                   ctx.session(o, s.result.report)))
    return stopped;
  req.profile = o.profile;
  req.keep_package_archs = o.keep_package_archs;
  req.out_dir = (fs::path(s.work_dir) / "wheelhouse").string();
  req.work_dir = s.work_dir;
  req.memory_budget = o.memory_budget;
  req.sandbox = o.sandbox;
  req.dist = o.dist;
  req.wait_for_lock = o.wait_for_lock;
  req.split_units = o.split_units;
  req.environment = ctx.environment;
  return std::nullopt;
}

}  // namespace

// 1. What to build, for what.
builder::StepResult resolve_inputs(const ExtensionBuildOptions& o, ExtensionBuildContext& ctx,
                                   ExtensionBuildState& s) {
  outputs::BuildReport& rep = s.result.report;
  auto spec = source::classify_source(
      o.source, o.source.empty()
                    ? source::find_bundled_example(fs::absolute(o.cwd).lexically_normal().string())
                    : std::string());
  if (!spec) return stop(builder::BuildStatus::bad_input, spec.error().message);
  s.spec = *spec;
  rep.source = spec->kind == source::SourceKind::example ? spec->path : spec->text;
  rep.source_kind = std::string(source::source_kind_name(spec->kind));
  if (o.jobs && *o.jobs < 1)
    return stop(builder::BuildStatus::bad_input,
                fmt::format("--jobs {}: must be at least 1", *o.jobs));
  s.request.cache = o.cache;
  if (auto stopped = read_build_config(o, ctx, s)) return stopped;
  choose_work_dir(o, s);
  if (auto stopped = probe_build_host(o, ctx, s)) return stopped;
  if (auto stopped = resolve_build_targets(o, s)) return stopped;
  record_toolchain(ctx, s);
  if (auto stopped = detail::check_cross_prerequisites(s)) return stopped;
  choose_package(o, s);
  return fill_request(o, ctx, s);
}

// --print-env: nothing is fetched or built; the source folder is shown where it would be.
builder::StepResult print_build_env(const ExtensionBuildOptions& o, ExtensionBuildContext& ctx,
                                    ExtensionBuildState& s) {
  s.request.source_dir = (fs::path(s.work_dir) / "src").string();
  // An sdist unpacks to its top folder below src/: the package is there, not in src/.
  if (s.spec.kind == source::SourceKind::sdist) {
    auto top = source::sdist_top_folder(s.spec.path, ctx.runner);
    if (!top) return stop(builder::BuildStatus::bad_input, top.error().message);
    if (!top->empty()) s.request.source_dir = (fs::path(s.request.source_dir) / *top).string();
  }
  detail::plan_cross_paths(o, s);
  auto p = plan::resolve_extension_build(s.request, s.host);
  if (!p) return stop(builder::BuildStatus::bad_input, p.error().message);
  // The reproducibility settings the build adds (prepare_build): the epoch is the
  // caller's, else the source's, known once the source is prepared.
  auto epoch_var = ctx.environment.find("SOURCE_DATE_EPOCH");
  auto epoch_env = source::source_date_epoch_from_env(
      epoch_var == ctx.environment.end() ? nullptr : epoch_var->second.c_str());
  if (!epoch_env) return stop(builder::BuildStatus::bad_input, epoch_env.error().message);
  builder::add_reproducible_build_env(p->env, ctx.environment, epoch_env->value_or(0),
                                      s.request.source_dir, p->cache.tool != CacheTool::sccache,
                                      s.toolkit ? std::optional(s.toolkit->release) : std::nullopt);
  if (!*epoch_env) {
    p->env.erase("SOURCE_DATE_EPOCH");
    p->notes.push_back(
        "SOURCE_DATE_EPOCH: the source's own date (a git commit's time, else the newest sdist "
        "member, else 1980-01-01; never a file's modification time), set when the build "
        "prepares it");
  }
  s.result.print_env = plan::render_print_env(*p);
  s.result.status = builder::BuildStatus::printed_env;
  s.result.report.package = s.package;
  s.result.report.recipe = p->recipe_name;
  return std::nullopt;
}

// 2. Check everything before building; report every problem at once.
builder::StepResult check_toolchain(const ExtensionBuildOptions& o, ExtensionBuildContext& ctx,
                                    ExtensionBuildState& s) {
  outputs::BuildReport& rep = s.result.report;
  // One build at a time per work folder and output folder (workpath/folder_lock.h); the
  // locks are held in the state until the run ends.
  auto work_lock = workpath::FolderLock::acquire(s.work_dir, workpath::FolderLock::Place::inside,
                                                 o.wait_for_lock, o.status_out);
  if (!work_lock) return stop(builder::BuildStatus::build_failed, work_lock.error().message);
  s.work_lock.emplace(std::move(*work_lock));
  auto out_lock = workpath::FolderLock::acquire(o.out_dir, workpath::FolderLock::Place::beside,
                                                o.wait_for_lock, o.status_out);
  if (!out_lock) return stop(builder::BuildStatus::build_failed, out_lock.error().message);
  s.out_lock.emplace(std::move(*out_lock));

  status(o, fmt::format("==> checking toolchain for {} ({})", s.package, join(rep.targets, ", ")));
  builder::PreflightFacts facts =
      preflight_facts(s.host, s.python ? &*s.python : nullptr, s.toolkit, s.targets, s.work_root,
                      ctx.runner, ctx.environment);
  if (!s.python) {
    facts.python = s.python_arg;
    facts.python_runs = false;
  }
  s.result.preflight = builder::run_preflight(facts);
  if (!facts.cxx_runtime_instead.empty()) {
    s.request.environment["CXX"] = facts.cxx_runtime_instead;
    s.request.environment["CC"] = facts.cc_runtime_instead;
    // nvcc's own host compiler too, which links a CMake project's CUDA targets (CMake reads
    // CUDAHOSTCXX; every nvcc without -ccbin reads NVCC_CCBIN).
    s.request.environment["CUDAHOSTCXX"] = facts.cxx_runtime_instead;
    s.request.environment["NVCC_CCBIN"] = facts.cxx_runtime_instead;
    status(o, fmt::format("tailor: {} links the C++ runtime statically; building with {} (links "
                          "libstdc++.so.6, as "
                          "torch does)",
                          facts.cxx_runtime_compiler, facts.cxx_runtime_instead));
  }
  if (!s.result.preflight.ok()) {
    // Targets this nvcc cannot produce are the request's mistake (bad input, exit 2), as an
    // unknown target is; anything else is the machine's.
    auto problems = s.result.preflight.problems();
    if (std::all_of(problems.begin(), problems.end(),
                    [](const builder::PreflightCheck* c) { return c->name == "targets"; }))
      return stop(builder::BuildStatus::bad_input,
                  fmt::format("{}: use a CUDA toolkit that supports {}, or drop {} from --arch",
                              join(facts.unsupported_targets, "; "),
                              facts.unsupported_targets.size() == 1 ? "it" : "them",
                              facts.unsupported_targets.size() == 1 ? "it" : "them"));
    return stop(builder::BuildStatus::preflight_failed,
                fmt::format("{} problem(s) to fix before building", problems.size()));
  }
  return std::nullopt;
}

}  // namespace tailor::workflow
