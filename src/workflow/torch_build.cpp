#include "workflow/torch_build.h"

#include "cache/cache_ledger.h"
#include "cache/compiler_cache.h"
#include "plan/build_plan.h"
#include "plan/extension_plan.h"
#include "util/interrupt.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "executor/build_runner.h"
#include "executor/folder_lock.h"
#include "executor/ninja_log.h"
#include "executor/publish.h"
#include "executor/report_page.h"
#include "executor/verify.h"
#include "executor/wheel_normaliser.h"
#include "cuda/compatibility.h"
#include "cuda/compute_capability.h"
#include "data/data_files.h"
#include "data/toml_document.h"
#include "diagnose/diagnosis.h"
#include "inspect/inspect_report.h"
#include "plan/torch_catalog.h"
#include "plan/torch_plan_render.h"
#include "util/interrupt.h"
#include "util/files.h"
#include "util/strings.h"

namespace fs = std::filesystem;

namespace tailor::workflow {
using namespace tailor::executor;
using namespace tailor::cache;


namespace {

// The programs a torch build runs in an interpreter: data/build/installed_versions.py
// (versions of the named distributions), data/build/torch_import_check.py (the torch a
// fresh venv imports) and data/build/torch_smoke_test.py (a GPU smoke test).
std::string embedded_program(std::string_view path) {
  auto text = data::file(path);
  if (!text) throw data::DataError(text.error().message);
  return std::string(*text);
}

std::string read_file(const std::string& path) { return tailor::read_file(path).value_or(""); }

TorchBuildResult fail(int code, std::string message) {
  // After an interrupt the CLI prints the one line that says so.
  if (interrupt_signal() == 0) std::fprintf(stderr, "tailor: error: %s\n", message.c_str());
  return {code, std::move(message), "", {}};
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

std::vector<std::string> runtime_packages_for(const std::vector<std::string>& needed,
                                              const std::optional<cuda::CudaVersion>& cuda) {
  std::vector<std::string> out;
  const plan::TorchCatalog* cat = &plan::torch_catalog();
  std::string M = cuda ? std::to_string(cuda->major) : "", m = cuda ? std::to_string(cuda->minor) : "";
  for (const auto& so : needed)
    for (const auto& lib : cat->runtime_libraries) {
      if (so.rfind(lib.soname, 0) != 0) continue;
      if (lib.apt.find("{M}") != std::string::npos && !cuda) continue;
      std::string pkg = lib.apt;
      for (auto [key, value] : {std::pair<std::string, std::string>{"{M}", M}, {"{m}", m}})
        for (size_t pos; (pos = pkg.find(key)) != std::string::npos;) pkg.replace(pos, key.size(), value);
      if (std::find(out.begin(), out.end(), pkg) == out.end()) out.push_back(pkg);
    }
  return out;
}

std::string render_runtime_dockerfile(const plan::TorchPlan& p, const std::string& wheel, const std::vector<std::string>& packages) {
  const plan::TorchCatalog* cat = &plan::torch_catalog();
  const plan::DistroImage* d = plan::builder_distro(p, *cat);
  if (!d) return "";
  std::string repo_arch = cat->repo_arch.count(p.platform) ? cat->repo_arch.at(p.platform) : p.platform;
  std::string py = "python" + p.python_version;
  std::string o;
  o += fmt::format("# Runtime image for {} (written by `tailor build torch`).\n", wheel);
  o += fmt::format("# Base {} (glibc {}), the build's own glibc. System packages: exactly the libraries the\n", d->name, d->glibc);
  o += "# wheel's libraries list as DT_NEEDED that are not inside it.\n";
  o += fmt::format("FROM {}\n", d->package_manager == "apt" ? d->runtime_image : d->cpu_image);
  if (d->package_manager == "apt") {
    o += "ARG DEBIAN_FRONTEND=noninteractive\n";
    o += fmt::format("RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates wget {0} {0}-venv", py);
    if (p.python_version != d->default_python) o += " software-properties-common";
    o += " && \\\n";
    if (!packages.empty() && p.cuda) {
      o += fmt::format("    wget -q https://developer.download.nvidia.com/compute/cuda/repos/{}/{}/cuda-keyring_1.1-1_all.deb && \\\n",
                       d->nvidia_repo, repo_arch);
      o += "    dpkg -i cuda-keyring_1.1-1_all.deb && rm cuda-keyring_1.1-1_all.deb && apt-get update && \\\n";
    }
    if (!packages.empty()) o += fmt::format("    apt-get install -y --no-install-recommends {} && \\\n", join(packages, " "));
    o += "    rm -rf /var/lib/apt/lists/* && ldconfig\n";
  } else {
    o += fmt::format("RUN dnf install -y {} {}", py, join(packages, " "));
    o += " && dnf clean all\n";
  }
  if (p.cuda) o += "ENV LD_LIBRARY_PATH=/usr/local/cuda/lib64\n";
  o += fmt::format("COPY {} /tmp/\n", wheel);
  o += fmt::format("RUN {} -m venv /opt/venv && /opt/venv/bin/pip install /tmp/{} && rm /tmp/{}\n", py, wheel, wheel);
  o += "ENV PATH=/opt/venv/bin:$PATH\n";
  o += "CMD [\"python\", \"-c\", \"import torch; print(torch.__version__, torch.cuda.is_available(), torch.cuda.get_arch_list())\"]\n";
  return o;
}

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
  std::error_code ec;
  if (p.variant.source_dir || fs::exists(p.layout.source_dir, ec)) {
    facts.source_checked = true;
    facts.source_exists = fs::is_directory(p.layout.source_dir, ec);
    fs::path third = fs::path(p.layout.source_dir) / "third_party";
    if (fs::is_directory(third, ec))
      for (const auto& e : fs::directory_iterator(third, ec))
        if (e.is_directory(ec) && fs::is_empty(e.path(), ec)) facts.empty_submodules.push_back("third_party/" + e.path().filename().string());
    std::sort(facts.empty_submodules.begin(), facts.empty_submodules.end());
  }
  return facts;
}

TorchBuildResult build_torch(const plan::TorchVariant& variant, const probe::HostReport& host,
                             const plan::ResolveOptions& resolve, const TorchBuildOptions& options) {
  plan::ResolveOptions ropts = resolve;
  ropts.purpose = plan::PlanPurpose::build_here;
  plan::TorchPlan p = plan::resolve_torch_plan(variant, host, ropts);
  if (p.has_errors()) {
    std::fputs(plan::render_problems(p).c_str(), stderr);
    return fail(p.exit_code(), "the variant cannot be built here (problems listed above)");
  }
  std::error_code ec;
  fs::create_directories(p.layout.work_dir, ec);
  if (ec) return fail(2, p.layout.work_dir + ": cannot create the work folder: " + ec.message());
  std::string work = fs::absolute(p.layout.work_dir).string();
  // One build at a time per work folder and output folder (executor/folder_lock.h).
  auto work_lock = FolderLock::acquire(work, FolderLock::Place::inside, options.wait_for_lock, stderr);
  if (!work_lock) return fail(1, work_lock.error().message);
  auto out_lock = FolderLock::acquire(options.out_dir, FolderLock::Place::beside, options.wait_for_lock, stderr);
  if (!out_lock) return fail(1, out_lock.error().message);
  SystemCommandRunner runner;
  // SOURCE_DATE_EPOCH for the build when the source is already here (else after the clone).
  auto epoch_env = source_date_epoch_from_env(std::getenv("SOURCE_DATE_EPOCH"));
  if (!epoch_env) return fail(2, epoch_env.error().message);
  Expected<SourceIdentity> identity = make_error("not identified yet");
  if (fs::exists(p.layout.source_dir, ec)) {
    identity = identify_tree(p.layout.source_dir, runner, epoch_env.value());
    if (!identity) return fail(1, "identifying the source: " + identity.error().message);
    p.env["SOURCE_DATE_EPOCH"] = std::to_string(identity->source_date_epoch);
  }

  // Steps: source (git) unless --source, venv + requirements unless --no-venv, build.
  std::vector<plan::Step> steps;
  std::string build_python = options.no_venv ? p.python : p.layout.venv_dir + "/bin/python";
  for (const auto& s : p.steps) {
    if (options.no_venv && (s.title == "create venv" || s.title == "install build requirements")) continue;
    if (s.title == "clone source" && fs::exists(p.layout.source_dir + "/.git", ec)) continue;  // resumable
    plan::Step r;
    r.title = s.title;
    r.argv = s.argv;
    if (options.no_venv)
      for (auto& a : r.argv)
        if (a == p.layout.venv_dir + "/bin/python") a = build_python;
    r.cwd = s.cwd;
    if (s.uses_plan_env) {
      r.env = p.env;
      if (options.configure_only) r.env["CMAKE_ONLY"] = "1";
    }
    steps.push_back(r);
  }
  if (p.variant.source_dir) {
    plan::DoctorFacts facts = gather_doctor_facts(p, runner);
    if (!facts.source_exists) return fail(2, p.layout.source_dir + ": no such source tree");
    if (!facts.empty_submodules.empty())
      return fail(1, fmt::format("{}: empty submodules ({}); run git submodule update --init --recursive",
                                 p.layout.source_dir, join(facts.empty_submodules, ", ")));
  }
  // The compiler cache. PyTorch's CMake takes ccache from PATH itself (USE_CCACHE, on by
  // default); sccache goes in as the C, C++ and CUDA compiler launcher (CMAKE_* variables
  // reach CMake through setup.py) with a server of this build's own.
  std::map<std::string, std::string> cache_env;
  std::unique_ptr<SccacheServer> sccache_server;
  std::string cache_tool = "none";
  std::string cache_storage;
  {
    cache::CacheSettings settings = options.cache_settings;
    auto with_env = cache::apply_cache_environment(settings, process_environment());
    if (!with_env) return fail(2, with_env.error().message);
    settings = *with_env;
    if (!options.cache_url.empty())
      if (auto ok = cache::set_cache_url(settings, options.cache_url, "--cache-url"); !ok) return fail(2, ok.error().message);
    auto flag = plan::parse_cache_flag(options.cache);
    if (!flag) return fail(2, flag.error().message);
    auto tool_path = plan::choose_cache_tool(settings, *flag, process_environment(),
                                             [](std::string_view n) { return find_in_path(std::string(n)); });
    if (!tool_path) return fail(2, tool_path.error().message);
    if (!tool_path->empty()) {
      cache_tool = fs::path(*tool_path).filename().string();
      cache_storage = cache::describe_cache_storage(settings);
      auto storage_env = cache::cache_tool_environment(settings, cache_tool, {work});
      if (!storage_env) return fail(2, storage_env.error().message);
      cache_env = *storage_env;
      if (cache_tool == "sccache" && !options.configure_only) {
        auto server = SccacheServer::start(*tool_path, cache_env, runner);
        if (!server) return fail(1, fmt::format("compiler cache ({}): {}", cache_storage, server.error().message));
        sccache_server = std::move(*server);
        cache_env = sccache_server->env();
      }
      if (cache_tool == "sccache") {
        cache_env["USE_CCACHE"] = "0";
        for (const char* lang : {"C", "CXX", "CUDA"}) cache_env[fmt::format("CMAKE_{}_COMPILER_LAUNCHER", lang)] = *tool_path;
      }
    } else {
      cache_env["USE_CCACHE"] = "0";
    }
    for (auto& st : steps)
      if (!st.env.empty())
        for (const auto& [k, v] : cache_env) st.env[k] = v;
  }
  auto run_log = start_run_log(work);
  if (!run_log) return fail(1, run_log.error().message);
  std::string log_path = *run_log;
  auto display = make_progress_display(default_display_style(stdout), stdout);
  BuildRunner build_runner(runner, *display, log_path);
  std::printf("Building %s (%s), %d jobs; log: %s\n", p.wheel_name.c_str(), join(p.targets.names(), " ").c_str(),
              p.jobs, log_path.c_str());
  // The job timeline: what this run appends to the source tree's build/.ninja_log.
  const std::string ninja_root = p.layout.source_dir + "/build";
  const auto ninja_logs_before = ninja_log_sizes(ninja_root);
  auto outcome = build_runner.run(steps);
  BuildJobs ninja_jobs = collect_build_jobs(ninja_root, ninja_logs_before);
  if (sccache_server && !interrupt_signal()) {
    if (auto st = sccache_server->stats()) {
      std::printf("compiler cache: sccache (%s)\n%s", cache_storage.c_str(), render_cache_stats(*st).c_str());
      record_cache_use("sccache", *st);
    }
    sccache_server->stop();
  }
  if (!outcome) return fail(1, outcome.error().message);
  if (outcome->interrupted) return fail(1, "interrupted");
  if (!outcome->ok()) {
    std::string log = read_file(log_path);
    if (auto block = diagnose::first_error_block(log)) {
      std::fprintf(stderr, "First error (log lines %zu-%zu):\n", block->first_line, block->last_line);
      for (const auto& l : block->lines) std::fprintf(stderr, "  %s\n", l.c_str());
    }
    for (const auto& d : diagnose::diagnose_log(log))
      std::fprintf(stderr, "diagnosis [%s]: %s\n  fix: %s\n", d.pattern_id.c_str(), d.cause.c_str(), d.fix.c_str());
    return fail(1, outcome->steps.empty() ? "no build step ran; full log: " + log_path
                                          : fmt::format("step '{}' failed; full log: {}", outcome->steps.back().title, log_path));
  }
  if (options.configure_only) {
    std::printf("configure-only: stopped after CMake configure (CMAKE_ONLY=1)\n");
    return {0, "", "", {}};
  }

  // Verification of the built wheel.
  std::string built = newest_wheel(p.layout.source_dir + "/dist");
  if (built.empty()) return fail(1, "the build produced no wheel in " + p.layout.source_dir + "/dist");
  auto report = inspect::inspect_paths({built});
  if (!report || report->wheels.empty()) return fail(1, "cannot inspect " + built + ": " + (report ? "no wheel" : report.error().message));
  const inspect::WheelReport& wr = report->wheels.front();
  TargetVerification v;
  if (p.cuda) {
    auto checked = verify_wheel_targets(built, p.targets);
    if (!checked) return fail(1, checked.error().message);
    v = *checked;
    bool has_torch_cuda = std::any_of(wr.libraries.begin(), wr.libraries.end(), [](const auto& l) {
      return l.path.find("libtorch_cuda.so") != std::string::npos && l.has_device_code;
    });
    if (!has_torch_cuda) return fail(1, "the wheel has no libtorch_cuda.so with device code");
    if (!v.ok()) return fail(1, "the wheel does not carry exactly the requested targets: " + v.describe_problems());
    std::printf("targets verified: %s\n", join(v.expected, " ").c_str());
  }
  std::string needed = wr.manylinux_needed;  // "manylinux_2_35_aarch64" or "linux_x86_64"
  std::string wanted = "manylinux_" + p.manylinux + "_" + p.platform;
  if (needed.rfind("manylinux_", 0) != 0)
    return fail(1, fmt::format("the libraries need {}: not a manylinux wheel ({})", needed, join(wr.manylinux_limiting, ", ")));
  if (plan::compare_versions(needed.substr(10, needed.find('_', 12) - 10), p.manylinux) > 0 && p.variant.manylinux)
    return fail(1, fmt::format("the libraries need {} but {} was asked", needed, wanted));

  // Official-style name: torch-<version>-cpXY-cpXY-<tag the libraries need>.whl.
  std::string py_tag = "cp" + [&] { std::string s = p.python_version; s.erase(std::remove(s.begin(), s.end(), '.'), s.end()); return s; }();
  std::string tag = fmt::format("{}-{}-{}", py_tag, py_tag, needed);
  std::string wheel_name = fmt::format("torch-{}-{}.whl", p.wheel_version, tag);
  std::string renamed = work + "/" + wheel_name;
  if (!identity) identity = identify_tree(p.layout.source_dir, runner, epoch_env.value());
  if (!identity) return fail(1, "identifying the source: " + identity.error().message);
  // Retagged and normalised in one deterministic rewrite (WHEEL's Tag lines, RECORD).
  if (auto n = normalise_wheel(built, {identity->source_date_epoch,
                                       provenance_file_text(make_torch_provenance(p, host, *identity, "0.1.0")), tag, renamed});
      !n)
    return fail(1, "renaming the wheel failed: " + n.error().message);
  auto recheck = inspect::inspect_paths({renamed});
  if (!recheck || recheck->wheels.empty() || !recheck->wheels.front().record.passed() || !recheck->wheels.front().tags_consistent)
    return fail(1, "the renamed wheel's RECORD or tags do not check out");

  // Import in a clean venv: only the new wheel (system site-packages supply its deps).
  std::string venv = work + "/verify-venv";
  fs::remove_all(venv, ec);
  std::string import_json;
  {
    CommandSpec mk;
    mk.argv = {p.python, "-m", "venv", "--system-site-packages", venv};
    mk.timeout = std::chrono::minutes(5);
    CommandSpec inst;
    inst.argv = {venv + "/bin/python", "-m", "pip", "install", "--no-deps", "--force-reinstall", "--no-index", renamed};
    inst.timeout = std::chrono::minutes(10);
    CommandSpec imp;
    imp.argv = {venv + "/bin/python", "-c", embedded_program("build/torch_import_check.py")};
    imp.timeout = std::chrono::minutes(2);
    imp.cwd = work;
    for (CommandSpec* s : {&mk, &inst, &imp}) {
      auto res = runner.run(*s);
      if (!res.ok()) return fail(1, fmt::format("import check: `{}` failed: {}{}", join(s->argv, " "), res.err, res.out));
      if (s == &imp) import_json = res.out;
    }
    try {
      auto j = nlohmann::json::parse(import_json);
      std::string file = j.value("file", "");
      if (file.rfind(venv, 0) != 0) return fail(1, "import check: torch came from " + file + ", not the new wheel");
      std::printf("import ok: torch %s, arch list %s\n", j.value("version", "").c_str(), j["arch_list"].dump().c_str());
      if (p.cuda) {
        std::vector<std::string> arch = j["arch_list"].get<std::vector<std::string>>();
        std::vector<std::string> want;
        for (const auto& t : p.targets.targets)
          if (t.kind == cuda::TargetKind::sass) want.push_back(t.name());
        for (const auto& w : want)
          if (std::find(arch.begin(), arch.end(), w) == arch.end())
            return fail(1, "torch.cuda.get_arch_list() lacks " + w + ": " + j["arch_list"].dump());
      }
    } catch (const std::exception& e) {
      return fail(1, std::string("import check: unreadable output: ") + e.what());
    }
  }
  std::string smoke = "skipped (no GPU)";
  // Only on a GPU the build targets: a T4G build verified on an H100 host would fail for
  // the right reason ("no kernel image"), which says nothing about the wheel.
  const probe::GpuInfo* covered = nullptr;
  for (const auto& g : host.gpus) {
    const auto& cc = g.compute_capability;
    if (cc && cuda::coverage_on(p.targets, *cc).mode != cuda::RunMode::none) {
      covered = &g;
      break;
    }
  }
  if (p.cuda && !host.gpus.empty() && !covered)
    smoke = fmt::format("skipped ({} (CC {}) is not among the targets)", host.gpus.front().name,
                        host.gpus.front().compute_capability ? host.gpus.front().compute_capability->str() : "?");
  if (p.cuda && covered) {
    CommandSpec s;
    s.argv = {venv + "/bin/python", "-c", embedded_program("build/torch_smoke_test.py")};
    s.timeout = std::chrono::minutes(5);
    s.cwd = work;
    auto res = runner.run(s);
    if (!res.ok()) return fail(1, "GPU smoke test failed: " + res.err + res.out);
    smoke = "ok";
  }
  std::printf("GPU smoke test: %s\n", smoke.c_str());

  // What the runtime image needs: DT_NEEDED of every library, minus those in the wheel.
  std::vector<std::string> needed_sonames;
  for (const auto& lib : wr.libraries)
    for (const auto& n : lib.needed_libraries)
      if (n.kind != inspect::NeededKind::bundled && n.kind != inspect::NeededKind::cuda_driver) needed_sonames.push_back(n.soname);
  std::vector<std::string> packages = runtime_packages_for(needed_sonames, p.cuda_version);

  nlohmann::json rep;
  rep["wheel"] = wheel_name;
  rep["plan"] = plan::plan_to_json(p);
  rep["targets_verified"] = v.expected;
  rep["bytes_per_target"] = v.bytes_per_target;
  rep["manylinux_needed"] = needed;
  rep["import"] = nlohmann::json::parse(import_json);
  rep["gpu_smoke_test"] = smoke;
  rep["runtime_packages"] = packages;
  rep["duration_s"] = std::chrono::duration<double>(outcome->duration).count();
  rep["wheel_bytes"] = fs::file_size(renamed, ec);
  if (!ninja_jobs.jobs.empty() || ninja_jobs.dropped)
    rep["run"] = {{"duration_s", rep["duration_s"]},
                  {"job_timeline", jobs_to_json(ninja_jobs.jobs)},
                  {"job_timeline_dropped", ninja_jobs.dropped}};
  auto staging = PublishStaging::create(options.out_dir);
  if (!staging) return fail(1, staging.error().message);
  for (auto r : {staging->add_text(wheel_name + ".report.json", rep.dump(2) + "\n"),
                 staging->add_text(wheel_name + ".report.html", render_report_html(rep)),
                 staging->add_text(wheel_name + ".RELEASE_NOTES.md", release_notes(p, wheel_name, v, needed, packages)),
                 staging->add_text("Dockerfile.runtime", render_runtime_dockerfile(p, wheel_name, packages)),
                 staging->add_copy(log_path, wheel_name + ".build.log"), staging->add_copy(renamed, wheel_name)})
    if (!r) return fail(1, r.error().message);
  auto published = staging->commit({wheel_name});
  if (!published) return fail(1, published.error().message);
  std::string out_wheel = (fs::path(options.out_dir) / wheel_name).string();
  std::printf("wheel: %s\n", out_wheel.c_str());
  return {0, "", out_wheel, *published};
}

}  // namespace tailor::workflow
