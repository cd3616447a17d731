// run_stack: resolve with pip, download and inspect the wheels that may carry device code,
// decide each package's outcome.
#include "stack/stack.h"

#include <fmt/format.h>
#include <gnu/libc-version.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <map>
#include <regex>
#include <set>

#include "cuda/arch_spec.h"
#include "cuda/compatibility.h"
#include "cuda/gpu_platform.h"
#include "cuda/target_request.h"
#include "inspect/inspect_report.h"
#include "plan/cross_target.h"
#include "probe/gpu_query.h"
#include "probe/probe.h"
#include "stack/stack_cache.h"
#include "stack/stack_context.h"
#include "util/files.h"
#include "util/interrupt.h"
#include "util/strings.h"
#include "util/version.h"

namespace fs = std::filesystem;

namespace tailor::stack {

namespace {

std::string normalise_machine(std::string m) {
  if (m == "arm64") return "aarch64";
  if (m == "amd64") return "x86_64";
  return m;
}

Expected<std::string> interpreter_facts(CommandRunner& runner, const std::string& python,
                                        std::string& machine, std::string* executable) {
  CommandSpec spec;
  spec.argv = {python, "-c",
               "import platform,sys; print(platform.machine()); print('%d.%d' % "
               "sys.version_info[:2]); print(sys.executable)"};
  spec.timeout = std::chrono::seconds(30);
  auto r = runner.run(spec);
  if (!r.ok())
    return make_error(fmt::format("{}: cannot run this Python{}", python,
                                  r.err.empty() ? "" : ": " + std::string(trim(r.err))));
  auto lines = split_any(r.out, "\n");
  if (lines.size() < 2) return make_error(python + ": unexpected output");
  machine = normalise_machine(std::string(trim(lines[0])));
  if (executable && lines.size() >= 3) *executable = std::string(trim(lines[2]));
  return std::string(trim(lines[1]));
}

void decide_torch(Context& c, Row& row, const ResolvedDist& d,
                  const std::vector<ResolvedDist>& all) {
  stack::decide_torch(c.target, c.asked_cuda, d, all, row, c.result.torch);
}

void order_rows(std::vector<Row>& rows) {
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < rows.size(); ++i) index[rows[i].key] = i;
  std::vector<Row> out;
  std::vector<int> state(rows.size(), 0);  // 0 new, 1 visiting, 2 done
  std::function<void(size_t)> visit = [&](size_t i) {
    if (state[i] != 0) return;
    state[i] = 1;
    for (const auto& dep : rows[i].depends)
      if (auto it = index.find(dep); it != index.end()) visit(it->second);
    state[i] = 2;
    out.push_back(rows[i]);
  };
  // torch first, then the rest in resolution order.
  if (auto it = index.find("torch"); it != index.end()) visit(it->second);
  for (size_t i = 0; i < rows.size(); ++i) visit(i);
  rows = std::move(out);
}

}  // namespace

Expected<Target> resolve_target(const StackRequest& request, CommandRunner& runner,
                                std::string* interpreter_path) {
  Target t;
  std::string machine;
  TAILOR_TRY(python, interpreter_facts(runner, request.interpreter, machine, interpreter_path));
  // The target's GPUs: the one resolution of --gpu / --arch (the devices they name; the
  // flags may repeat), else this machine's when the target is this machine.
  cuda::TargetRequest gpu_request;
  gpu_request.arch = request.arch;
  gpu_request.gpu = request.gpu;
  gpu_request.detect = [&runner] {
    probe::NvmlGpuQuery nvml;
    std::vector<std::string> notes;
    return probe::detected_gpus(probe::probe_gpus(nvml, runner, notes).gpus);
  };
  std::optional<cuda::ResolvedTargets> gpus;
  if (!request.arch.empty() || !request.gpu.empty()) {
    TAILOR_TRY(named, cuda::resolve_target_request(gpu_request));
    gpus = std::move(named);
  }
  // A GPU or instance of one platform only (T4G: aarch64) implies the target's platform.
  TAILOR_TRY(implied, cuda::variant_platform(request.platform.empty()
                                                 ? std::nullopt
                                                 : std::optional<std::string>(request.platform),
                                             gpus ? gpus->named : std::vector<std::string>{}));
  t.platform = !request.platform.empty() ? normalise_machine(request.platform)
               : implied                 ? *implied
                                         : machine;
  if (t.platform != "x86_64" && t.platform != "aarch64")
    return make_error(fmt::format("--platform {}: expected x86_64 or aarch64", request.platform));
  static const std::regex py_re(R"(3\.\d{1,2})");
  t.python = request.python.empty() ? python : request.python;
  if (!std::regex_match(t.python, py_re))
    return make_error(fmt::format("--python {}: expected 3.X, e.g. 3.10", t.python));
  t.cross = t.platform != machine || t.python != python;
  t.host_platform = machine;
  if (!request.glibc.empty()) {
    auto v = parse_version(request.glibc);
    if (!v || v->major() != 2)
      return make_error(fmt::format("--glibc {}: expected 2.X, e.g. 2.35", request.glibc));
    t.glibc = request.glibc;
  } else {
    t.glibc =
        t.platform == machine ? std::string(gnu_get_libc_version()) : facts().default_target_glibc;
  }
  if (!gpus) {
    if (t.cross)
      return make_error("the target is another machine: name its GPUs with --gpu or --arch");
    TAILOR_TRY(detected, cuda::resolve_target_request(gpu_request));
    gpus = std::move(detected);
  }
  t.gpus = gpus->devices;
  if (gpus->source != cuda::TargetSource::detected) t.gpu_text = join(gpus->named, ";");
  std::sort(t.gpus.begin(), t.gpus.end());
  return t;
}

namespace {

void progress(const Context& c, const std::string& line) {
  if (c.request.progress) c.request.progress(line);
}

/// --torch: an interpreter whose installed torch the stack uses (the result's torch), or a
/// version to pin (a requirement); --cuda's PyTorch index; every requirement named.
Expected<void> take_torch(Context& c, bool torch_interpreter,
                          std::vector<std::string>& requirements) {
  const StackRequest& request = c.request;
  if (torch_interpreter) {
    if (c.target.cross)
      return make_error(
          "--torch PYTHON uses that interpreter's torch: the target must be this machine");
    auto py = probe::probe_python(c.torch_python, c.runner, std::chrono::seconds(120));
    if (!py || !py->torch)
      return make_error(
          fmt::format("--torch {}: no importable torch{}", c.torch_python,
                      py && !py->torch_error.empty() ? " (" + py->torch_error + ")" : ""));
    c.result.torch = {py->torch->version, py->torch->cuda_version, "",
                      "installed in " + c.torch_python, py->torch->cxx11_abi};
    std::vector<std::string> arch;
    for (const auto& a : py->torch->arch_list) arch.push_back(a);
    c.result.torch.arch_list = join(arch, " ");
  } else if (!request.torch.empty()) {
    if (!parse_version(request.torch))
      return make_error(fmt::format(
          "--torch {}: expected a version (2.11.0) or a Python interpreter", request.torch));
    bool named = std::any_of(requirements.begin(), requirements.end(),
                             [](const std::string& r) { return requirement_name(r) == "torch"; });
    if (named) return make_error("--torch and a torch requirement both given: keep one");
    requirements.insert(requirements.begin(), "torch==" + request.torch);
  }
  if (c.asked_cuda && !torch_interpreter && !c.index.no_index)
    c.index.extra_index_urls.push_back(pytorch_index_url(c.asked_cuda));
  for (const auto& r : requirements)
    if (requirement_name(r).empty())
      return make_error(fmt::format("requirement '{}': expected NAME[==VERSION]", r));
  return {};
}

/// Binary-only resolution for the target; packages with no wheel are retried from source
/// (this machine) or set aside and looked up as sdists later (another machine: their
/// requirement strings go to `set_aside`, out of `requirements`).
Expected<PipRun> resolve_with_pip(Context& c, std::vector<std::string>& requirements,
                                  std::vector<std::string>& set_aside) {
  progress(c, fmt::format("resolving {} for {} Python {} with pip", join(requirements, " "),
                          c.target.platform, c.target.python));
  auto t0 = Clock::now();
  std::set<std::string> no_wheel;
  PipRun run;
  bool no_isolation = false;
  for (int pass = 0;; ++pass) {
    if (interrupt_signal()) return make_error("interrupted");
    std::vector<std::string> extra = {"--only-binary=:all:"};
    if (!no_wheel.empty() && !c.target.cross) {
      std::vector<std::string> names(no_wheel.begin(), no_wheel.end());
      extra.push_back("--no-binary=" + join(names, ","));
    }
    // A CUDA extension's setup.py imports torch, which an isolated build has not: its
    // metadata is prepared against the resolving interpreter instead.
    if (no_isolation) extra.push_back("--no-build-isolation");
    TAILOR_TRY(r, pip_dry_run(c, requirements, extra, c.torch_python.empty()));
    if (pass == 0) c.result.pip_command = r.command;
    if (r.ok) {
      c.result.resolution_reused = r.reused;
      run = std::move(r);
      break;
    }
    std::string missing = unsatisfied_requirement(r.err);
    if (pass >= 12) return make_error("pip could not resolve the stack: " + pip_error_line(r.err));
    if (missing.empty() || no_wheel.count(missing)) {
      if (!no_wheel.empty() && !c.target.cross && !no_isolation) {
        no_isolation = true;
        continue;
      }
      return make_error("pip could not resolve the stack: " + pip_error_line(r.err));
    }
    if (!c.target.cross) {
      no_wheel.insert(missing);
      continue;
    }
    auto it = std::find_if(requirements.begin(), requirements.end(),
                           [&](const std::string& q) { return requirement_name(q) == missing; });
    if (it == requirements.end())
      return make_error(fmt::format(
          "pip could not resolve the stack for {}: {} (a dependency) has no wheel for the target",
          c.target.platform, missing));
    no_wheel.insert(missing);
    set_aside.push_back(*it);
    requirements.erase(it);
    if (requirements.empty() && c.request.requirement_files.empty()) break;
  }
  c.result.resolve_seconds = since(t0);
  progress(
      c, fmt::format("{} {} package{} in {:.1f} s",
                     c.result.resolution_reused ? "reused the resolution of" : "resolved",
                     run.dists.size(), run.dists.size() == 1 ? "" : "s", c.result.resolve_seconds));
  return run;
}

/// One row per resolved distribution, torch first (the others are judged against it): torch
/// and NVIDIA runtimes decided here, sdists marked, and the wheels to inspect in `to_inspect`.
std::vector<Row> rows_of(Context& c, const PipRun& run,
                         std::vector<const ResolvedDist*>& to_inspect) {
  std::vector<Row> rows;
  std::set<std::string> resolved_keys;
  for (const auto& d : run.dists) resolved_keys.insert(d.key);
  std::vector<const ResolvedDist*> order;
  for (const auto& d : run.dists)
    if (d.key == "torch") order.push_back(&d);
  for (const auto& d : run.dists)
    if (d.key != "torch") order.push_back(&d);
  for (const auto* d : order) {
    Row row;
    row.name = d->name;
    row.key = d->key;
    row.version = d->version;
    row.requested = d->requested;
    row.wheel = d->wheel;
    for (const auto& req : d->requires_dist) {
      std::string dep = requirement_name(req);
      if (!dep.empty() && !has_extra_marker(req) && resolved_keys.count(dep) && dep != d->key)
        row.depends.push_back(dep);
    }
    if (d->wheel) {
      row.wheel_url = d->url;
      row.wheel_sha256 = d->sha256;
      row.wheel_file = d->filename;
    }
    if (d->key == "torch" && !c.torch_python.empty()) {
      // --torch PYTHON: that torch is the stack's (its row, installed_torch_row); pip
      // resolving another one means the requirements would replace it.
      c.torch_replaced_by = d->version;
      continue;
    } else if (d->key == "torch" && d->wheel) {
      decide_torch(c, row, *d, run.dists);
    } else if (d->wheel && is_cuda_runtime_package(d->key)) {
      decide_runtime(c, row, *d);
    } else if (d->wheel) {
      to_inspect.push_back(d);
    } else {
      row.kind = Kind::source;
      row.sdist_url = d->url;
      row.sdist_sha256 = d->sha256;
      row.sdist_file = d->filename;
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

/// --torch PYTHON's row: the installed torch's arch list against the target's GPUs.
Row installed_torch_row(const Context& c) {
  Row row;
  row.name = row.key = "torch";
  row.version = c.result.torch.version;
  row.kind = Kind::torch;
  row.outcome = Outcome::installed;
  row.reason =
      fmt::format("{}; CUDA {}; {}", c.result.torch.source,
                  c.result.torch.cuda ? c.result.torch.cuda->to_string() : "none",
                  c.result.torch.arch_list.empty() ? "no GPU targets" : c.result.torch.arch_list);
  if (!c.torch_replaced_by.empty()) {
    row.outcome = Outcome::unsupported;
    row.reason = fmt::format(
        "{} ({}); the requirements need torch {} instead, which pip would install over it: "
        "relax them, or give --torch the interpreter of a torch they take",
        c.result.torch.source, c.result.torch.version, c.torch_replaced_by);
    return row;
  }
  auto set = cuda::parse_arch_spec(c.result.torch.arch_list);
  row.covers = "yes";
  for (const auto& cc : c.target.gpus)
    if (!set || cuda::coverage_on(*set, cc).mode == cuda::RunMode::none) row.covers = "no";
  if (set)
    for (const auto& t : set->targets) row.targets.push_back(t.name());
  if (row.covers == "no") {
    row.outcome = Outcome::unsupported;
    row.reason =
        fmt::format("the installed torch ({}) has no kernels for {}: `tailor build torch --gpu {}`",
                    c.result.torch.arch_list.empty() ? "CPU-only" : c.result.torch.arch_list,
                    c.target.gpu_label(),
                    c.target.gpu_text.empty() ? c.target.gpus.front().str() : c.target.gpu_text);
  }
  return row;
}

/// Downloads the wheels that may carry device code and judges each from its inspection
/// (stored by sha256 and tailor build id, else made now); an unusable one falls back to its
/// sdist.
Expected<void> inspect_wheels(Context& c, std::vector<Row>& rows,
                              const std::vector<const ResolvedDist*>& to_inspect) {
  progress(c, fmt::format("inspecting {} wheel{} that may carry device code", to_inspect.size(),
                          to_inspect.size() == 1 ? "" : "s"));
  TAILOR_TRY(paths, fetch_into_cache(c, to_inspect));
  InspectionStore inspections((fs::path(c.cache) / "inspections").string(), build_identity());
  std::map<std::string, Row*> by_key;
  for (auto& r : rows) by_key[r.key] = &r;
  for (const auto* d : to_inspect) {
    if (interrupt_signal()) return make_error("interrupted");
    Row& row = *by_key.at(d->key);
    const fs::path& file = paths.at(d->key);
    // The cache's folder is the sha256 the file was checked against when it was stored.
    const std::string sha = file.parent_path().filename().string();
    std::string warning;
    auto stored = inspections.load(sha, file.string(), warning);
    if (!warning.empty() && c.request.warn) c.request.warn(warning);
    if (stored) {
      ++c.result.inspections_reused;
    } else {
      if (c.request.progress_detail)
        c.request.progress_detail(fmt::format("inspecting {}", d->filename));
      auto report = inspect::inspect_paths({file.string()});
      if (!report || report->wheels.empty()) {
        row.outcome = Outcome::unsupported;
        row.covers = "?";
        row.reason = fmt::format("{} does not read as a wheel: {}", d->filename,
                                 report ? "no wheel" : report.error().message);
        continue;
      }
      stored = std::move(report->wheels.front());
      if (auto w = inspections.store(sha, *stored); !w && c.request.warn)
        c.request.warn("cannot store the inspection of " + d->filename + ": " + w.error().message);
    }
    std::string why = judge_wheel(c, row, *stored);
    if (!why.empty())
      if (auto f = fall_back_to_source(c, row, d->key + "==" + d->version, why); !f)
        return f.error();
  }
  return {};
}

/// The packages pip resolved from source, and those set aside for another machine, as
/// builds from their sdists (or unsupported).
Expected<void> take_sources(Context& c, std::vector<Row>& rows,
                            const std::vector<std::string>& set_aside) {
  for (auto& row : rows)
    if (row.kind == Kind::source)
      if (auto f =
              fall_back_to_source(c, row, row.key + "==" + row.version, "no wheel for the target");
          !f)
        return f.error();
  for (const auto& req : set_aside) {
    Row row;
    row.key = row.name = requirement_name(req);
    row.kind = Kind::source;
    row.requested = true;
    if (auto f = fall_back_to_source(
            c, row, req,
            fmt::format("no wheel for {} Python {}", c.target.platform, c.target.python));
        !f)
      return f.error();
    if (row.outcome == Outcome::build)
      c.result.notes.push_back(fmt::format(
          "{} has no wheel for the target; its dependencies were not resolved (pip resolves "
          "an sdist's dependencies only on the machine that builds it)",
          row.name));
    rows.push_back(std::move(row));
  }
  return {};
}

}  // namespace

Expected<StackResult> run_stack(const StackRequest& request, CommandRunner& runner) {
  if (request.packages.empty() && request.requirement_files.empty())
    return make_error("name the packages (PACKAGE[==VER]... or -r requirements.txt)");
  Context c{request,
            runner,
            {},
            request.interpreter,
            {},
            request.index,
            request.cache_dir.empty() ? user_cache_dir("stack") : request.cache_dir,
            {}};
  std::vector<std::string> requirements = request.packages;
  TAILOR_TRY(asked_cuda, parse_cuda_flag(request.cuda));
  c.asked_cuda = asked_cuda;

  // --torch: a version to pin, or an interpreter whose installed torch the stack uses.
  bool torch_interpreter =
      request.torch.find('/') != std::string::npos || request.torch.starts_with("python");
  if (torch_interpreter) {
    c.torch_python = request.torch;
    if (request.interpreter == "python3") c.python = request.torch;
  }
  StackRequest with_python = request;
  with_python.interpreter = c.python;
  std::string executable;
  TAILOR_TRY(target, resolve_target(with_python, runner, &executable));
  // The interpreter itself from here on: a pyenv shim costs a few bash scripts per run.
  if (!executable.empty() && executable.starts_with('/') && ::access(executable.c_str(), X_OK) == 0)
    c.python = executable;
  c.target = target;
  c.result.target = target;
  if (request.platform.empty())
    if (auto implied = cuda::implied_platform({c.target.gpu_text}); implied && *implied)
      c.result.notes.push_back(
          fmt::format("platform {} implied by {}", (*implied)->platform, (*implied)->source));
  TAILOR_TRY_VOID(take_torch(c, torch_interpreter, requirements));

  // 1. The resolution; 2. rows, and the downloads inspection needs; 3. the sdists.
  std::vector<std::string> set_aside;  // requirement strings (cross)
  TAILOR_TRY(run, resolve_with_pip(c, requirements, set_aside));
  auto t1 = Clock::now();
  std::vector<const ResolvedDist*> to_inspect;
  std::vector<Row> rows = rows_of(c, run, to_inspect);
  if (!c.torch_python.empty()) rows.insert(rows.begin(), installed_torch_row(c));
  TAILOR_TRY_VOID(inspect_wheels(c, rows, to_inspect));
  TAILOR_TRY_VOID(take_sources(c, rows, set_aside));
  TAILOR_TRY_VOID(take_wheelhouse(c, rows));
  c.result.inspect_seconds = since(t1);
  // A CUDA package on a torch without CUDA cannot work whatever its wheel holds.
  bool any_cuda =
      std::any_of(rows.begin(), rows.end(), [](const Row& r) { return r.kind == Kind::cuda; });
  if (any_cuda && !c.result.torch.cuda && !c.result.torch.version.empty())
    c.result.notes.push_back(
        fmt::format("torch {} has no CUDA on {}: every CUDA package needs a CUDA torch first",
                    c.result.torch.version, c.target.platform));
  // A package to build for another machine's platform: tailor cross-builds it here.
  const plan::CrossPlatform* cross = plan::cross_platform(c.target.platform);
  if (cross && c.target.platform != c.target.host_platform &&
      std::any_of(rows.begin(), rows.end(), [](const Row& r) {
        return r.kind != Kind::torch && r.outcome == Outcome::build;
      }))
    c.result.notes.push_back(fmt::format(
        "the packages to build are for {}: this {} host cross-builds them with `tailor build "
        "PACKAGE --platform {} --gpu {}` (Debian's cross compiler and qemu-user for the import "
        "test: `{}`)",
        cross->name, c.target.host_platform, cross->name, c.target.gpu_label(), cross->install));
  order_rows(rows);
  c.result.rows = std::move(rows);
  c.result.index = c.index;
  c.result.torch_python = c.torch_python;
  return std::move(c.result);
}

}  // namespace tailor::stack
