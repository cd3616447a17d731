#include "workflow/extension_build.h"

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
#include "util/files.h"
#include "util/interrupt.h"
#include "util/mapped_file.h"
#include "util/sha256.h"
#include "util/strings.h"
#include "util/version.h"
#include "workflow/extension_helpers.h"
#include "workflow/extension_steps.h"
#include "workpath/fixed_folder.h"
#include "workpath/fixed_path.h"
#include "workpath/folder_lock.h"

namespace tailor::workflow {
using namespace tailor::cache;

namespace fs = std::filesystem;
using namespace tailor::workflow::detail;

namespace detail {

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
const probe::Compiler* host_cxx(const probe::HostReport& host,
                                const std::map<std::string, std::string>& environment) {
  std::string want;
  if (auto cxx = environment.find("CXX"); cxx != environment.end() && !cxx->second.empty())
    want = find_in_path(split_any(cxx->second, " ").back());
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

}  // namespace detail

namespace {

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
  spec.on_line = [&](std::string_view line) { out.append(line).push_back('\n'); };
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
    if (n.rfind("test_", 0) == 0 && e.path().extension() == ".py")
      files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

bool has_python_tests(const std::string& source_dir) {
  return !python_test_files(source_dir).empty();
}

/// The environment of every check in the clean venv: no PYTHONPATH, no user site.
std::map<std::string, std::optional<std::string>> clean_venv_env() {
  return {{"PYTHONPATH", std::nullopt}, {"PYTHONNOUSERSITE", "1"}};
}

}  // namespace

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
  for (size_t at = text.find(word); !word.empty() && at != std::string_view::npos;
       at = text.find(word, at + 1)) {
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
}  // namespace

// The clean venv of the import check, with the built wheel installed: no pip of its own
// (ensurepip costs seconds per build): the target's pip installs into it with --python
// (pip 22.3 and later); an older pip gets the venv its own pip.
static CheckRun install_in_clean_venv(CommandRunner& runner, const std::string& python,
                                      const std::string& venv, const std::string& wheel,
                                      const std::string& work_dir, std::ofstream& log) {
  const auto clean_env = clean_venv_env();
  const std::string vpy = (fs::path(venv) / "bin" / "python").string();
  CheckRun r =
      run_check(runner, {python, "-m", "venv", "--system-site-packages", "--without-pip", venv},
                work_dir, clean_env, log, std::chrono::seconds(300));
  // When the target Python is itself a venv (e.g. /opt/torch/.venv), --system-site-packages
  // exposes the base interpreter, not the venv that holds torch: hand the new venv the
  // target's own site folders, and what their .pth files add to its path (a venv that
  // reuses another interpreter's torch that way, as `tailor stack --torch` makes), through
  // a .pth file so torch (and only what sits beside it) is visible.
  if (r.ok) {
    CheckRun sites =
        run_check(runner, {python, "-c", data::embedded_program("build/target_site_paths.py")},
                  work_dir, clean_env, log, std::chrono::seconds(120));
    if (sites.ok)
      r = run_check(runner,
                    {vpy, "-c", data::embedded_program("build/venv_add_paths.py"), sites.output},
                    work_dir, clean_env, log, std::chrono::seconds(120));
  }
  if (r.ok) {
    CheckRun via = run_check(runner,
                             {python, "-m", "pip", "--python", vpy, "install", "--no-deps",
                              "--no-index", "--force-reinstall", "-q", wheel},
                             work_dir, clean_env, log, std::chrono::seconds(600));
    if (via.ok || via.output.find("no such option: --python") == std::string::npos) {
      r = via;
    } else {
      r = run_check(runner, {vpy, "-m", "ensurepip", "-q"}, work_dir, clean_env, log,
                    std::chrono::seconds(300));
      if (r.ok)
        r = run_check(runner,
                      {vpy, "-m", "pip", "install", "--no-deps", "--no-index", "--force-reinstall",
                       "-q", wheel},
                      work_dir, clean_env, log, std::chrono::seconds(600));
    }
  }
  return r;
}

// 6. Install into a clean venv (torch visible, nothing else) and import.
bool package_tests_run(const ExtensionBuildOptions& o, const ExtensionBuildState& s) {
  bool run_tests = o.tests == ExtensionBuildOptions::Tests::always ||
                   (o.tests == ExtensionBuildOptions::Tests::automatic &&
                    s.spec.kind == source::SourceKind::example);
  return run_tests && has_python_tests(s.source_dir);
}

constexpr std::string_view k_smoke_marker = "tailor: import passed; the smoke test follows";

namespace {

// What to import: the recipe's name for it, else what the built wheel itself holds at its
// top level (top_level.txt, its packages and extension modules), never a name guessed
// from the distribution's (FooBar's module may be foobar).
std::vector<std::string> names_to_import(const ExtensionBuildState& s) {
  if (!s.recipe->import_name.empty() && outputs::is_python_identifier(s.recipe->import_name))
    return {s.recipe->import_name};
  if (auto names = outputs::wheel_top_level_names(s.wheel); names && !names->empty())
    return outputs::import_names_to_check(*names, s.package);
  return {};
}

// The recipe's smoke test as the plan rendered it with the name it guessed: rendered
// again with the wheel's own.
void rerender_smoke_test(ExtensionBuildState& s, const std::string& import_name) {
  if (!s.recipe->import_name.empty() || s.recipe->smoke_test.empty()) return;
  auto render = [&](const std::string& name) {
    std::string smoke = s.recipe->smoke_test;
    for (size_t at = smoke.find("{import_name}"); at != std::string::npos;
         at = smoke.find("{import_name}", at + name.size()))
      smoke.replace(at, 13, name);
    return smoke;
  };
  if (s.build_plan.smoke_test == render(s.build_plan.import_name))
    s.build_plan.smoke_test = render(import_name);
}

// A run-time dependency this environment lacks (transformers for mamba-ssm, say), named by
// a failed import's output. Never a module the package itself names (its compiled module
// missing from the wheel is a broken build): its own prefix, or a name in the recipe's
// smoke test.
std::optional<std::string> missing_dependency(const std::string& output,
                                              const std::vector<std::string>& import_names,
                                              const ExtensionBuildState& s) {
  auto missing = missing_module_in(output);
  if (missing && (std::any_of(import_names.begin(), import_names.end(),
                              [&](const std::string& n) { return missing->starts_with(n); }) ||
                  contains_word(s.build_plan.smoke_test, missing->substr(0, missing->find('.')))))
    return std::nullopt;
  return missing;
}

/// One import check's venv, its log and the import it tries.
struct ImportCheck {
  CommandRunner& runner;
  std::ofstream& log;
  std::string venv;
  std::string python;       ///< the venv's
  std::string import_name;  ///< "a, b": every name imported
};

// With a dependency missing, the wheel's compiled modules loaded directly instead: true
// (checks recorded) when they load, else false with their output added to `output`.
bool compiled_modules_load(const ExtensionBuildOptions& o, ExtensionBuildState& s,
                           const ImportCheck& c, const std::string& missing, std::string& output) {
  outputs::BuildReport& rep = s.result.report;
  // A module the recipe knows the package imports without declaring it is as good as
  // declared (torch-sparse's torch_scatter).
  const std::vector<std::string>& known = s.recipe->undeclared_requires;
  const bool undeclared = std::any_of(known.begin(), known.end(), [&](const std::string& k) {
    return missing.substr(0, missing.find('.')) == k.substr(0, k.find('.'));
  });
  std::vector<std::string> argv = {
      c.python, "-c", data::embedded_program("build/wheel_native_import.py"), s.wheel, missing};
  if (undeclared) argv.push_back("--recipe-knows");
  CheckRun native =
      run_check(c.runner, argv, c.venv, clean_venv_env(), c.log, std::chrono::seconds(300));
  if (!native.ok) {
    output += "\n" + native.output;
    return false;
  }
  std::vector<std::string> loaded;
  for (const auto& line : split_any(native.output, "\n"))
    if (line.starts_with("loaded ")) loaded.push_back(std::string(trim(line.substr(7))));
  s.missing_dependency = missing;
  rep.checks.push_back(
      {"import", outputs::CheckStatus::skipped,
       fmt::format("import {} needs {}, which this environment lacks (a run-time dependency{}; "
                   "install it to use the package)",
                   c.import_name, missing,
                   undeclared
                       ? fmt::format(" that {} does not declare in its metadata", s.recipe->name)
                       : "")});
  rep.checks.push_back(
      {"native-import",
       loaded.empty() ? outputs::CheckStatus::skipped : outputs::CheckStatus::passed,
       loaded.empty() ? std::string("the wheel has no compiled Python modules to load on their own")
                      : fmt::format("{} compiled module{} load{}: {}", loaded.size(),
                                    loaded.size() == 1 ? "" : "s", loaded.size() == 1 ? "s" : "",
                                    join(loaded, ", "))});
  status(o, fmt::format("import test: {} is not installed here (a run-time dependency of {}); "
                        "the compiled modules load",
                        missing, c.import_name));
  return true;
}

// The import itself, run from the venv folder so the source tree's own package folder
// cannot shadow the installed one. With a GPU and no package tests to run first, the
// recipe's smoke test runs in the same interpreter after the import, behind a marker line
// that tells the two apart.
CheckRun run_import(const ExtensionBuildOptions& o, ExtensionBuildState& s, const ImportCheck& c,
                    const std::string& first_name) {
  const bool fold_smoke =
      !s.host.gpus.empty() && !s.build_plan.smoke_test.empty() && !package_tests_run(o, s);
  // Then every extension module of the wheel by its own name
  // (data/build/import_extension_modules.py, the wheel as its argument).
  std::string code =
      fmt::format("import torch, {}; print({}.__file__)\n{}", c.import_name, first_name,
                  data::embedded_program("build/import_extension_modules.py"));
  if (fold_smoke)
    code += fmt::format("\nprint('{}', flush=True)\n{}", k_smoke_marker, s.build_plan.smoke_test);
  CheckRun r = run_check(c.runner, {c.python, "-c", code, s.wheel}, c.venv, clean_venv_env(), c.log,
                         std::chrono::seconds(fold_smoke ? 900 : 300));
  if (fold_smoke) {
    size_t at = r.output.find(k_smoke_marker);
    if (r.ok || at != std::string::npos) {
      s.smoke_run = std::make_pair(r.ok, r.output);
      r.ok = true;  // the import itself passed
    }
  }
  return r;
}

}  // namespace

builder::StepResult import_check(const ExtensionBuildOptions& o, ExtensionBuildContext& ctx,
                                 ExtensionBuildState& s) {
  outputs::BuildReport& rep = s.result.report;
  std::ofstream log(rep.log_path, std::ios::app);
  std::error_code ec;
  fs::path venv = fs::path(s.work_dir) / "venv";
  fs::remove_all(venv, ec);
  s.venv = venv.string();
  const std::vector<std::string> import_names = names_to_import(s);
  if (import_names.empty()) {
    rep.checks.push_back({"import", outputs::CheckStatus::failed,
                          "the wheel has no top-level Python package or module to import"});
    return stop(builder::BuildStatus::check_failed,
                "the built wheel holds nothing to import (no top-level package, module "
                "or extension module)");
  }
  rerender_smoke_test(s, import_names.front());
  if (s.cross_platform) return cross_import_check(o, ctx, s, join(import_names, ", "));
  const ImportCheck c{ctx.runner, log, venv.string(), (venv / "bin" / "python").string(),
                      join(import_names, ", ")};
  s.venv_python = c.python;
  status(o, fmt::format("==> import test in a clean venv ({})", venv.string()));
  CheckRun r =
      install_in_clean_venv(ctx.runner, rep.python, venv.string(), s.wheel, s.work_dir, log);
  if (r.ok) r = run_import(o, s, c, import_names.front());
  if (!r.ok) {
    // A dependency this environment lacks is not the build's fault: say so, and load the
    // wheel's compiled modules directly instead.
    if (auto missing = missing_dependency(r.output, import_names, s))
      if (compiled_modules_load(o, s, c, *missing, r.output)) return std::nullopt;
    rep.checks.push_back({"import", outputs::CheckStatus::failed, "import " + c.import_name});
    s.result.check_output = tail_lines(r.output, 30);
    return stop(builder::BuildStatus::check_failed,
                fmt::format("the built wheel does not import ({})", c.import_name));
  }
  rep.checks.push_back(
      {"import", outputs::CheckStatus::passed, "import " + c.import_name + " in a fresh venv"});
  return std::nullopt;
}

// 7. Tests: the package's pytest suite (the example's by default), then the GPU smoke test.
builder::StepResult run_package_tests(const ExtensionBuildOptions& o, ExtensionBuildContext& ctx,
                                      ExtensionBuildState& s) {
  outputs::BuildReport& rep = s.result.report;
  if (s.cross_platform) {
    // The package's tests and the GPU smoke test need the target machine.
    rep.checks.push_back({"tests", outputs::CheckStatus::skipped,
                          fmt::format("a cross build for {}: the package's tests and the GPU "
                                      "smoke test run on an {} machine",
                                      s.cross_platform->name, s.cross_platform->name)});
    return std::nullopt;
  }
  CommandRunner& runner = ctx.runner;
  std::ofstream log(rep.log_path, std::ios::app);
  const auto clean_env = clean_venv_env();
  const std::string& vpy = s.venv_python;
  const std::string& src = s.source_dir;
  CheckRun r{true, ""};
  bool gpu = !s.host.gpus.empty();
  bool tests_ran_on_gpu = false;
  if (package_tests_run(o, s)) {
    status(o, gpu ? "==> running the package's tests (CPU and GPU)"
                  : "==> running the package's tests (CPU; GPU tests skip: no GPU)");
    bool have_pytest = run_check(runner, {vpy, "-c", "import pytest"}, s.venv, clean_env, log,
                                 std::chrono::seconds(60))
                           .ok;
    if (have_pytest) {
      r = run_check(runner,
                    {vpy, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                     (fs::path(src) / "tests").string()},
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
      rep.checks.push_back(
          {gpu ? "tests" : "cpu-tests", outputs::CheckStatus::failed, std::string(trim(last))});
      s.result.check_output = tail_lines(r.output, 40);
      return stop(builder::BuildStatus::check_failed,
                  "the package's tests failed against the built wheel");
    }
    rep.checks.push_back(
        {gpu ? "tests" : "cpu-tests", outputs::CheckStatus::passed, std::string(trim(last))});
    tests_ran_on_gpu = gpu;
  } else if (o.tests == ExtensionBuildOptions::Tests::always) {
    rep.checks.push_back(
        {"tests", outputs::CheckStatus::skipped, "no tests/test_*.py in the source"});
  }
  if (!gpu) {
    rep.checks.push_back({"gpu-smoke", outputs::CheckStatus::skipped, "no GPU"});
    status(o, "GPU smoke test: skipped (no GPU)");
  } else if (tests_ran_on_gpu) {
    rep.checks.push_back(
        {"gpu-smoke", outputs::CheckStatus::passed, "the package's GPU tests ran"});
  } else if (!s.build_plan.smoke_test.empty()) {
    if (s.smoke_run) {
      status(o, "==> GPU smoke test (ran with the import test)");
      r = CheckRun{s.smoke_run->first, s.smoke_run->second};
    } else {
      status(o, "==> GPU smoke test");
      r = run_check(runner, {vpy, "-c", s.build_plan.smoke_test}, s.venv, clean_env, log,
                    std::chrono::seconds(600));
    }
    const auto missing = r.ok ? std::nullopt : missing_module_in(r.output);
    if (missing && !s.missing_dependency.empty() && *missing == s.missing_dependency) {
      rep.checks.push_back(
          {"gpu-smoke", outputs::CheckStatus::skipped,
           fmt::format("the recipe's smoke test needs {}, which this environment lacks",
                       *missing)});
    } else if (!r.ok) {
      rep.checks.push_back({"gpu-smoke", outputs::CheckStatus::failed, "the recipe's smoke test"});
      s.result.check_output = tail_lines(r.output, 30);
      return stop(builder::BuildStatus::check_failed, "the GPU smoke test failed");
    } else {
      rep.checks.push_back({"gpu-smoke", outputs::CheckStatus::passed, "the recipe's smoke test"});
    }
  } else {
    rep.checks.push_back(
        {"gpu-smoke", outputs::CheckStatus::skipped, "the recipe has no smoke test"});
  }
  return std::nullopt;
}

ExtensionBuildResult build_extension(const ExtensionBuildOptions& o, ExtensionBuildContext& ctx) {
  ExtensionBuildState s;
  s.result.report.tool_version = std::string(tailor_version());
  s.result.report.started_at = utc_now_iso8601();
  s.started = std::chrono::steady_clock::now();
  auto stopped = [&](builder::StepStop st) {
    s.result.status = st.status;
    s.result.message = std::move(st.message);
    s.result.report.ok = false;
    s.result.report.duration_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - s.started).count();
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
  using Step = builder::StepResult (*)(const ExtensionBuildOptions&, ExtensionBuildContext&,
                                       ExtensionBuildState&);
  const std::pair<const char*, Step> steps[] = {
      {"toolchain", check_toolchain}, {"prepare", prepare_build}, {"build", run_build},
      {"verify", verify_wheel},       {"import", import_check},   {"tests", run_package_tests},
      {"publish", publish_outputs}};
  // A signal that came while a step ran (the toolchain's test link, the source copy) ends
  // the run there: nothing after it starts.
  builder::StepResult st = builder::run_step_list(
      steps, [&](const std::pair<const char*, Step>& step) { return step.second(o, ctx, s); },
      [&](const std::pair<const char*, Step>& step) { phase_done(step.first); },
      builder::StepStop{builder::BuildStatus::build_failed, "interrupted"});
  if (st) return stopped(std::move(*st));
  return std::move(s.result);
}

ExtensionBuildResult build_extension(const ExtensionBuildOptions& o) {
  SystemCommandRunner runner;
  ExtensionBuildContext ctx = ExtensionBuildContext::system(runner);
  return build_extension(o, ctx);
}

}  // namespace tailor::workflow
