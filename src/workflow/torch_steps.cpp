#include "workflow/torch_steps.h"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cache/cache_ledger.h"
#include "cuda/compatibility.h"
#include "data/data_files.h"
#include "data/toml_document.h"
#include "diagnose/diagnosis.h"
#include "executor/publish.h"
#include "executor/report_page.h"
#include "executor/wheel_normaliser.h"
#include "inspect/inspect_report.h"
#include "plan/torch_plan_render.h"
#include "util/files.h"
#include "util/interrupt.h"
#include "util/strings.h"

namespace fs = std::filesystem;

namespace tailor::workflow {
using namespace tailor::executor;

namespace {

// The programs a torch build runs in an interpreter: data/build/installed_versions.py
// (versions of the named distributions), data/build/torch_import_check.py (the torch a
// fresh venv imports) and data/build/torch_smoke_test.py (a GPU smoke test).
std::string embedded_program(std::string_view path) {
  auto text = data::file(path);
  if (!text) throw data::DataError(text.error().message);
  return std::string(*text);
}

TorchStepResult stop(int code, std::string message) { return TorchStop{code, std::move(message)}; }

/// Whether a --source tree is there and which of its third_party submodules are empty.
void add_source_facts(const plan::TorchPlan& p, plan::DoctorFacts& facts) {
  std::error_code ec;
  if (!p.variant.source_dir && !fs::exists(p.layout.source_dir, ec)) return;
  facts.source_checked = true;
  facts.source_exists = fs::is_directory(p.layout.source_dir, ec);
  fs::path third = fs::path(p.layout.source_dir) / "third_party";
  if (fs::is_directory(third, ec))
    for (const auto& e : fs::directory_iterator(third, ec))
      if (e.is_directory(ec) && fs::is_empty(e.path(), ec)) facts.empty_submodules.push_back("third_party/" + e.path().filename().string());
  std::sort(facts.empty_submodules.begin(), facts.empty_submodules.end());
}

std::string newest_wheel(const std::string& dist) {
  std::string best;
  fs::file_time_type best_time{};
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dist, ec)) {
    if (e.path().extension() != ".whl") continue;
    auto t = e.last_write_time(ec);
    if (best.empty() || t > best_time) best = e.path().string(), best_time = t;
  }
  return best;
}

std::string release_notes(const plan::TorchPlan& p, const std::string& wheel, const TargetVerification& v,
                          const std::string& manylinux, const std::vector<std::string>& packages) {
  std::string o = fmt::format("# {}\n\n", wheel);
  o += fmt::format("PyTorch {} built by tailor for {}.\n\n", p.torch_version, p.platform);
  o += fmt::format("- CUDA: {}\n", p.cuda ? p.cuda_text() : "none (CPU-only)");
  o += fmt::format("- GPU targets (verified in the binaries): {}\n", p.cuda ? join(v.expected, ", ") : "none");
  o += fmt::format("- CPU target: {}\n", p.cpu_target.empty() ? "compiler default" : p.cpu_target + " (" + join(p.cpu_flags, " ") + ")");
  o += fmt::format("- Python: {}\n- Platform tag: {} (what the libraries need)\n", p.python_version, manylinux);
  std::vector<std::string> on;
  for (const auto& [f, enabled] : p.features)
    if (enabled) on.push_back(f);
  o += fmt::format("- Features: {}\n- BLAS: {}, build type {}\n\n", join(on, ", "), p.blas, p.build_type);
  o += fmt::format("Install:\n\n    pip install {}\n\n", wheel);
  if (!packages.empty())
    o += fmt::format("The libraries link these system packages at run time (see Dockerfile.runtime):\n{}\n",
                     [&] { std::string s; for (const auto& pk : packages) s += "    " + pk + "\n"; return s; }());
  return o;
}

}  // namespace

plan::DoctorFacts gather_doctor_facts(const plan::TorchPlan& p, CommandRunner& runner) {
  plan::DoctorFacts facts;
  std::vector<std::string> argv = {p.python, "-c", embedded_program("build/installed_versions.py")};
  for (const auto& r : p.requirements) argv.push_back(plan::parse_requirement(r).name);
  CommandSpec spec;
  spec.argv = argv;
  spec.timeout = std::chrono::seconds(30);
  CommandResult res = runner.run(spec);
  if (res.ok()) {
    try {
      auto j = nlohmann::json::parse(res.out);
      for (auto it = j.begin(); it != j.end(); ++it)
        facts.python_packages[it.key()] = it->is_null() ? std::nullopt : std::optional<std::string>(it->get<std::string>());
      facts.python_checked = true;
    } catch (const std::exception&) {
    }
  }
  add_source_facts(p, facts);
  return facts;
}

TorchBuildContext TorchBuildContext::system(CommandRunner& runner) {
  TorchBuildContext ctx{runner};
  ctx.environment = process_environment();
  ctx.check_storage = [](const cache::CacheSettings& settings) {
    return cache::check_shared_storage(settings, std::chrono::milliseconds(3000));
  };
  return ctx;
}

namespace torch_steps {

// 1. The plan: every decision, every problem at once.
TorchStepResult resolve_plan(const TorchBuildOptions& o, TorchBuildContext& ctx, TorchBuildState& s) {
  // [cache] of the config, then TAILOR_CACHE / TAILOR_CACHE_URL, then --cache-url.
  auto settings = cache::apply_cache_environment(o.cache_settings, ctx.environment);
  if (!settings) return stop(2, settings.error().message);
  if (!o.cache_url.empty())
    if (auto ok = cache::set_cache_url(*settings, o.cache_url, "--cache-url"); !ok) return stop(2, ok.error().message);
  s.cache_settings = *settings;
  plan::ResolveOptions ropts = s.resolve;
  ropts.purpose = plan::PlanPurpose::build_here;
  ropts.cache_settings = s.cache_settings;
  ropts.cache = o.cache;
  ropts.environment = ctx.environment;
  s.plan = plan::resolve_torch_plan(s.variant, s.host, ropts);
  if (s.plan.has_errors()) {
    std::fputs(plan::render_problems(s.plan).c_str(), ctx.err);
    return stop(s.plan.exit_code(), "the variant cannot be built here (problems listed above)");
  }
  return std::nullopt;
}

// 2. One build at a time per work folder and output folder (executor/folder_lock.h).
TorchStepResult lock_folders(const TorchBuildOptions& o, TorchBuildContext& ctx, TorchBuildState& s) {
  std::error_code ec;
  fs::create_directories(s.plan.layout.work_dir, ec);
  if (ec) return stop(2, s.plan.layout.work_dir + ": cannot create the work folder: " + ec.message());
  s.work = fs::absolute(s.plan.layout.work_dir).string();
  auto work_lock = FolderLock::acquire(s.work, FolderLock::Place::inside, o.wait_for_lock, ctx.err);
  if (!work_lock) return stop(1, work_lock.error().message);
  s.work_lock.emplace(std::move(*work_lock));
  auto out_lock = FolderLock::acquire(o.out_dir, FolderLock::Place::beside, o.wait_for_lock, ctx.err);
  if (!out_lock) return stop(1, out_lock.error().message);
  s.out_lock.emplace(std::move(*out_lock));
  return std::nullopt;
}

// 3. The source and the commands that run on it.
TorchStepResult check_source(const TorchBuildOptions& o, TorchBuildContext& ctx, TorchBuildState& s) {
  plan::TorchPlan& p = s.plan;
  auto epoch_var = ctx.environment.find("SOURCE_DATE_EPOCH");
  auto epoch_env = source_date_epoch_from_env(epoch_var == ctx.environment.end() ? nullptr : epoch_var->second.c_str());
  if (!epoch_env) return stop(2, epoch_env.error().message);
  s.epoch_override = *epoch_env;
  if (p.variant.source_dir) {
    plan::DoctorFacts facts;
    add_source_facts(p, facts);
    if (!facts.source_exists) return stop(2, p.layout.source_dir + ": no such source tree");
    if (!facts.empty_submodules.empty())
      return stop(1, fmt::format("{}: empty submodules ({}); run git submodule update --init --recursive",
                                 p.layout.source_dir, join(facts.empty_submodules, ", ")));
  }
  // SOURCE_DATE_EPOCH for the build when the source is already here (else after the clone).
  std::error_code ec;
  if (fs::exists(p.layout.source_dir, ec)) {
    auto identity = identify_tree(p.layout.source_dir, ctx.runner, s.epoch_override);
    if (!identity) return stop(1, "identifying the source: " + identity.error().message);
    s.identity = std::move(*identity);
    p.env["SOURCE_DATE_EPOCH"] = std::to_string(s.identity->source_date_epoch);
  }
  auto build_env = p.env;
  if (o.configure_only) build_env["CMAKE_ONLY"] = "1";
  const std::string venv_python = p.layout.venv_dir + "/bin/python";
  s.steps.clear();
  for (plan::Step& st : plan_steps(p, build_env, ctx.environment)) {
    if (o.no_venv && (st.title == "create venv" || st.title == "install build requirements")) continue;
    if (st.title == "clone source" && fs::exists(p.layout.source_dir + "/.git", ec)) continue;  // resumable
    if (o.no_venv) std::replace(st.argv.begin(), st.argv.end(), venv_python, p.python);
    s.steps.push_back(std::move(st));
  }
  return std::nullopt;
}

// 4. The compiler cache the plan chose: its storage must answer.
TorchStepResult check_cache(const TorchBuildOptions&, TorchBuildContext& ctx, TorchBuildState& s) {
  plan::TorchPlan& p = s.plan;
  if (p.cache.used() && s.cache_settings.shared() && ctx.check_storage) {
    // A shared storage (Redis or S3) that nothing answers at: build without the cache
    // rather than not at all (sccache would refuse to start its server). One that answers
    // and refuses is a setting to fix: stop, rather than build uncached every time.
    auto check = ctx.check_storage(s.cache_settings);
    if (!check)
      return stop(2, fmt::format("compiler cache {}: {} (fix the storage's settings, or build with --cache none)",
                                 cache::describe_cache_storage(s.cache_settings), check.error().message));
    if (!check->reachable) {
      std::fprintf(ctx.err, "tailor: warning: compiler cache %s: %s; building without a compiler cache\n",
                   cache::describe_cache_storage(s.cache_settings).c_str(), check->detail.c_str());
      plan::set_torch_cache(p, {});
    }
  }
  return std::nullopt;
}

// 5. The plan's commands.
TorchStepResult run_build(const TorchBuildOptions& o, TorchBuildContext& ctx, TorchBuildState& s) {
  plan::TorchPlan& p = s.plan;
  // sccache: the build's own server, so its statistics are this build's alone (not for a
  // configure that compiles nothing worth counting).
  std::map<std::string, std::string> cache_env = p.cache.env;
  std::unique_ptr<cache::SccacheServer> sccache_server;
  if (p.cache.tool == cache::CacheTool::sccache && !o.configure_only) {
    auto server = cache::SccacheServer::start(p.cache.executable, p.cache.env, ctx.runner);
    if (!server) return stop(1, fmt::format("compiler cache ({}): {}", p.cache.storage, server.error().message));
    sccache_server = std::move(*server);
    for (const auto& [k, v] : sccache_server->env()) cache_env[k] = v;
  }
  for (auto& st : s.steps)
    if (st.uses_plan_env)
      for (const auto& [k, v] : cache_env) st.env[k] = v;
  auto run_log = start_run_log(s.work);
  if (!run_log) return stop(1, run_log.error().message);
  s.log_path = *run_log;
  std::unique_ptr<ProgressDisplay> own_display;
  if (!ctx.display) own_display = make_progress_display(default_display_style(ctx.out), ctx.out);
  BuildRunner build_runner(ctx.runner, ctx.display ? *ctx.display : *own_display, s.log_path);
  std::fprintf(ctx.out, "Building %s (%s), %d jobs; log: %s\n", p.wheel_name.c_str(), join(p.targets.names(), " ").c_str(),
               p.jobs, s.log_path.c_str());
  std::fflush(ctx.out);
  // The job timeline: what this run appends to the source tree's build/.ninja_log.
  const std::string ninja_root = p.layout.source_dir + "/build";
  const auto ninja_logs_before = ninja_log_sizes(ninja_root);
  auto outcome = build_runner.run(s.steps);
  s.ninja_jobs = collect_build_jobs(ninja_root, ninja_logs_before);
  if (sccache_server && !interrupt_signal()) {
    if (auto st = sccache_server->stats()) {
      std::fprintf(ctx.out, "compiler cache: sccache (%s)\n%s", p.cache.storage.c_str(), cache::render_cache_stats(*st).c_str());
      cache::record_cache_use("sccache", *st);
    }
  }
  if (sccache_server) sccache_server->stop();
  if (!outcome) return stop(1, outcome.error().message);
  s.build_duration = outcome->duration;
  if (outcome->interrupted || interrupt_signal() != 0) return stop(1, "interrupted");
  if (!outcome->ok()) {
    std::string log = tailor::read_file(s.log_path).value_or("");
    if (auto block = diagnose::first_error_block(log)) {
      std::fprintf(ctx.err, "First error (log lines %zu-%zu):\n", block->first_line, block->last_line);
      for (const auto& l : block->lines) std::fprintf(ctx.err, "  %s\n", l.c_str());
    }
    for (const auto& d : diagnose::diagnose_log(log))
      std::fprintf(ctx.err, "diagnosis [%s]: %s\n  fix: %s\n", d.pattern_id.c_str(), d.cause.c_str(), d.fix.c_str());
    return stop(1, outcome->steps.empty() ? "no build step ran; full log: " + s.log_path
                                          : fmt::format("step '{}' failed; full log: {}", outcome->steps.back().title, s.log_path));
  }
  if (o.configure_only) {
    std::fprintf(ctx.out, "configure-only: stopped after CMake configure (CMAKE_ONLY=1)\n");
    return stop(0, "");
  }
  return std::nullopt;
}

// 6. The built wheel, verified and renamed.
TorchStepResult verify_wheel(const TorchBuildOptions&, TorchBuildContext& ctx, TorchBuildState& s) {
  const plan::TorchPlan& p = s.plan;
  s.built = newest_wheel(p.layout.source_dir + "/dist");
  if (s.built.empty()) return stop(1, "the build produced no wheel in " + p.layout.source_dir + "/dist");
  auto report = inspect::inspect_paths({s.built});
  if (!report || report->wheels.empty())
    return stop(1, "cannot inspect " + s.built + ": " + (report ? "no wheel" : report.error().message));
  const inspect::WheelReport& wr = report->wheels.front();
  if (p.cuda) {
    auto checked = verify_wheel_targets(s.built, p.targets);
    if (!checked) return stop(1, checked.error().message);
    s.verification = *checked;
    bool has_torch_cuda = std::any_of(wr.libraries.begin(), wr.libraries.end(), [](const auto& l) {
      return l.path.find("libtorch_cuda.so") != std::string::npos && l.has_device_code;
    });
    if (!has_torch_cuda) return stop(1, "the wheel has no libtorch_cuda.so with device code");
    if (!s.verification.ok())
      return stop(1, "the wheel does not carry exactly the requested targets: " + s.verification.describe_problems());
    std::fprintf(ctx.out, "targets verified: %s\n", join(s.verification.expected, " ").c_str());
  }
  const std::string& needed = s.manylinux_needed = wr.manylinux_needed;  // "manylinux_2_35_aarch64" or "linux_x86_64"
  std::string wanted = "manylinux_" + p.manylinux + "_" + p.platform;
  if (needed.rfind("manylinux_", 0) != 0)
    return stop(1, fmt::format("the libraries need {}: not a manylinux wheel ({})", needed, join(wr.manylinux_limiting, ", ")));
  if (plan::compare_versions(needed.substr(10, needed.find('_', 12) - 10), p.manylinux) > 0 && p.variant.manylinux)
    return stop(1, fmt::format("the libraries need {} but {} was asked", needed, wanted));
  // What the runtime image needs: DT_NEEDED of every library, minus those in the wheel.
  s.needed_sonames.clear();
  for (const auto& lib : wr.libraries)
    for (const auto& n : lib.needed_libraries)
      if (n.kind != inspect::NeededKind::bundled && n.kind != inspect::NeededKind::cuda_driver) s.needed_sonames.push_back(n.soname);

  // Official-style name: torch-<version>-cpXY-cpXY-<tag the libraries need>.whl.
  std::string py_tag = "cp" + p.python_version;
  py_tag.erase(std::remove(py_tag.begin(), py_tag.end(), '.'), py_tag.end());
  std::string tag = fmt::format("{}-{}-{}", py_tag, py_tag, needed);
  s.wheel_name = fmt::format("torch-{}-{}.whl", p.wheel_version, tag);
  s.renamed = s.work + "/" + s.wheel_name;
  if (!s.identity) {
    auto identity = identify_tree(p.layout.source_dir, ctx.runner, s.epoch_override);
    if (!identity) return stop(1, "identifying the source: " + identity.error().message);
    s.identity = std::move(*identity);
  }
  // Retagged and normalised in one deterministic rewrite (WHEEL's Tag lines, RECORD, the
  // libraries' search paths without folders of the build machine).
  auto n = normalise_wheel(s.built, {s.identity->source_date_epoch,
                                     provenance_file_text(make_torch_provenance(p, s.host, *s.identity, "0.1.0")), tag,
                                     s.renamed});
  if (!n) return stop(1, "renaming the wheel failed: " + n.error().message);
  for (const auto& r : n->search_paths)
    std::fprintf(ctx.out, "search path: %s: removed %s %s (not $ORIGIN-relative: a folder of the build machine)%s\n", r.member.c_str(), r.tag.c_str(),
                 join(r.removed, ":").c_str(), r.after.empty() ? "" : ("; kept " + r.after).c_str());
  auto recheck = inspect::inspect_paths({s.renamed});
  if (!recheck || recheck->wheels.empty() || !recheck->wheels.front().record.passed() || !recheck->wheels.front().tags_consistent)
    return stop(1, "the renamed wheel's RECORD or tags do not check out");
  return std::nullopt;
}

// 7. Import in a clean venv: only the new wheel (system site-packages supply its deps).
TorchStepResult import_check(const TorchBuildOptions&, TorchBuildContext& ctx, TorchBuildState& s) {
  const plan::TorchPlan& p = s.plan;
  std::error_code ec;
  s.venv = s.work + "/verify-venv";
  fs::remove_all(s.venv, ec);
  CommandSpec mk;
  mk.argv = {p.python, "-m", "venv", "--system-site-packages", s.venv};
  mk.timeout = std::chrono::minutes(5);
  CommandSpec inst;
  inst.argv = {s.venv + "/bin/python", "-m", "pip", "install", "--no-deps", "--force-reinstall", "--no-index", s.renamed};
  inst.timeout = std::chrono::minutes(10);
  CommandSpec imp;
  imp.argv = {s.venv + "/bin/python", "-c", embedded_program("build/torch_import_check.py")};
  imp.timeout = std::chrono::minutes(2);
  imp.cwd = s.work;
  for (CommandSpec* spec : {&mk, &inst, &imp}) {
    auto res = ctx.runner.run(*spec);
    if (!res.ok()) return stop(1, fmt::format("import check: `{}` failed: {}{}", join(spec->argv, " "), res.err, res.out));
    if (spec == &imp) s.import_json = res.out;
  }
  try {
    auto j = nlohmann::json::parse(s.import_json);
    std::string file = j.value("file", "");
    if (file.rfind(s.venv, 0) != 0) return stop(1, "import check: torch came from " + file + ", not the new wheel");
    std::fprintf(ctx.out, "import ok: torch %s, arch list %s\n", j.value("version", "").c_str(), j["arch_list"].dump().c_str());
    if (p.cuda) {
      std::vector<std::string> arch = j["arch_list"].get<std::vector<std::string>>();
      for (const auto& t : p.targets.targets)
        if (t.kind == cuda::TargetKind::sass && std::find(arch.begin(), arch.end(), t.name()) == arch.end())
          return stop(1, "torch.cuda.get_arch_list() lacks " + t.name() + ": " + j["arch_list"].dump());
    }
  } catch (const std::exception& e) {
    return stop(1, std::string("import check: unreadable output: ") + e.what());
  }
  return std::nullopt;
}

// 8. The GPU smoke test, only on a GPU the build targets: a T4G build verified on an H100
// host would fail for the right reason ("no kernel image"), which says nothing of the wheel.
TorchStepResult smoke_test(const TorchBuildOptions&, TorchBuildContext& ctx, TorchBuildState& s) {
  const plan::TorchPlan& p = s.plan;
  const probe::HostGpu* covered = nullptr;
  for (const auto& g : s.host.gpus) {
    const auto& cc = g.compute_capability;
    if (cc && cuda::coverage_on(p.targets, *cc).mode != cuda::RunMode::none) {
      covered = &g;
      break;
    }
  }
  s.smoke = "skipped (no GPU)";
  if (p.cuda && !s.host.gpus.empty() && !covered) {
    const probe::HostGpu& first = s.host.gpus.front();
    s.smoke = fmt::format("skipped ({} (CC {}) is not among the targets)", first.name,
                          first.compute_capability ? first.compute_capability->str() : "?");
  }
  if (p.cuda && covered) {
    CommandSpec spec;
    spec.argv = {s.venv + "/bin/python", "-c", embedded_program("build/torch_smoke_test.py")};
    spec.timeout = std::chrono::minutes(5);
    spec.cwd = s.work;
    auto res = ctx.runner.run(spec);
    if (!res.ok()) return stop(1, "GPU smoke test failed: " + res.err + res.out);
    s.smoke = "ok";
  }
  std::fprintf(ctx.out, "GPU smoke test: %s\n", s.smoke.c_str());
  return std::nullopt;
}

// 9. Publish everything together; an interrupted run publishes nothing.
TorchStepResult publish(const TorchBuildOptions& o, TorchBuildContext& ctx, TorchBuildState& s) {
  const plan::TorchPlan& p = s.plan;
  std::vector<std::string> packages = runtime_packages_for(s.needed_sonames, p.cuda_version);
  std::error_code ec;
  nlohmann::json rep;
  rep["wheel"] = s.wheel_name;
  rep["plan"] = plan::plan_to_json(p);
  rep["targets_verified"] = s.verification.expected;
  rep["bytes_per_target"] = s.verification.bytes_per_target;
  rep["manylinux_needed"] = s.manylinux_needed;
  rep["import"] = nlohmann::json::parse(s.import_json, nullptr, false);
  rep["gpu_smoke_test"] = s.smoke;
  rep["runtime_packages"] = packages;
  rep["duration_s"] = std::chrono::duration<double>(s.build_duration).count();
  rep["wheel_bytes"] = fs::file_size(s.renamed, ec);
  if (!s.ninja_jobs.jobs.empty() || s.ninja_jobs.dropped)
    rep["run"] = {{"duration_s", rep["duration_s"]},
                  {"job_timeline", jobs_to_json(s.ninja_jobs.jobs)},
                  {"job_timeline_dropped", s.ninja_jobs.dropped}};
  auto staging = PublishStaging::create(o.out_dir);
  if (!staging) return stop(1, staging.error().message);
  const std::string& name = s.wheel_name;
  for (auto r : {staging->add_text(name + ".report.json", rep.dump(2) + "\n"),
                 staging->add_text(name + ".report.html", render_report_html(rep)),
                 staging->add_text(name + ".RELEASE_NOTES.md", release_notes(p, name, s.verification, s.manylinux_needed, packages)),
                 staging->add_text("Dockerfile.runtime", render_runtime_dockerfile(p, name, packages)),
                 staging->add_copy(s.log_path, name + ".build.log"), staging->add_copy(s.renamed, name)})
    if (!r) return stop(1, r.error().message);
  auto published = staging->commit({name});
  if (!published) return stop(1, published.error().message);
  s.result.wheel_path = (fs::path(o.out_dir) / name).string();
  s.result.published = *published;
  std::fprintf(ctx.out, "wheel: %s\n", s.result.wheel_path.c_str());
  return std::nullopt;
}

}  // namespace torch_steps

const std::vector<TorchStep>& torch_build_steps() {
  using namespace torch_steps;
  static const std::vector<TorchStep> steps = {
      {"plan", resolve_plan}, {"lock", lock_folders},     {"source", check_source}, {"cache", check_cache},
      {"build", run_build},   {"verify", verify_wheel},   {"import", import_check}, {"smoke", smoke_test},
      {"publish", publish}};
  return steps;
}

}  // namespace tailor::workflow
