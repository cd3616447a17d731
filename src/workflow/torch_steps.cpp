#include "workflow/torch_steps.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "builder/run_plan.h"
#include "cache/cache_ledger.h"
#include "cuda/compatibility.h"
#include "data/data_files.h"
#include "data/toml_document.h"
#include "diagnose/diagnosis.h"
#include "inspect/inspect_report.h"
#include "inspect/manylinux_policy.h"
#include "outputs/publish.h"
#include "outputs/report_page.h"
#include "outputs/wheel_normaliser.h"
#include "plan/torch_plan_render.h"
#include "source/source_clone.h"
#include "source/source_identity.h"
#include "util/files.h"
#include "util/interrupt.h"
#include "util/mapped_file.h"
#include "util/sha256.h"
#include "util/strings.h"
#include "util/version.h"
#include "workflow/build_prediction.h"
#include "workpath/fixed_path.h"

namespace fs = std::filesystem;

namespace tailor::workflow {

namespace {

// The programs a torch build runs in an interpreter: data/build/installed_versions.py
// (versions of the named distributions), data/build/torch_import_check.py (the torch a
// fresh venv imports) and data/build/torch_smoke_test.py (a GPU smoke test).
TorchStepResult stop(builder::BuildStatus status, std::string message) {
  return builder::StepStop{status, std::move(message)};
}

/// Whether a --source tree is there and which of its third_party submodules are empty.
void add_source_facts(const plan::TorchPlan& p, plan::DoctorFacts& facts) {
  std::error_code ec;
  if (!p.variant.source_dir && !fs::exists(p.layout.source_dir, ec)) return;
  facts.source_checked = true;
  facts.source_exists = fs::is_directory(p.layout.source_dir, ec);
  fs::path third = fs::path(p.layout.source_dir) / "third_party";
  // An empty folder whose library the plan takes from the system is no missing submodule.
  auto from_system = [&](const std::string& folder) {
    return std::any_of(p.system_libraries.begin(), p.system_libraries.end(),
                       [&](const plan::SystemLibraryUse& l) { return l.folder == folder; });
  };
  if (fs::is_directory(third, ec))
    for (const auto& e : fs::directory_iterator(third, ec))
      if (e.is_directory(ec) && fs::is_empty(e.path(), ec) &&
          !from_system("third_party/" + e.path().filename().string()))
        facts.empty_submodules.push_back("third_party/" + e.path().filename().string());
  std::sort(facts.empty_submodules.begin(), facts.empty_submodules.end());
}

/// The plan's system libraries this machine lacks, with the command that installs them.
plan::MissingSystemLibraries missing_here(const plan::TorchPlan& p) {
  return plan::missing_system_libraries(p.system_libraries, [](const std::string& path) {
    std::error_code ec;
    return fs::exists(path, ec);
  });
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

std::string release_notes(const plan::TorchPlan& p, const std::string& wheel,
                          const outputs::TargetVerification& v, const std::string& manylinux,
                          const std::vector<std::string>& packages) {
  std::string o = fmt::format("# {}\n\n", wheel);
  o += fmt::format("PyTorch {} built by tailor for {}.\n\n", p.torch_version, p.platform);
  o += fmt::format("- CUDA: {}\n", p.cuda ? p.cuda_text() : "none (CPU-only)");
  o += fmt::format("- GPU targets (verified in the binaries): {}\n",
                   p.cuda ? join(v.expected, ", ") : "none");
  o += fmt::format("- CPU target: {}\n", p.cpu_target.empty()
                                             ? "compiler default"
                                             : p.cpu_target + " (" + join(p.cpu_flags, " ") + ")");
  o += fmt::format("- Python: {}\n- Platform tag: {} (what the libraries need)\n", p.python_version,
                   manylinux);
  std::vector<std::string> on;
  for (const auto& [f, enabled] : p.features)
    if (enabled) on.push_back(f);
  o += fmt::format("- Features: {}\n- BLAS: {}, build type {}\n\n", join(on, ", "), p.blas,
                   p.build_type);
  o += fmt::format("Install:\n\n    pip install {}\n\n", wheel);
  if (!packages.empty())
    o += fmt::format(
        "The libraries link these system packages at run time (see Dockerfile.runtime):\n{}\n",
        [&] {
          std::string s;
          for (const auto& pk : packages) s += "    " + pk + "\n";
          return s;
        }());
  return o;
}

}  // namespace

plan::DoctorFacts gather_doctor_facts(const plan::TorchPlan& p, CommandRunner& runner) {
  plan::DoctorFacts facts;
  std::vector<std::string> argv = {p.python, "-c",
                                   data::embedded_program("build/installed_versions.py")};
  for (const auto& r : p.requirements) argv.push_back(plan::parse_requirement(r).name);
  CommandSpec spec;
  spec.argv = argv;
  spec.timeout = std::chrono::seconds(30);
  CommandResult res = runner.run(spec);
  if (res.ok()) {
    try {
      auto j = nlohmann::json::parse(res.out);
      for (auto it = j.begin(); it != j.end(); ++it)
        facts.python_packages[it.key()] =
            it->is_null() ? std::nullopt : std::optional<std::string>(it->get<std::string>());
      facts.python_checked = true;
    } catch (const std::exception&) {
    }
  }
  add_source_facts(p, facts);
  facts.system_missing = missing_here(p);
  return facts;
}

TorchBuildContext TorchBuildContext::system(CommandRunner& runner) {
  return TorchBuildContext{BuildContext::system(runner)};
}

namespace torch_steps {

// 1. The plan: every decision, every problem at once.
TorchStepResult resolve_plan(const TorchBuildOptions& o, TorchBuildContext& ctx,
                             TorchBuildState& s) {
  // [cache] of the config, then TAILOR_CACHE / TAILOR_CACHE_URL, then --cache-url.
  auto settings = cache::apply_cache_environment(o.cache_settings, ctx.environment);
  if (!settings) return stop(builder::BuildStatus::bad_input, settings.error().message);
  if (!o.cache_url.empty())
    if (auto ok = cache::set_cache_url(*settings, o.cache_url, "--cache-url"); !ok)
      return stop(builder::BuildStatus::bad_input, ok.error().message);
  s.cache_settings = *settings;
  plan::ResolveOptions ropts = s.resolve;
  ropts.purpose = plan::PlanPurpose::build_here;
  ropts.cache_settings = s.cache_settings;
  ropts.cache = o.cache;
  ropts.environment = ctx.environment;
  ropts.wait_for_lock = o.wait_for_lock;
  ropts.configure_only = o.configure_only;
  // The shared storage, asked once before the plan decides the cache (as for extensions).
  if (auto stopped =
          builder::settle_cache_storage(s.cache_settings, ropts.cache, ctx.session(s.report)))
    return stopped;
  s.plan = plan::resolve_torch_plan(s.variant, s.host, ropts);
  if (s.plan.has_errors()) {
    std::fputs(plan::render_problems(s.plan).c_str(), ctx.err);
    return stop(s.plan.exit_code() == 2 ? builder::BuildStatus::bad_input
                                        : builder::BuildStatus::preflight_failed,
                "the variant cannot be built here (problems listed above)");
  }
  return std::nullopt;
}

// 2. One build at a time per work folder and output folder (workpath/folder_lock.h).
TorchStepResult lock_folders(const TorchBuildOptions& o, TorchBuildContext& ctx,
                             TorchBuildState& s) {
  std::error_code ec;
  fs::create_directories(s.plan.layout.work_dir, ec);
  if (ec)
    return stop(builder::BuildStatus::bad_input,
                s.plan.layout.work_dir + ": cannot create the work folder: " + ec.message());
  s.work = fs::absolute(s.plan.layout.work_dir).string();
  auto work_lock = workpath::FolderLock::acquire(s.work, workpath::FolderLock::Place::inside,
                                                 o.wait_for_lock, ctx.err);
  if (!work_lock) return stop(builder::BuildStatus::build_failed, work_lock.error().message);
  s.work_lock.emplace(std::move(*work_lock));
  auto out_lock = workpath::FolderLock::acquire(o.out_dir, workpath::FolderLock::Place::beside,
                                                o.wait_for_lock, ctx.err);
  if (!out_lock) return stop(builder::BuildStatus::build_failed, out_lock.error().message);
  s.out_lock.emplace(std::move(*out_lock));
  return std::nullopt;
}

// 3. The source and the commands that run on it.
TorchStepResult check_source(const TorchBuildOptions& o, TorchBuildContext& ctx,
                             TorchBuildState& s) {
  plan::TorchPlan& p = s.plan;
  auto epoch_var = ctx.environment.find("SOURCE_DATE_EPOCH");
  auto epoch_env = source::source_date_epoch_from_env(
      epoch_var == ctx.environment.end() ? nullptr : epoch_var->second.c_str());
  if (!epoch_env) return stop(builder::BuildStatus::bad_input, epoch_env.error().message);
  s.epoch_override = *epoch_env;
  if (p.variant.source_dir) {
    plan::DoctorFacts facts;
    add_source_facts(p, facts);
    if (!facts.source_exists)
      return stop(builder::BuildStatus::bad_input, p.layout.source_dir + ": no such source tree");
    if (!facts.empty_submodules.empty())
      return stop(
          builder::BuildStatus::preflight_failed,
          fmt::format("{}: empty submodules ({}); run git submodule update --init --recursive",
                      p.layout.source_dir, join(facts.empty_submodules, ", ")));
  }
  // A library the plan takes from the system must be there before hours of building.
  if (auto lacking = missing_here(p); !lacking.missing.empty()) {
    std::vector<std::string> names;
    for (const auto& l : lacking.missing) names.push_back(l.name);
    return stop(builder::BuildStatus::preflight_failed,
                fmt::format("the build takes {} from the system, which lacks {}: {}",
                            p.system_libraries.size() == 1 ? "a library" : "libraries",
                            join(names, ", "), lacking.install_command));
  }
  // SOURCE_DATE_EPOCH and the reproducible nvcc and compiler flags for the build when the
  // source is already here (a clone: the epoch is known after it, for the wheel).
  std::error_code ec;
  if (fs::exists(p.layout.source_dir, ec)) {
    auto identity = source::identify_tree(p.layout.source_dir, ctx.runner, s.epoch_override);
    if (!identity)
      return stop(builder::BuildStatus::build_failed,
                  "identifying the source: " + identity.error().message);
    s.identity = std::move(*identity);
    p.run.reproducible =
        plan::Reproducibility{s.identity->source_date_epoch, p.layout.source_dir,
                              p.cache.tool != cache::CacheTool::sccache, p.cuda_version};
  }
  // PyTorch's setup.py stops after CMake on its own argument, --cmake-only (it reads no
  // CMAKE_ONLY variable: 2.6.0's, met on the real tree); a pip-wheel build gets the variable.
  if (o.configure_only) {
    p.env["CMAKE_ONLY"] = "1";
    for (plan::Step& st : p.steps)
      if (st.role == plan::StepRole::build && p.build_style == "setup_py" && st.argv.size() > 2 &&
          st.argv[1] == "setup.py")
        st.argv.insert(st.argv.begin() + 2, "--cmake-only");
  }
  const std::string venv_python = p.layout.venv_dir + "/bin/python";
  std::vector<plan::Step> kept;
  for (plan::Step& st : p.steps) {
    const bool venv =
        st.role == plan::StepRole::make_venv || st.role == plan::StepRole::install_requirements;
    if (o.no_venv && venv) continue;
    // The clone is tailor's own step: it reuses a clone of the tag (resume) and never
    // leaves a half-made tree (source/source_clone.h).
    if (st.role == plan::StepRole::clone)
      st.argv = source::clone_command_argv(workpath::self_executable(),
                                           {p.git_url, p.git_tag, p.layout.source_dir});
    if (o.no_venv) std::replace(st.argv.begin(), st.argv.end(), venv_python, p.python);
    kept.push_back(std::move(st));
  }
  p.steps = std::move(kept);
  s.steps = builder::plan_steps(p, p.env, ctx.environment, p.layout.source_dir);
  return std::nullopt;
}

// 4. The plan's commands, through the one builder.
TorchStepResult run_build(const TorchBuildOptions& o, TorchBuildContext& ctx, TorchBuildState& s) {
  plan::TorchPlan& p = s.plan;
  outputs::BuildReport& rep = s.report;
  rep.package = "torch";
  rep.recipe = "pytorch";
  rep.targets = p.targets.names();
  rep.env = p.env;
  rep.unset_env = p.unset_env;
  builder::BuildSession session = ctx.session(rep);
  std::fprintf(ctx.out, "Building %s (%s), %d jobs\n", p.wheel_name.c_str(),
               join(p.targets.names(), " ").c_str(), p.jobs);
  std::fflush(ctx.out);
  builder::PlanRun run = builder::run_plan(p, session);
  p.env = rep.env;  // the variables the steps ran with: the reproducibility settings added
  s.log_path = rep.log_path;
  s.steps = run.steps;
  if (rep.cache_hits && *rep.cache_hits + rep.cache_misses.value_or(0) > 0)
    std::fprintf(ctx.out, "compiler cache: %s (%s): %s\n",
                 std::string(cache::cache_tool_name(rep.cache_tool)).c_str(),
                 rep.cache_storage.c_str(),
                 cache::hit_rate_text(*rep.cache_hits, rep.cache_misses.value_or(0)).c_str());
  if (run.outcome) rep.duration_s = std::chrono::duration<double>(run.outcome->duration).count();
  // A run that did not end in a wheel still measured its units (times, the governor's
  // peaks): its report stays in the work folder, never published (the next run replaces it).
  if (run.stop && run.outcome) {
    rep.ok = false;
    nlohmann::json j = outputs::to_json(rep);
    // What the units it measured say of the whole build, on this machine.
    const uint64_t memory =
        s.host.memory.cgroup_limit ? s.host.memory.cgroup_limit : s.host.memory.total;
    if (auto predicted =
            predict_for_report(j, p.run.ninja_root + "/build.ninja", s.host.cpu.build_cores(),
                               static_cast<double>(memory) / (1ull << 30)))
      j["prediction"] = std::move(*predicted);
    (void)write_file_atomic(s.work + "/last-run.report.json", j.dump(2) + "\n");
  }
  if (run.stop && run.outcome && !run.outcome->interrupted && interrupt_signal() == 0) {
    if (const auto& block = run.error_block) {
      std::fprintf(ctx.err, "First error (log lines %zu-%zu):\n", block->first_line,
                   block->last_line);
      for (const auto& l : block->lines) std::fprintf(ctx.err, "  %s\n", l.c_str());
    }
    for (const auto& d : run.diagnoses)
      std::fprintf(ctx.err, "diagnosis [%s]: %s\n  fix: %s\n", d.pattern_id.c_str(),
                   d.cause.c_str(), d.fix.c_str());
    return stop(builder::BuildStatus::build_failed,
                run.outcome->steps.empty()
                    ? "no build step ran; full log: " + s.log_path
                    : fmt::format("step '{}' failed; full log: {}", run.outcome->steps.back().title,
                                  s.log_path));
  }
  if (run.stop) return run.stop;
  if (o.configure_only) {
    std::fprintf(ctx.out, "configure-only: stopped after CMake configure\n");
    return stop(builder::BuildStatus::printed_env, "");
  }
  return std::nullopt;
}

// 5. The built wheel, verified and renamed.
TorchStepResult verify_wheel(const TorchBuildOptions&, TorchBuildContext& ctx, TorchBuildState& s) {
  const plan::TorchPlan& p = s.plan;
  s.built = newest_wheel(p.layout.source_dir + "/dist");
  if (s.built.empty())
    return stop(builder::BuildStatus::build_failed,
                "the build produced no wheel in " + p.layout.source_dir + "/dist");
  auto report = inspect::inspect_paths({s.built});
  if (!report || report->wheels.empty())
    return stop(
        builder::BuildStatus::build_failed,
        "cannot inspect " + s.built + ": " + (report ? "no wheel" : report.error().message));
  const inspect::WheelReport& wr = report->wheels.front();
  if (p.cuda) {
    auto checked = outputs::verify_wheel_targets(s.built, p.targets);
    if (!checked) return stop(builder::BuildStatus::build_failed, checked.error().message);
    s.verification = *checked;
    bool has_torch_cuda = std::any_of(wr.libraries.begin(), wr.libraries.end(), [](const auto& l) {
      return l.path.find("libtorch_cuda.so") != std::string::npos && l.has_device_code;
    });
    if (!has_torch_cuda)
      return stop(builder::BuildStatus::verify_failed,
                  "the wheel has no libtorch_cuda.so with device code");
    if (!s.verification.ok())
      return stop(builder::BuildStatus::verify_failed,
                  "the wheel does not carry exactly the requested targets: " +
                      s.verification.describe_problems());
    std::fprintf(ctx.out, "targets verified: %s\n", join(s.verification.expected, " ").c_str());
  }
  const std::string& needed = s.manylinux_needed =
      wr.manylinux_needed;  // "manylinux_2_35_aarch64" or "linux_x86_64"
  const std::string wanted = "manylinux_" + p.manylinux + "_" + p.platform;
  const auto& policies = inspect::ManylinuxPolicies::get();
  auto needed_tag = policies.parse_platform_tag(needed),
       wanted_tag = policies.parse_platform_tag(wanted);
  if (!needed_tag)
    return stop(builder::BuildStatus::verify_failed,
                fmt::format("the libraries need {}: not a manylinux wheel ({})", needed,
                            join(wr.manylinux_limiting, ", ")));
  if (p.variant.manylinux && wanted_tag &&
      std::pair(needed_tag->glibc_major, needed_tag->glibc_minor) >
          std::pair(wanted_tag->glibc_major, wanted_tag->glibc_minor))
    return stop(builder::BuildStatus::verify_failed,
                fmt::format("the libraries need {} but {} was asked", needed, wanted));
  // What the runtime image needs: DT_NEEDED of every library, minus those in the wheel.
  s.needed_sonames.clear();
  for (const auto& lib : wr.libraries)
    for (const auto& n : lib.needed_libraries)
      if (n.kind != inspect::NeededKind::bundled && n.kind != inspect::NeededKind::cuda_driver)
        s.needed_sonames.push_back(n.soname);

  // Official-style name: torch-<version>-cpXY-cpXY-<tag the libraries need>.whl.
  std::string py_tag = "cp" + p.python_version;
  py_tag.erase(std::remove(py_tag.begin(), py_tag.end(), '.'), py_tag.end());
  std::string tag = fmt::format("{}-{}-{}", py_tag, py_tag, needed);
  s.wheel_name = fmt::format("torch-{}-{}.whl", p.wheel_version, tag);
  s.renamed = s.work + "/" + s.wheel_name;
  if (!s.identity) {
    auto identity = source::identify_tree(p.layout.source_dir, ctx.runner, s.epoch_override);
    if (!identity)
      return stop(builder::BuildStatus::build_failed,
                  "identifying the source: " + identity.error().message);
    s.identity = std::move(*identity);
  }
  // Retagged and normalised in one deterministic rewrite (WHEEL's Tag lines, RECORD, the
  // libraries' search paths without folders of the build machine).
  auto n = outputs::normalise_wheel(s.built,
                                    {s.identity->source_date_epoch,
                                     outputs::provenance_file_text(outputs::make_torch_provenance(
                                         p, s.host, *s.identity, std::string(tailor_version()))),
                                     tag, s.renamed});
  if (!n)
    return stop(builder::BuildStatus::build_failed,
                "renaming the wheel failed: " + n.error().message);
  for (const auto& r : n->search_paths)
    std::fprintf(
        ctx.out,
        "search path: %s: removed %s %s (not $ORIGIN-relative: a folder of the build machine)%s\n",
        r.member.c_str(), r.tag.c_str(), join(r.removed, ":").c_str(),
        r.after.empty() ? "" : ("; kept " + r.after).c_str());
  auto recheck = inspect::inspect_paths({s.renamed});
  if (!recheck || recheck->wheels.empty() || !recheck->wheels.front().record.passed() ||
      !recheck->wheels.front().tags_consistent)
    return stop(builder::BuildStatus::build_failed,
                "the renamed wheel's RECORD or tags do not check out");
  return std::nullopt;
}

// 6. Import in a clean venv: only the new wheel (system site-packages supply its deps).
TorchStepResult import_check(const TorchBuildOptions&, TorchBuildContext& ctx, TorchBuildState& s) {
  const plan::TorchPlan& p = s.plan;
  std::error_code ec;
  s.venv = s.work + "/verify-venv";
  fs::remove_all(s.venv, ec);
  CommandSpec mk;
  mk.argv = {p.python, "-m", "venv", "--system-site-packages", s.venv};
  mk.timeout = std::chrono::minutes(5);
  CommandSpec inst;
  inst.argv = {s.venv + "/bin/python", "-m",         "pip",    "install", "--no-deps",
               "--force-reinstall",    "--no-index", s.renamed};
  inst.timeout = std::chrono::minutes(10);
  CommandSpec imp;
  imp.argv = {s.venv + "/bin/python", "-c", data::embedded_program("build/torch_import_check.py")};
  imp.timeout = std::chrono::minutes(2);
  imp.cwd = s.work;
  for (CommandSpec* spec : {&mk, &inst, &imp}) {
    auto res = ctx.runner.run(*spec);
    if (!res.ok())
      return stop(
          builder::BuildStatus::check_failed,
          fmt::format("import check: `{}` failed: {}{}", join(spec->argv, " "), res.err, res.out));
    if (spec == &imp) s.import_json = res.out;
  }
  try {
    auto j = nlohmann::json::parse(s.import_json);
    std::string file = j.value("file", "");
    if (file.rfind(s.venv, 0) != 0)
      return stop(builder::BuildStatus::check_failed,
                  "import check: torch came from " + file + ", not the new wheel");
    std::fprintf(ctx.out, "import ok: torch %s, arch list %s\n", j.value("version", "").c_str(),
                 j["arch_list"].dump().c_str());
    if (p.cuda) {
      std::vector<std::string> arch = j["arch_list"].get<std::vector<std::string>>();
      for (const auto& t : p.targets.targets)
        if (t.kind == cuda::TargetKind::sass &&
            std::find(arch.begin(), arch.end(), t.name()) == arch.end())
          return stop(
              builder::BuildStatus::check_failed,
              "torch.cuda.get_arch_list() lacks " + t.name() + ": " + j["arch_list"].dump());
    }
  } catch (const std::exception& e) {
    return stop(builder::BuildStatus::check_failed,
                std::string("import check: unreadable output: ") + e.what());
  }
  return std::nullopt;
}

// 7. The GPU smoke test, only on a GPU the build targets: a T4G build verified on an H100
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
    spec.argv = {s.venv + "/bin/python", "-c", data::embedded_program("build/torch_smoke_test.py")};
    spec.timeout = std::chrono::minutes(5);
    spec.cwd = s.work;
    auto res = ctx.runner.run(spec);
    if (!res.ok())
      return stop(builder::BuildStatus::check_failed,
                  "GPU smoke test failed: " + res.err + res.out);
    s.smoke = "ok";
  }
  std::fprintf(ctx.out, "GPU smoke test: %s\n", s.smoke.c_str());
  return std::nullopt;
}

// 8. Publish everything together; an interrupted run publishes nothing.
TorchStepResult publish(const TorchBuildOptions& o, TorchBuildContext& ctx, TorchBuildState& s) {
  const plan::TorchPlan& p = s.plan;
  std::vector<std::string> packages = runtime_packages_for(s.needed_sonames, p.cuda_version);
  const std::string& name = s.wheel_name;
  outputs::BuildReport& rep = s.report;
  rep.tool_version = std::string(tailor_version());
  rep.source = p.variant.source_dir ? p.layout.source_dir : p.git_tag;
  rep.source_kind = "torch-source";
  rep.python = p.python;
  rep.wheel = name;
  if (auto mapped = MappedFile::open(s.renamed); mapped) {
    rep.sha256 = Sha256::hex(Sha256::of(mapped->bytes()));
    rep.size = mapped->bytes().size();
  }
  rep.bytes_per_target = s.verification.bytes_per_target;
  rep.checks.clear();
  if (p.cuda)
    rep.checks.push_back(
        {"targets", outputs::CheckStatus::passed, "exactly " + join(s.verification.expected, " ")});
  rep.checks.push_back(
      {"import", outputs::CheckStatus::passed, "torch from the wheel in a clean venv"});
  rep.checks.push_back(
      {"gpu-smoke", s.smoke == "ok" ? outputs::CheckStatus::passed : outputs::CheckStatus::skipped,
       s.smoke});
  if (s.identity)
    rep.provenance =
        outputs::make_torch_provenance(p, s.host, *s.identity, std::string(tailor_version()));
  rep.torch = outputs::BuildReport::Torch{plan::plan_to_json(p),
                                          s.verification.expected,
                                          s.manylinux_needed,
                                          nlohmann::json::parse(s.import_json, nullptr, false),
                                          s.smoke,
                                          packages};
  auto published = outputs::publish_build(
      o.out_dir, rep, s.renamed,
      {{name + ".RELEASE_NOTES.md",
        release_notes(p, name, s.verification, s.manylinux_needed, packages)},
       {"Dockerfile.runtime", render_runtime_dockerfile(p, name, packages)}});
  if (!published) return stop(builder::BuildStatus::build_failed, published.error().message);
  s.result.wheel_path = rep.wheel_path;
  s.result.published = *published;
  std::fprintf(ctx.out, "wheel: %s\n", s.result.wheel_path.c_str());
  return std::nullopt;
}

}  // namespace torch_steps

const std::vector<TorchStep>& torch_build_steps() {
  using namespace torch_steps;
  static const std::vector<TorchStep> steps = {{"plan", resolve_plan},   {"lock", lock_folders},
                                               {"source", check_source}, {"build", run_build},
                                               {"verify", verify_wheel}, {"import", import_check},
                                               {"smoke", smoke_test},    {"publish", publish}};
  return steps;
}

}  // namespace tailor::workflow
