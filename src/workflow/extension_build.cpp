#include "workflow/extension_build.h"
#include "workflow/extension_steps.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <algorithm>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <regex>
#include <future>
#include <sstream>

#include <fmt/format.h>

#include "cache/cache_ledger.h"
#include "cache/compiler_cache.h"
#include "executor/fixed_folder.h"
#include "executor/fixed_path.h"
#include "executor/folder_lock.h"
#include "executor/governor_profile.h"
#include "executor/wheel_modules.h"
#include "executor/memory_governor.h"
#include "executor/ninja_log.h"
#include "executor/publish.h"
#include "executor/report_page.h"
#include "executor/resume.h"
#include "executor/run_plan.h"
#include "executor/step_list.h"
#include "cache/sccache_dist.h"
#include "cache/tailor_toml.h"
#include "executor/verify.h"
#include "executor/wheel_normaliser.h"
#include "cuda/arch_spec.h"
#include "cuda/gpu_platform.h"
#include "cuda/nvcc_capabilities.h"
#include "data/data_files.h"
#include "data/toml_document.h"
#include "plan/extension_plan.h"
#include "plan/extension_recipe.h"
#include "plan/toolkit_choice.h"
#include "plan/unit_times.h"
#include "probe/cuda_toolkit_probe.h"
#include "probe/cxx_runtime.h"
#include "probe/host_files.h"
#include "probe/probe.h"
#include "util/interrupt.h"
#include "util/files.h"
#include "util/mapped_file.h"
#include "util/sha256.h"
#include "util/strings.h"

namespace tailor::workflow {
using namespace tailor::executor;
using namespace tailor::cache;

namespace fs = std::filesystem;
namespace {

/// nvcc's -split-compile=K as the build driver announced it ("tailor: modules at once: ...,
/// nvcc -split-compile=K"); 0 when it split nothing.
int split_compile_in_log(std::string_view log) {
  size_t at = log.find("tailor: modules at once: ");
  if (at == std::string_view::npos) return 0;
  std::string_view line = log.substr(at, log.find('\n', at) - at);
  size_t k = line.find("-split-compile=");
  if (k == std::string_view::npos) return 0;
  int n = 0;
  for (size_t i = k + 15; i < line.size() && std::isdigit(static_cast<unsigned char>(line[i])) && n < 1000; ++i) n = n * 10 + (line[i] - '0');
  return n;
}

/// The rest of each log line that starts with `prefix` (the build driver's own lines), in
/// order; at most `max` of them, each at most 400 bytes.
std::vector<std::string_view> driver_lines(std::string_view log, std::string_view prefix, size_t max) {
  std::vector<std::string_view> out;
  for (size_t at = log.find(prefix); at != std::string_view::npos && out.size() < max; at = log.find(prefix, at + 1)) {
    if (at != 0 && log[at - 1] != '\n') continue;
    size_t end = std::min(log.find('\n', at), log.size());
    out.push_back(log.substr(at + prefix.size(), std::min<size_t>(end - at - prefix.size(), 400)));
  }
  return out;
}

/// What the build driver took back from the package ("tailor: package choice: ..." lines),
/// each once, in order.
std::vector<std::string> package_choices_in_log(std::string_view log) {
  std::vector<std::string> out;
  for (auto line : driver_lines(log, "tailor: package choice: ", 64))
    if (std::find(out.begin(), out.end(), line) == out.end()) out.emplace_back(line);
  return out;
}

/// The units the build driver split on their own ("tailor: split unit: REL K (why)").
std::map<std::string, int> split_units_in_log(std::string_view log) {
  std::map<std::string, int> out;
  for (auto line : driver_lines(log, "tailor: split unit: ", 256)) {
    auto words = split_any(line, " ");
    if (words.size() < 2) continue;
    auto k = parse_whole_number<int>(words[1]);
    if (k && *k >= 2 && *k <= 64) out[words[0]] = *k;
  }
  return out;
}

/// The arch-specific variants the package builds requested targets as ("tailor: package
/// target: sm_90a for sm_90" lines of the build driver): requested name -> variant name.
/// Only a variant of a requested target's own capability counts.
std::map<std::string, std::string> package_variants_in_log(std::string_view log, const cuda::TargetSet& requested) {
  std::map<std::string, std::string> out;
  for (auto line : driver_lines(log, "tailor: package target: ", 64)) {
    auto words = split_any(line, " ");
    if (words.size() != 3 || words[1] != "for") continue;
    auto variant = cuda::parse_target_name(words[0]);
    auto base = cuda::parse_target_name(words[2]);
    if (!variant || !base || !requested.contains(*base) || variant->variant == cuda::ArchVariant::none ||
        variant->cc != base->cc || variant->kind != base->kind)
      continue;
    out[base->name()] = variant->name();
  }
  return out;
}

/// The first line of the package's own build files (setup.py and other top-level Python
/// files, CMakeLists.txt and *.cmake anywhere in the tree) holding `token` as a word:
/// "setup.py:31"; empty when none does. Bounded: 4,000 files of at most 2 MiB each.
std::string package_line_with(const std::string& source_dir, const std::string& token) {
  const std::regex word("(^|[^A-Za-z0-9_])" + token + "($|[^A-Za-z0-9_])");
  std::error_code ec;
  size_t seen = 0;
  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(source_dir, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator() && seen < 4000; it.increment(ec)) {
    const fs::path& p = it->path();
    const std::string name = p.filename().string();
    if (it->is_directory(ec)) {
      if (name.starts_with(".") || name == "build" || name == "dist" || name == "venv") it.disable_recursion_pending();
      continue;
    }
    ++seen;
    const bool top = p.parent_path() == fs::path(source_dir);
    if ((top && name.ends_with(".py") && !name.starts_with("tailor-")) || name == "CMakeLists.txt" || name.ends_with(".cmake"))
      files.push_back(p);
  }
  std::sort(files.begin(), files.end(), [](const fs::path& a, const fs::path& b) {
    return (a.filename() != "setup.py") < (b.filename() != "setup.py") ||
           ((a.filename() != "setup.py") == (b.filename() != "setup.py") && a < b);
  });
  for (const auto& p : files) {
    if (fs::file_size(p, ec) > (2u << 20) || ec) continue;
    std::ifstream in(p);
    std::string line;
    for (size_t n = 1; std::getline(in, line); ++n)
      if (line.find(token) != std::string::npos && !trim(line).starts_with("#") && std::regex_search(line, word))
        return fmt::format("{}:{}", fs::relative(p, source_dir, ec).string(), n);
  }
  return {};
}

/// nvcc refused a target nobody asked for: the package chose it. The fix names the
/// package's file and line, never an arch list the user did not give.
void name_package_archs(ExtensionBuildState& s, bool kept) {
  static const std::regex arch_token("\\b(compute|sm)_(\\d+[a-z]?)\\b");
  for (auto& d : s.result.diagnoses) {
    if (d.pattern_id != "nvcc-unsupported-arch" && d.pattern_id != "nvcc-unsupported-gpu-name") continue;
    std::smatch m;
    if (!std::regex_search(d.quoted_line, m, arch_token)) continue;
    const std::string sm = "sm_" + m[2].str();
    const auto& asked = s.result.report.targets;
    if (std::find(asked.begin(), asked.end(), sm) != asked.end()) continue;
    std::string where = package_line_with(s.source_dir, m[0].str());
    if (where.empty()) where = package_line_with(s.source_dir, (m[1].str() == "sm" ? "compute_" : "sm_") + m[2].str());
    const std::string whose = where.empty() ? std::string("the package's own build") : "the package's " + where;
    d.cause = fmt::format("{} asks for {} itself (the request was {}), and this nvcc cannot generate code for it.",
                          whose, m[0].str(), join(asked, ", "));
    d.fix = kept ? fmt::format("Build without --keep-package-archs, so the requested targets replace the package's; "
                               "or edit {}.", where.empty() ? "the package's target flags" : where)
                 : fmt::format("tailor replaces the targets a package sets in setup.py's nvcc flags, "
                               "TORCH_CUDA_ARCH_LIST and CMake's CUDA_ARCHITECTURES, but not this one: edit {} "
                               "(or use a CUDA toolkit that still supports {}).",
                               where.empty() ? "the package's target flags" : where, m[0].str());
  }
}

// An extension build needs its source copy, build/ objects and the wheel: a couple of GB
// covers every package in the recipes except flash-attn's full instantiation set.
constexpr uint64_t k_disk_needed_bytes = uint64_t{4} << 30;
constexpr const char* k_tool_version = "0.1.0";



void status(const ExtensionBuildOptions& o, const std::string& line) {
  if (!o.status_out) return;
  std::fprintf(o.status_out, "%s\n", line.c_str());
  std::fflush(o.status_out);
}

std::string realpath_or(const std::string& p) {
  std::error_code ec;
  auto r = fs::canonical(p, ec);
  return ec ? p : r.string();
}

/// The C++ compiler torch's cpp_extension will use: $CXX, else c++ / g++ on PATH.
const probe::Compiler* host_cxx(const probe::HostReport& host) {
  std::string want;
  if (const char* cxx = std::getenv("CXX"); cxx && *cxx) want = find_in_path(split_any(cxx, " ").back());
  if (want.empty()) want = find_in_path("c++");
  if (want.empty()) want = find_in_path("g++");
  if (!want.empty()) {
    std::string real = realpath_or(want);
    for (const auto& c : host.compilers)
      if (realpath_or(c.path) == real) return &c;
  }
  for (const auto& c : host.compilers)
    if (c.kind == probe::CompilerKind::gcc) return &c;
  return host.compilers.empty() ? nullptr : &host.compilers.front();
}

std::optional<uint64_t> disk_free(const std::string& path) {
  fs::path p(path);
  std::error_code ec;
  while (!p.empty() && !fs::exists(p, ec)) p = p.parent_path();
  struct statvfs st {};
  if (p.empty() || statvfs(p.c_str(), &st) != 0) return std::nullopt;
  return static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
}

std::string tail_lines(std::string_view text, size_t n) {
  auto lines = split_any(text, "\n");
  if (lines.size() > n) lines.erase(lines.begin(), lines.end() - n);
  return join(lines, "\n");
}

struct CheckRun {
  bool ok = false;
  std::string output;
};

CheckRun run_check(CommandRunner& runner, std::vector<std::string> argv, const std::string& cwd,
                   std::map<std::string, std::optional<std::string>> env, std::ofstream& log,
                   std::chrono::seconds timeout) {
  CommandSpec spec;
  spec.argv = std::move(argv);
  spec.cwd = cwd;
  spec.env = std::move(env);
  spec.timeout = timeout;
  std::string out;
  spec.on_line = [&](std::string_view line) {
    out.append(line).push_back('\n');
  };
  CommandResult r = runner.run(spec);
  log << "### tailor check: " << join(spec.argv, " ") << "\n" << out;
  log << "### exit " << r.exit_code << (r.timed_out ? " (timed out)" : "") << "\n";
  if (!r.started) out += "could not start " + spec.argv[0] + "\n";
  return CheckRun{r.ok(), out};
}

std::vector<std::string> python_test_files(const std::string& source_dir) {
  std::vector<std::string> files;
  std::error_code ec;
  fs::path tests = fs::path(source_dir) / "tests";
  if (!fs::is_directory(tests, ec)) return files;
  for (const auto& e : fs::directory_iterator(tests, ec)) {
    auto n = e.path().filename().string();
    if (n.rfind("test_", 0) == 0 && e.path().extension() == ".py") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

bool has_python_tests(const std::string& source_dir) { return !python_test_files(source_dir).empty(); }

/// The environment of every check in the clean venv: no PYTHONPATH, no user site.
std::map<std::string, std::optional<std::string>> clean_venv_env() {
  return {{"PYTHONPATH", std::nullopt}, {"PYTHONNOUSERSITE", "1"}};
}

StepResult stop(BuildStatus status, std::string message) { return StepStop{status, std::move(message)}; }

}  // namespace

Expected<cuda::ResolvedTargets> resolve_targets(const std::vector<std::string>& arch, const std::vector<std::string>& gpu,
                                                const probe::HostReport& host) {
  cuda::TargetRequest request;
  request.arch = arch;
  request.gpu = gpu;
  request.detect = [&host] { return probe::detected_gpus(host.gpus); };
  return cuda::resolve_target_request(request);
}

PreflightFacts preflight_facts(const probe::HostReport& host, const probe::PythonInstall* py,
                               const probe::CudaToolkit* tk, const cuda::TargetSet& targets,
                               const std::string& work_dir, CommandRunner& runner) {
  PreflightFacts f;
  if (tk) {
    f.nvcc_path = tk->nvcc;
    f.nvcc_version = tk->version;
    f.nvcc_major = tk->release.major;
    auto caps = cuda::nvcc_capabilities_from_nvcc(tk->nvcc, runner);
    if (!caps) caps = cuda::nvcc_capabilities_from_table(tk->release);
    if (caps)
      f.unsupported_targets = cuda::unsupported_by(targets, *caps);
    if (const probe::Compiler* cxx = host_cxx(host)) {
      f.host_compiler = fmt::format("{} {} ({})", probe::compiler_kind_name(cxx->kind), cxx->version, cxx->path);
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
      f.torch_cuda_version = py->torch->cuda_version;
    }
  }
  {
    std::error_code ec;
    std::string scratch = fs::exists(work_dir, ec) ? work_dir : fs::temp_directory_path(ec).string();
    probe::CxxRuntime rt = probe::check_cxx_runtime(probe::extension_cxx(std::getenv("CXX")), scratch, runner);
    f.cxx_runtime_compiler = rt.compiler;
    if (rt.checked) f.cxx_runtime_dynamic = rt.dynamic;
    f.cxx_runtime_detail = rt.detail;
    // A compiler that links the runtime statically (a relocated gcc, the CXX of some GPU
    // images): the system's own pair, when it links libstdc++.so.6, builds instead.
    if (rt.checked && !rt.dynamic) {
      for (const auto& [cxx, cc] : {std::pair<std::string, std::string>{"/usr/bin/g++", "/usr/bin/gcc"},
                                    {"/usr/bin/c++", "/usr/bin/cc"}}) {
        if (!fs::exists(cxx, ec) || !fs::exists(cc, ec)) continue;
        if (fs::equivalent(cxx, rt.compiler, ec)) continue;
        probe::CxxRuntime other = probe::check_cxx_runtime(cxx, scratch, runner);
        if (other.checked && other.dynamic) {
          f.cxx_runtime_instead = cxx;
          f.cc_runtime_instead = cc;
          f.cxx_runtime_instead_detail = other.detail;
          break;
        }
      }
    }
  }
  f.build_dir = work_dir;
  f.disk_free_bytes = disk_free(work_dir);
  f.disk_needed_bytes = k_disk_needed_bytes;
  return f;
}

ExtensionBuildContext ExtensionBuildContext::system(CommandRunner& runner) {
  ExtensionBuildContext ctx{runner};
  ctx.probe_host = [](const probe::ProbeOptions& popts) { return probe::probe_host(popts); };
  ctx.probe_python = [&runner](const std::string& python, bool may_write) {
    // A build waits minutes anyway: give a loaded machine time to import torch. The
    // answer is cached by the stat of torch's files, so a rebuild skips the import.
    return probe::probe_python_cached(python, runner, std::chrono::seconds(180), user_cache_dir("probe"), nullptr,
                                      may_write);
  };
  ctx.environment = process_environment();
  ctx.fixed_path = [&runner](const std::string& real, const std::string& fixed, std::optional<FixedPathRoute> forced) {
    return open_fixed_path(real, fixed, FixedPathTools{self_executable(), find_in_path("bwrap")}, forced, runner);
  };
  return ctx;
}

BuildSession ExtensionBuildContext::session(const ExtensionBuildOptions& o) {
  BuildSession session = system_session(runner, o.status_out, o.display, disk);
  session.environment = Environment(environment);
  session.fixed_path = fixed_path;
  session.display = display;
  return session;
}

// 1. What to build, for what.
StepResult resolve_inputs(const ExtensionBuildOptions& o, ExtensionBuildContext& ctx, ExtensionBuildState& s) {
  BuildReport& rep = s.result.report;
  auto spec = classify_source(o.source, o.source.empty() ? find_bundled_example(fs::absolute(o.cwd).lexically_normal().string())
                                                         : std::string());
  if (!spec) return stop(BuildStatus::bad_input, spec.error().message);
  s.spec = *spec;
  rep.source = spec->kind == SourceKind::example ? spec->path : spec->text;
  rep.source_kind = std::string(source_kind_name(spec->kind));
  if (o.jobs && *o.jobs < 1) return stop(BuildStatus::bad_input, fmt::format("--jobs {}: must be at least 1", *o.jobs));
  auto cache_flag = plan::parse_cache_flag(o.cache);
  if (!cache_flag) return stop(BuildStatus::bad_input, cache_flag.error().message);
  s.request.cache = *cache_flag;

  {
    // [cache] of --config, then TAILOR_CACHE / TAILOR_CACHE_URL, then --cache-url.
    cache::CacheSettings settings;
    if (!o.config.empty()) {
      auto loaded = cache::load_tailor_toml(o.config);
      if (!loaded) return stop(BuildStatus::bad_input, loaded.error().message);
      settings = loaded->cache;
    }
    auto with_env = cache::apply_cache_environment(settings, ctx.environment);
    if (!with_env) return stop(BuildStatus::bad_input, with_env.error().message);
    settings = *with_env;
    if (!o.cache_url.empty())
      if (auto ok = cache::set_cache_url(settings, o.cache_url, "--cache-url"); !ok)
        return stop(BuildStatus::bad_input, ok.error().message);
    s.request.cache_settings = settings;
  }
  // A shared cache and no --work-dir: a path that is the same on every machine and for
  // every checkout, so nvcc's cached steps (keyed by the source's path) hit.
  if (o.work_root.empty() && s.request.cache_settings.shared() && o.cache != "none") {
    s.work_root = s.request.cache_settings.work_root.empty() ? cache::shared_work_root() : s.request.cache_settings.work_root;
    s.work_dir = stable_work_dir_for(s.spec, s.work_root);
  } else {
    // Absolute: the steps see the work folder at the fixed path, which maps absolute paths
    // (a relative --work-dir built nowhere: its relative paths were never mapped).
    s.work_root = o.work_root.empty() ? default_work_root() : fs::absolute(o.work_root).lexically_normal().string();
    s.work_dir = work_dir_for(s.spec, s.work_root);
  }
  probe::ProbeOptions popts;
  popts.build_dir = fs::exists(s.work_root) ? s.work_root : ".";
  popts.probe_pythons = false;
  s.python_arg = o.python.empty() ? "python3" : o.python;
  // Importing torch takes seconds: the interpreter is probed while the host is.
  auto python_probe = std::async(std::launch::async, [&ctx, &s, &o] { return ctx.probe_python(s.python_arg, !o.print_env); });
  s.host = ctx.probe_host(popts);
  s.python = python_probe.get();
  if (s.python) s.host.pythons.insert(s.host.pythons.begin(), *s.python);
  else if (!o.python.empty())
    return stop(BuildStatus::bad_input, fmt::format("--python {}: cannot run it", o.python));

  auto targets = resolve_targets(o.arch, o.gpu, s.host);
  if (!targets) return stop(BuildStatus::bad_input, targets.error().message);
  s.targets = targets->targets;
  rep.targets = s.targets.names();
  rep.targets_spec = targets->described;
  // A GPU or instance that exists on one platform only (T4G, g5g.xlarge: aarch64) needs a
  // wheel for that platform, and an extension is built for the host's own: refuse before
  // anything is fetched or compiled rather than publish a wheel that can never load there.
  if (targets->source != cuda::TargetSource::detected) {
    auto implied = cuda::implied_platform(targets->named);
    if (!implied) return stop(BuildStatus::bad_input, rep.targets_spec + ": " + implied.error().message);
    std::string why = *implied ? cuda::platform_mismatch(**implied, !s.host.os.arch.empty() ? s.host.os.arch : s.host.cpu.arch,
                                                         "this host")
                               : "";
    if (!why.empty())
      return stop(BuildStatus::bad_input, fmt::format("{}: {}: build on an {} machine (tailor does not cross-compile extensions)",
                                                      rep.targets_spec, why, (*implied)->platform));
  }

  s.toolkit = plan::choose_toolkit(s.host, s.python ? &*s.python : nullptr).toolkit;
  const probe::CudaToolkit* tk = s.toolkit;
  const auto& py = s.python;
  rep.python = py ? py->path : s.python_arg;
  if (tk) rep.toolchain["nvcc"] = tk->version + " (" + tk->nvcc + ")";
  if (py) {
    rep.toolchain["python"] = py->version;
    if (py->torch) rep.toolchain["torch"] = py->torch->version + (py->torch->cuda_version.empty() ? "" : " (CUDA " + py->torch->cuda_version + ")");
  }
  if (const probe::Compiler* cxx = host_cxx(s.host))
    rep.toolchain[std::string(probe::compiler_kind_name(cxx->kind))] = cxx->version;
  for (const auto& t : s.host.tools)
    if (t.name == "ninja" || t.name == "ccache" || t.name == "sccache" || t.name == "cmake" || t.name == "git")
      rep.toolchain[t.name] = t.version;

  // The package name picks the recipe: --package, else what the source declares.
  s.package = o.package;
  if (s.package.empty() && (s.spec.kind == SourceKind::directory || s.spec.kind == SourceKind::example))
    s.package = detect_package_name(s.spec.path);
  if (s.package.empty()) s.package = s.spec.name;
  // Nothing declares a name (setup(name=NAME) from a variable, say): the folder's own name
  // rather than nothing. (An sdist's name already comes from its file name.)
  if (s.package.empty()) s.package = fs::path(s.spec.path).filename().string();
  s.recipe = &plan::recipe_for(s.package);

  plan::ExtensionBuildRequest& req = s.request;
  req.package_name = s.package;
  req.targets = s.targets;
  req.python = rep.python;
  req.jobs = o.jobs;
  // A tool the storage does not fit (ccache and S3) is bad input, before anything is asked
  // of the storage; then the storage is asked once (executor::settle_cache_storage).
  if (req.cache && *req.cache != CacheTool::none && req.cache_settings.shared())
    if (auto fits = cache::cache_tool_environment(req.cache_settings, cache_tool_name(*req.cache)); !fits)
      return stop(BuildStatus::bad_input, fits.error().message);
  if (auto stopped = settle_cache_storage(req.cache_settings, req.cache, ctx.session(o))) return stopped;
  req.profile = o.profile;
  req.keep_package_archs = o.keep_package_archs;
  req.out_dir = (fs::path(s.work_dir) / "wheelhouse").string();
  req.environment = ctx.environment;
  return std::nullopt;
}

// --print-env: nothing is fetched or built; the source folder is shown where it would be.
StepResult print_build_env(const ExtensionBuildOptions&, ExtensionBuildContext& ctx, ExtensionBuildState& s) {
  s.request.source_dir = (fs::path(s.work_dir) / "src").string();
  auto p = plan::resolve_extension_build(s.request, s.host);
  if (!p) return stop(BuildStatus::bad_input, p.error().message);
  // The reproducibility settings the build adds (prepare_build): the epoch is the
  // caller's, else the source's, known once the source is prepared.
  auto epoch_var = ctx.environment.find("SOURCE_DATE_EPOCH");
  auto epoch_env = source_date_epoch_from_env(epoch_var == ctx.environment.end() ? nullptr : epoch_var->second.c_str());
  if (!epoch_env) return stop(BuildStatus::bad_input, epoch_env.error().message);
  add_reproducible_build_env(p->env, epoch_env->value_or(0), s.request.source_dir, p->cache.tool != CacheTool::sccache,
                             s.toolkit ? s.toolkit->version : std::string());
  if (!*epoch_env) {
    p->env.erase("SOURCE_DATE_EPOCH");
    p->notes.push_back("SOURCE_DATE_EPOCH: the source's own date (the commit time of HEAD, else the newest file or sdist member), set when the build prepares it");
  }
  s.result.print_env = plan::render_print_env(*p);
  s.result.status = BuildStatus::printed_env;
  s.result.report.package = s.package;
  s.result.report.recipe = p->recipe_name;
  return std::nullopt;
}

// 2. Check everything before building; report every problem at once.
StepResult check_toolchain(const ExtensionBuildOptions& o, ExtensionBuildContext& ctx, ExtensionBuildState& s) {
  BuildReport& rep = s.result.report;
  // One build at a time per work folder and output folder (executor/folder_lock.h); the
  // locks are held in the state until the run ends.
  auto work_lock = FolderLock::acquire(s.work_dir, FolderLock::Place::inside, o.wait_for_lock, o.status_out);
  if (!work_lock) return stop(BuildStatus::build_failed, work_lock.error().message);
  s.work_lock.emplace(std::move(*work_lock));
  auto out_lock = FolderLock::acquire(o.out_dir, FolderLock::Place::beside, o.wait_for_lock, o.status_out);
  if (!out_lock) return stop(BuildStatus::build_failed, out_lock.error().message);
  s.out_lock.emplace(std::move(*out_lock));

  status(o, fmt::format("==> checking toolchain for {} ({})", s.package, join(rep.targets, ", ")));
  PreflightFacts facts =
      preflight_facts(s.host, s.python ? &*s.python : nullptr, s.toolkit, s.targets, s.work_root, ctx.runner);
  if (!s.python) {
    facts.python = s.python_arg;
    facts.python_runs = false;
  }
  s.result.preflight = run_preflight(facts);
  if (!facts.cxx_runtime_instead.empty()) {
    s.request.environment["CXX"] = facts.cxx_runtime_instead;
    s.request.environment["CC"] = facts.cc_runtime_instead;
    // nvcc's own host compiler too, which links a CMake project's CUDA targets (CMake reads
    // CUDAHOSTCXX; every nvcc without -ccbin reads NVCC_CCBIN).
    s.request.environment["CUDAHOSTCXX"] = facts.cxx_runtime_instead;
    s.request.environment["NVCC_CCBIN"] = facts.cxx_runtime_instead;
    status(o, fmt::format("tailor: {} links the C++ runtime statically; building with {} (links libstdc++.so.6, as "
                          "torch does)",
                          facts.cxx_runtime_compiler, facts.cxx_runtime_instead));
  }
  if (!s.result.preflight.ok())
    return stop(BuildStatus::preflight_failed,
                fmt::format("{} problem(s) to fix before building", s.result.preflight.problems().size()));
  return std::nullopt;
}

// 3. Source into the work folder, the plan, its patches.
StepResult prepare_build(const ExtensionBuildOptions& o, ExtensionBuildContext& ctx, ExtensionBuildState& s) {
  BuildReport& rep = s.result.report;
  plan::ExtensionBuildRequest& req = s.request;
  status(o, fmt::format("==> preparing source {} in {}", rep.source, s.work_dir));
  auto src = prepare_source(s.spec, s.work_dir, rep.python, ctx.runner);
  if (!src) return stop(s.spec.kind == SourceKind::sdist || s.spec.kind == SourceKind::directory ? BuildStatus::bad_input
                                                                                                : BuildStatus::build_failed,
                        src.error().message);
  s.source_dir = *src;
  if (o.package.empty() && s.spec.kind != SourceKind::directory && s.spec.kind != SourceKind::example) {
    std::string declared = detect_package_name(*src);
    if (!declared.empty() && plan::normalise_dist_name(declared) != plan::normalise_dist_name(s.package)) {
      s.package = declared;
      req.package_name = s.package;
    }
  }
  rep.package = s.package;
  req.source_dir = *src;
  {
    auto epoch_var = ctx.environment.find("SOURCE_DATE_EPOCH");
    auto epoch_env = source_date_epoch_from_env(epoch_var == ctx.environment.end() ? nullptr : epoch_var->second.c_str());
    if (!epoch_env) return stop(BuildStatus::bad_input, epoch_env.error().message);
    auto identity = identify_source(s.spec, *src, s.work_dir, ctx.runner, *epoch_env);
    if (!identity) return stop(BuildStatus::build_failed, "identifying the source: " + identity.error().message);
    s.identity = std::move(*identity);
  }
  auto p = plan::resolve_extension_build(req, s.host);
  if (!p) return stop(BuildStatus::bad_input, p.error().message);
  s.build_plan = *p;
  rep.recipe = p->recipe_name.empty() ? s.recipe->name : p->recipe_name;
  if (auto patched = plan::apply_patches(*p, *src); !patched)
    return stop(BuildStatus::build_failed, "patching the source: " + patched.error().message);
  rep.env = p->env;
  rep.unset_env = p->unset_env;
  // The compilers preflight chose because the caller's links the C++ runtime statically.
  for (const char* var : {"CXX", "CC", "CUDAHOSTCXX", "NVCC_CCBIN"})
    if (auto it = req.environment.find(var), was = ctx.environment.find(var);
        it != req.environment.end() && (was == ctx.environment.end() || was->second != it->second) && !rep.env.count(var))
      rep.env[var] = it->second;
  {
    auto wrapped = wrap_cached_compilers(rep.env, (fs::path(s.work_dir) / "compiler-wrappers").string());
    if (!wrapped) return stop(BuildStatus::build_failed, wrapped.error().message);
    rep.env = *wrapped;
  }
  if (s.toolkit && !rep.env.count("CUDA_HOME")) rep.env["CUDA_HOME"] = s.toolkit->root;
  add_reproducible_build_env(rep.env, s.identity->source_date_epoch, *src, p->cache.tool != CacheTool::sccache,
                             s.toolkit ? s.toolkit->version : std::string());
  for (const auto& file : p->helper_files)
    if (auto written = write_file_atomic(file.path, file.text); !written)
      return stop(BuildStatus::build_failed, "writing " + file.path + ": " + written.error().message);
  rep.jobs = p->jobs;
  rep.jobs_reason = p->jobs_reason;
  return std::nullopt;
}

namespace {

// The plan's execution policy for this build: where it runs, at which path the steps see
// the work folder, its jobs (fixed or governed), what it learns from.
void set_run_policy(const ExtensionBuildOptions& o, ExtensionBuildState& s, plan::ExtensionBuildPlan& p) {
  const plan::ExtensionRecipe& recipe = *s.recipe;
  plan::ExecutionPolicy& run = p.run;
  run.package = s.result.report.package;
  // A profile builds other units (flash-attn's minimal one leaves the backward out), so
  // its peaks and unit times are its own.
  run.record_name = p.profile.empty() ? recipe.name : fmt::format("{} profile={}", recipe.name, p.profile);
  run.work_dir = s.work_dir;
  run.build_dir = s.source_dir;
  run.mapped_dir = s.work_dir;
  run.ninja_root = (fs::path(s.source_dir) / "build").string();
  run.fresh_dir = s.request.out_dir;
  run.work_path = o.dist ? plan::ExecutionPolicy::WorkPath::real : plan::ExecutionPolicy::WorkPath::fixed;
  run.sandbox = o.sandbox;
  run.dist = o.dist;
  run.wait_for_lock = o.wait_for_lock;
  run.unit_times_recipe = recipe.name;
  run.unit_times_profile = p.profile;
  run.split_units = o.split_units;
  plan::JobPolicy& j = run.jobs;
  j.fixed = o.jobs;
  j.budget = o.memory_budget;
  j.variable = recipe.jobs_variable;
  j.counts_nvcc_threads = recipe.jobs_count_nvcc_threads;
  j.nvcc_threads = p.nvcc_threads;
  j.prior_job_bytes = static_cast<uint64_t>(recipe.memory_per_job_gib *
                                            (recipe.memory_per_nvcc_thread ? p.nvcc_threads : 1) *
                                            static_cast<double>(1ull << 30));
  j.recipe = recipe.name;
  j.pip_build = recipe.build_system == plan::BuildSystem::pip;
  j.serial = recipe.serial && !recipe.parallel_fix;
  // The ninja torch's cpp_extension runs: the first on PATH, as the probe found it (the
  // plan prepends only the toolkit's bin folder).
  for (const auto& t : s.host.tools) {
    if (t.name == "ninja") j.ninja_version = t.version;
    if (t.name == "make" && !t.version.empty() && !t.jobserver_client) j.make_without_jobserver = t.path;
  }
  j.max_jobs = static_cast<size_t>(std::max(1, s.host.cpu.build_cores()));
  j.memory_limit = s.host.memory.cgroup_limit ? s.host.memory.cgroup_limit : s.host.memory.total;
}

}  // namespace

// 4. Build: the plan through the one builder (executor/run_plan.h).
StepResult run_build(const ExtensionBuildOptions& o, ExtensionBuildContext& ctx, ExtensionBuildState& s) {
  BuildReport& rep = s.result.report;
  plan::ExtensionBuildPlan p = s.build_plan;
  p.env = rep.env;
  p.unset_env = rep.unset_env;
  p.jobs = rep.jobs;
  p.jobs_reason = rep.jobs_reason;
  set_run_policy(o, s, p);
  BuildSession session = ctx.session(o);
  PlanRun run = run_plan(p, session, rep);
  for (auto& check : run.preflight) s.result.preflight.checks.push_back(std::move(check));
  if (!run.outcome) return run.stop;
  rep.split_compile = split_compile_in_log(run.log_text);
  rep.package_choices = package_choices_in_log(run.log_text);
  rep.package_variants = package_variants_in_log(run.log_text, s.targets);
  rep.split_units = split_units_in_log(run.log_text);
  for (auto& j : rep.job_timeline)
    for (const auto& [unit, k] : rep.split_units)
      if (j.kind == "cu" && (j.input == unit || j.input.ends_with("/" + unit))) j.split = k;
  if (rep.split_compile > 0)
    for (auto& j : rep.job_timeline)
      if (j.kind == "cu") j.split = rep.split_compile;
  rep.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - s.started).count();
  if (run.stop) {
    s.result.error_block = std::move(run.error_block);
    s.result.diagnoses = std::move(run.diagnoses);
    name_package_archs(s, o.keep_package_archs);
  }
  return run.stop;
}

namespace {
// The check line of the search-path rewrite: what left each library, or that nothing had to.
CheckResult search_path_check(const std::vector<SearchPathRemoval>& removals) {
  if (removals.empty()) return {"search-path", CheckStatus::passed, "no RUNPATH/RPATH entry outside the wheel"};
  std::vector<std::string> parts;
  for (const auto& r : removals)
    parts.push_back(fmt::format("{}: removed {} {}{}", r.member, r.tag, join(r.removed, ":"),
                                r.after.empty() ? "" : fmt::format(" (kept {})", r.after)));
  return {"search-path", CheckStatus::passed,
          "build machine folders removed from the wheel's libraries: " + join(parts, "; ")};
}
}  // namespace

// 5. The wheel, verified against the request.
StepResult verify_wheel(const ExtensionBuildOptions& o, ExtensionBuildContext&, ExtensionBuildState& s) {
  BuildReport& rep = s.result.report;
  const plan::ExtensionBuildRequest& req = s.request;
  std::error_code ec;
  std::string wheel;
  for (const auto& e : fs::directory_iterator(req.out_dir, ec))
    if (e.path().extension() == ".whl") wheel = e.path().string();
  if (wheel.empty()) return stop(BuildStatus::build_failed, fmt::format("the build finished but left no wheel in {}", req.out_dir));
  s.wheel = wheel;
  rep.wheel = fs::path(wheel).filename().string();
  auto hash_wheel = [&]() -> StepResult {
    auto mapped = MappedFile::open(wheel);
    if (!mapped) return stop(BuildStatus::build_failed, mapped.error().message);
    rep.sha256 = Sha256::hex(Sha256::of(mapped->bytes()));
    rep.size = mapped->bytes().size();
    return std::nullopt;
  };
  if (auto st = hash_wheel()) return st;
  // Same inputs, same bytes: rewrite the package's wheel deterministically, with provenance
  // (the source identity comes from prepare_build).
  if (s.identity) {
    rep.provenance = make_build_provenance(rep, *s.identity, s.spec, plan::recipe_for(s.package));
    rep.provenance->profile = o.profile;
    rep.provenance->split_units = rep.split_units;
    auto n = normalise_wheel(wheel, {s.identity->source_date_epoch, provenance_file_text(*rep.provenance)});
    if (!n) {
      rep.checks.push_back({"search-path", CheckStatus::failed, n.error().message});
      return stop(BuildStatus::verify_failed, "the built wheel cannot be normalised: " + n.error().message);
    }
    if (auto st = hash_wheel()) return st;
    rep.checks.push_back(search_path_check(n->search_paths));
  }
  status(o, fmt::format("==> verifying {}", rep.wheel));
  // A capability the package builds as its arch-specific variant (its kernels need sm_90a's
  // instructions): that variant is what the wheel must hold for it.
  cuda::TargetSet expected;
  for (const auto& t : s.targets.targets) {
    auto it = rep.package_variants.find(t.name());
    if (it == rep.package_variants.end()) {
      expected.add(t);
    } else if (auto variant = cuda::parse_target_name(it->second)) {
      expected.add(*variant);
    } else {
      expected.add(t);
    }
  }
  auto verification = verify_wheel_targets(wheel, expected, s.build_plan.package_additions);
  if (!verification) return stop(BuildStatus::verify_failed, verification.error().message);
  rep.bytes_per_target = verification->bytes_per_target;
  if (!verification->ok()) {
    rep.checks.push_back({"targets", CheckStatus::failed, verification->describe_problems()});
    // One line (the error line escapes control characters): a library's problems a clause each.
    auto lines = split_any(verification->describe_problems(), "\n");
    std::erase_if(lines, [](const std::string& l) { return trim(l).empty(); });
    return stop(BuildStatus::verify_failed, "the wheel's targets differ from the request: " + join(lines, "; "));
  }
  rep.checks.push_back({"targets", CheckStatus::passed, verification->summary()});
  // What `tailor inspect` would say of this wheel, said here: a failure stops the build, a
  // warning is a check of its own in the summary and the report.
  if (!verification->inspect_failures.empty()) {
    std::string text = join(verification->inspect_failures, "; ");
    rep.checks.push_back({"inspect", CheckStatus::failed, text});
    return stop(BuildStatus::verify_failed, "tailor inspect fails the wheel: " + text);
  }
  rep.checks.push_back(verification->inspect_warnings.empty()
                           ? CheckResult{"inspect", CheckStatus::passed, "no warnings (RECORD, manylinux tag, search paths)"}
                           : CheckResult{"inspect", CheckStatus::warning, join(verification->inspect_warnings, "; ")});
  if (!verification->runtime_problems.empty()) {
    // Caught here, before the import test or the package's tests die of it (a segfault
    // on the first exception torch throws): name the compiler that did it.
    std::string text = join(verification->runtime_problems, "; ");
    if (auto cxx = s.request.environment.find("CXX"); cxx != s.request.environment.end() && !cxx->second.empty())
      text += fmt::format(" [the C++ compiler came from the environment: CXX={}]", cxx->second);
    rep.checks.push_back({"runtime", CheckStatus::failed, text});
    return stop(BuildStatus::verify_failed, "the wheel's C++ runtime does not match torch's: " + text);
  }
  return std::nullopt;
}

std::optional<std::string> missing_module_in(std::string_view out) {
  static constexpr std::string_view key = "ModuleNotFoundError: No module named '";
  size_t at = out.rfind(key);
  if (at == std::string_view::npos) return std::nullopt;
  size_t begin = at + key.size();
  size_t end = out.find('\'', begin);
  if (end == std::string_view::npos || end == begin || end - begin > 200) return std::nullopt;
  return std::string(out.substr(begin, end - begin));
}

namespace {
bool contains_word(std::string_view text, std::string_view word) {
  auto is_ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t at = text.find(word); !word.empty() && at != std::string_view::npos; at = text.find(word, at + 1)) {
    bool left = at == 0 || !is_ident(text[at - 1]);
    bool right = at + word.size() == text.size() || !is_ident(text[at + word.size()]);
    if (left && right) return true;
  }
  return false;
}

// The programs the import check runs in an interpreter: data/build/target_site_paths.py
// and data/build/venv_add_paths.py (the target's own site folders handed to the check
// venv), data/build/wheel_native_import.py (an import that failed on a module: the wheel's
// own, undeclared, or its extension modules loaded one by one).
std::string embedded_program(std::string_view path) {
  auto text = data::file(path);
  if (!text) throw data::DataError(text.error().message);
  return std::string(*text);
}
}  // namespace

// 6. Install into a clean venv (torch visible, nothing else) and import.
bool package_tests_run(const ExtensionBuildOptions& o, const ExtensionBuildState& s) {
  bool run_tests = o.tests == ExtensionBuildOptions::Tests::always ||
                   (o.tests == ExtensionBuildOptions::Tests::automatic && s.spec.kind == SourceKind::example);
  return run_tests && has_python_tests(s.source_dir);
}

constexpr std::string_view k_smoke_marker = "tailor: import passed; the smoke test follows";

StepResult import_check(const ExtensionBuildOptions& o, ExtensionBuildContext& ctx, ExtensionBuildState& s) {
  BuildReport& rep = s.result.report;
  CommandRunner& runner = ctx.runner;
  const std::string& work_dir = s.work_dir;
  std::ofstream log(rep.log_path, std::ios::app);
  std::error_code ec;
  fs::path venv = fs::path(work_dir) / "venv";
  fs::remove_all(venv, ec);
  s.venv = venv.string();
  // What to import: the recipe's name for it, else what the built wheel itself holds at its
  // top level (top_level.txt, its packages and extension modules), never a name guessed
  // from the distribution's (FooBar's module may be foobar).
  std::vector<std::string> import_names;
  if (!s.recipe->import_name.empty() && is_python_identifier(s.recipe->import_name)) {
    import_names = {s.recipe->import_name};
  } else if (auto names = wheel_top_level_names(s.wheel); names && !names->empty()) {
    import_names = import_names_to_check(*names, s.package);
  }
  if (import_names.empty()) {
    rep.checks.push_back({"import", CheckStatus::failed, "the wheel has no top-level Python package or module to import"});
    return stop(BuildStatus::check_failed, "the built wheel holds nothing to import (no top-level package, module "
                                           "or extension module)");
  }
  const std::string import_name = join(import_names, ", ");
  // The recipe's smoke test as the plan rendered it with the name it guessed: rendered
  // again with the wheel's own.
  if (s.recipe->import_name.empty() && !s.recipe->smoke_test.empty()) {
    auto render = [&](const std::string& name) {
      std::string smoke = s.recipe->smoke_test;
      for (size_t at = smoke.find("{import_name}"); at != std::string::npos; at = smoke.find("{import_name}", at + name.size()))
        smoke.replace(at, 13, name);
      return smoke;
    };
    if (s.build_plan.smoke_test == render(s.build_plan.import_name)) s.build_plan.smoke_test = render(import_names.front());
  }
  std::string vpy = (venv / "bin" / "python").string();
  s.venv_python = vpy;
  const auto clean_env = clean_venv_env();
  status(o, fmt::format("==> import test in a clean venv ({})", venv.string()));
  // No pip of its own (ensurepip costs seconds per build): the target's pip installs into
  // it with --python (pip 22.3 and later); an older pip gets the venv its own pip below.
  CheckRun r = run_check(runner, {rep.python, "-m", "venv", "--system-site-packages", "--without-pip", venv.string()},
                         work_dir, clean_env, log, std::chrono::seconds(300));
  // When the target Python is itself a venv (e.g. /opt/torch/.venv), --system-site-packages
  // exposes the base interpreter, not the venv that holds torch: hand the new venv the
  // target's own site folders, and what their .pth files add to its path (a venv that
  // reuses another interpreter's torch that way, as `tailor stack --torch` makes), through
  // a .pth file so torch (and only what sits beside it) is visible.
  if (r.ok) {
    CheckRun sites = run_check(runner, {rep.python, "-c", embedded_program("build/target_site_paths.py")}, work_dir,
                               clean_env, log, std::chrono::seconds(120));
    if (sites.ok)
      r = run_check(runner, {vpy, "-c", embedded_program("build/venv_add_paths.py"), sites.output}, work_dir, clean_env,
                    log, std::chrono::seconds(120));
  }
  if (r.ok) {
    CheckRun via = run_check(runner,
                             {rep.python, "-m", "pip", "--python", vpy, "install", "--no-deps", "--no-index",
                              "--force-reinstall", "-q", s.wheel},
                             work_dir, clean_env, log, std::chrono::seconds(600));
    if (via.ok || via.output.find("no such option: --python") == std::string::npos) {
      r = via;
    } else {
      r = run_check(runner, {vpy, "-m", "ensurepip", "-q"}, work_dir, clean_env, log, std::chrono::seconds(300));
      if (r.ok)
        r = run_check(runner, {vpy, "-m", "pip", "install", "--no-deps", "--no-index", "--force-reinstall", "-q", s.wheel},
                      work_dir, clean_env, log, std::chrono::seconds(600));
    }
  }
  // Run from the venv folder so the source tree's own package folder cannot shadow the
  // installed one.
  // With a GPU and no package tests to run first, the recipe's smoke test runs in the same
  // interpreter after the import, behind a marker line that tells the two apart.
  const bool fold_smoke = r.ok && !s.host.gpus.empty() && !s.build_plan.smoke_test.empty() && !package_tests_run(o, s);
  if (r.ok) {
    std::string code = fmt::format("import torch, {}; print({}.__file__)", import_name, import_names.front());
    if (fold_smoke) code += fmt::format("\nprint('{}', flush=True)\n{}", k_smoke_marker, s.build_plan.smoke_test);
    r = run_check(runner, {vpy, "-c", code}, venv.string(), clean_env, log, std::chrono::seconds(fold_smoke ? 900 : 300));
    if (fold_smoke) {
      size_t at = r.output.find(k_smoke_marker);
      if (r.ok || at != std::string::npos) {
        s.smoke_run = std::make_pair(r.ok, r.output);
        r.ok = true;  // the import itself passed
      }
    }
  }
  if (!r.ok) {
    // A run-time dependency this environment lacks (transformers for mamba-ssm, say) is not
    // the build's fault: say so, and load the wheel's compiled modules directly instead.
    // Never for a module the package itself names (its compiled module missing from the
    // wheel is a broken build): its own prefix, or a name in the recipe's smoke test.
    auto missing = missing_module_in(r.output);
    if (missing && (std::any_of(import_names.begin(), import_names.end(),
                                [&](const std::string& n) { return missing->starts_with(n); }) ||
                    contains_word(s.build_plan.smoke_test, missing->substr(0, missing->find('.')))))
      missing.reset();
    if (missing) {
      // A module the recipe knows the package imports without declaring it is as good as
      // declared (torch-sparse's torch_scatter).
      const std::vector<std::string>& known = s.recipe->undeclared_requires;
      const bool undeclared = std::any_of(known.begin(), known.end(), [&](const std::string& k) {
        return missing->substr(0, missing->find('.')) == k.substr(0, k.find('.'));
      });
      std::vector<std::string> argv = {vpy, "-c", embedded_program("build/wheel_native_import.py"), s.wheel, *missing};
      if (undeclared) argv.push_back("--recipe-knows");
      CheckRun native = run_check(runner, argv, venv.string(), clean_env, log, std::chrono::seconds(300));
      if (native.ok) {
        std::vector<std::string> loaded;
        for (const auto& line : split_any(native.output, "\n"))
          if (line.starts_with("loaded ")) loaded.push_back(std::string(trim(line.substr(7))));
        s.missing_dependency = *missing;
        rep.checks.push_back(
            {"import", CheckStatus::skipped,
             fmt::format("import {} needs {}, which this environment lacks (a run-time dependency{}; "
                         "install it to use the package)",
                         import_name, *missing,
                         undeclared ? fmt::format(" that {} does not declare in its metadata", s.recipe->name) : "")});
        rep.checks.push_back(
            {"native-import", loaded.empty() ? CheckStatus::skipped : CheckStatus::passed,
             loaded.empty() ? std::string("the wheel has no compiled Python modules to load on their own")
                            : fmt::format("{} compiled module{} load{}: {}", loaded.size(), loaded.size() == 1 ? "" : "s",
                                          loaded.size() == 1 ? "s" : "", join(loaded, ", "))});
        status(o, fmt::format("import test: {} is not installed here (a run-time dependency of {}); "
                              "the compiled modules load",
                              *missing, import_name));
        return std::nullopt;
      }
      r.output += "\n" + native.output;
    }
    rep.checks.push_back({"import", CheckStatus::failed, "import " + import_name});
    s.result.check_output = tail_lines(r.output, 30);
    return stop(BuildStatus::check_failed, fmt::format("the built wheel does not import ({})", import_name));
  }
  rep.checks.push_back({"import", CheckStatus::passed, "import " + import_name + " in a fresh venv"});
  return std::nullopt;
}

// 7. Tests: the package's pytest suite (the example's by default), then the GPU smoke test.
StepResult run_package_tests(const ExtensionBuildOptions& o, ExtensionBuildContext& ctx, ExtensionBuildState& s) {
  BuildReport& rep = s.result.report;
  CommandRunner& runner = ctx.runner;
  std::ofstream log(rep.log_path, std::ios::app);
  const auto clean_env = clean_venv_env();
  const std::string& vpy = s.venv_python;
  const std::string& src = s.source_dir;
  CheckRun r{true, ""};
  bool gpu = !s.host.gpus.empty();
  bool tests_ran_on_gpu = false;
  if (package_tests_run(o, s)) {
    status(o, gpu ? "==> running the package's tests (CPU and GPU)" : "==> running the package's tests (CPU; GPU tests skip: no GPU)");
    bool have_pytest = run_check(runner, {vpy, "-c", "import pytest"}, s.venv, clean_env, log,
                                 std::chrono::seconds(60)).ok;
    if (have_pytest) {
      r = run_check(runner, {vpy, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", (fs::path(src) / "tests").string()},
                    s.venv, clean_env, log, std::chrono::seconds(1800));
    } else {
      // Offline machines may lack pytest: run each test file as a script (the example's
      // files carry a stand-in runner for exactly this).
      for (const auto& file : python_test_files(src)) {
        r = run_check(runner, {vpy, file}, s.venv, clean_env, log, std::chrono::seconds(1800));
        if (!r.ok) break;
      }
    }
    std::string last = split_any(r.output, "\n").empty() ? "" : split_any(r.output, "\n").back();
    if (!r.ok) {
      rep.checks.push_back({gpu ? "tests" : "cpu-tests", CheckStatus::failed, std::string(trim(last))});
      s.result.check_output = tail_lines(r.output, 40);
      return stop(BuildStatus::check_failed, "the package's tests failed against the built wheel");
    }
    rep.checks.push_back({gpu ? "tests" : "cpu-tests", CheckStatus::passed, std::string(trim(last))});
    tests_ran_on_gpu = gpu;
  } else if (o.tests == ExtensionBuildOptions::Tests::always) {
    rep.checks.push_back({"tests", CheckStatus::skipped, "no tests/test_*.py in the source"});
  }
  if (!gpu) {
    rep.checks.push_back({"gpu-smoke", CheckStatus::skipped, "no GPU"});
    status(o, "GPU smoke test: skipped (no GPU)");
  } else if (tests_ran_on_gpu) {
    rep.checks.push_back({"gpu-smoke", CheckStatus::passed, "the package's GPU tests ran"});
  } else if (!s.build_plan.smoke_test.empty()) {
    if (s.smoke_run) {
      status(o, "==> GPU smoke test (ran with the import test)");
      r = CheckRun{s.smoke_run->first, s.smoke_run->second};
    } else {
      status(o, "==> GPU smoke test");
      r = run_check(runner, {vpy, "-c", s.build_plan.smoke_test}, s.venv, clean_env, log, std::chrono::seconds(600));
    }
    const auto missing = r.ok ? std::nullopt : missing_module_in(r.output);
    if (missing && !s.missing_dependency.empty() && *missing == s.missing_dependency) {
      rep.checks.push_back({"gpu-smoke", CheckStatus::skipped,
                            fmt::format("the recipe's smoke test needs {}, which this environment lacks", *missing)});
    } else if (!r.ok) {
      rep.checks.push_back({"gpu-smoke", CheckStatus::failed, "the recipe's smoke test"});
      s.result.check_output = tail_lines(r.output, 30);
      return stop(BuildStatus::check_failed, "the GPU smoke test failed");
    } else {
      rep.checks.push_back({"gpu-smoke", CheckStatus::passed, "the recipe's smoke test"});
    }
  } else {
    rep.checks.push_back({"gpu-smoke", CheckStatus::skipped, "the recipe has no smoke test"});
  }
  return std::nullopt;
}

// 8. Publish wheel, report and log together; an interrupted run publishes nothing.
StepResult publish_outputs(const ExtensionBuildOptions& o, ExtensionBuildContext&, ExtensionBuildState& s) {
  BuildReport& rep = s.result.report;
  if (interrupt_signal() != 0) return stop(BuildStatus::build_failed, "interrupted");
  auto staging = PublishStaging::create(o.out_dir);
  if (!staging) return stop(BuildStatus::bad_input, staging.error().message);
  rep.ok = true;
  rep.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - s.started).count();
  std::string report_name = rep.wheel + ".report.json";
  std::string log_name = rep.wheel + ".build.log";
  rep.wheel_path = (fs::path(staging->out_dir()) / rep.wheel).string();
  std::string kept_log = rep.log_path;
  rep.log_path = (fs::path(staging->out_dir()) / log_name).string();
  auto steps_ok = staging->add_copy(kept_log, log_name);
  if (steps_ok) steps_ok = staging->add_text(report_name, to_json(rep).dump(2) + "\n");
  if (steps_ok) steps_ok = staging->add_text(rep.wheel + ".report.html", render_report_html(to_json(rep)));
  if (steps_ok) steps_ok = staging->add_copy(s.wheel, rep.wheel);
  if (!steps_ok) return stop(BuildStatus::build_failed, steps_ok.error().message);
  auto published = staging->commit({report_name, rep.wheel});
  if (!published) return stop(BuildStatus::build_failed, published.error().message);
  s.result.published = *published;
  s.result.status = BuildStatus::ok;
  return std::nullopt;
}

ExtensionBuildResult build_extension(const ExtensionBuildOptions& o, ExtensionBuildContext& ctx) {
  ExtensionBuildState s;
  s.result.report.tool_version = k_tool_version;
  s.result.report.started_at = utc_now_iso8601();
  s.started = std::chrono::steady_clock::now();
  auto stopped = [&](StepStop st) {
    s.result.status = st.status;
    s.result.message = std::move(st.message);
    s.result.report.ok = false;
    s.result.report.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - s.started).count();
    return std::move(s.result);
  };
  auto mark = std::chrono::steady_clock::now();
  auto phase_done = [&](const char* name) {
    auto now = std::chrono::steady_clock::now();
    s.result.report.phases.push_back({name, std::chrono::duration<double>(now - mark).count()});
    mark = now;
  };
  auto st_inputs = resolve_inputs(o, ctx, s);
  phase_done("inputs");
  if (st_inputs) return stopped(std::move(*st_inputs));
  if (o.print_env) {
    if (auto st = print_build_env(o, ctx, s)) return stopped(std::move(*st));
    return std::move(s.result);
  }
  using Step = StepResult (*)(const ExtensionBuildOptions&, ExtensionBuildContext&, ExtensionBuildState&);
  const std::pair<const char*, Step> steps[] = {{"toolchain", check_toolchain}, {"prepare", prepare_build},
                                                {"build", run_build},          {"verify", verify_wheel},
                                                {"import", import_check},      {"tests", run_package_tests},
                                                {"publish", publish_outputs}};
  // A signal that came while a step ran (the toolchain's test link, the source copy) ends
  // the run there: nothing after it starts.
  StepResult st = executor::run_step_list(
      steps, [&](const std::pair<const char*, Step>& step) { return step.second(o, ctx, s); },
      [&](const std::pair<const char*, Step>& step) { phase_done(step.first); },
      StepStop{BuildStatus::build_failed, "interrupted"});
  if (st) return stopped(std::move(*st));
  return std::move(s.result);
}

ExtensionBuildResult build_extension(const ExtensionBuildOptions& o) {
  SystemCommandRunner runner;
  ExtensionBuildContext ctx = ExtensionBuildContext::system(runner);
  return build_extension(o, ctx);
}

}  // namespace tailor::workflow
