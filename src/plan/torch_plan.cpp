#include "plan/torch_plan.h"

#include <fmt/format.h>

#include <algorithm>

#include "cuda/arch_spec.h"
#include "cuda/nvcc_capabilities.h"
#include "cuda/target_request.h"
#include "plan/toolkit_choice.h"
#include "plan/torch_estimate.h"
#include "plan/torch_plan_context.h"
#include "plan/torch_platform.h"
#include "plan/torch_validation.h"
#include "probe/probe.h"
#include "util/strings.h"

namespace tailor::plan {
using namespace torch_context;

namespace {

/// Python's and torch's "3.10.12" -> "3.10" (CUDA versions are cuda::CudaVersion).
std::string major_minor(std::string_view version) {
  auto parts = split_any(version, ".");
  if (parts.size() < 2) return std::string(version);
  return parts[0] + "." + parts[1];
}

std::string normalize_manylinux(std::string_view m) {
  std::string s = to_lower(trim(m));
  if (s.rfind("manylinux_", 0) == 0) s = s.substr(10);
  if (s == "manylinux2014") s = "2_17";
  std::replace(s.begin(), s.end(), '.', '_');
  return s;
}

const TorchRelease* resolve_release(Context& c) {
  const auto& v = c.plan.variant;
  std::string wanted = v.torch.value_or("");
  if (wanted.empty()) {
    // The newest release tailor knows.
    const TorchRelease* newest = nullptr;
    for (const auto& r : c.catalog.releases)
      if (!newest || compare_versions(r.version, newest->version) > 0) newest = &r;
    if (!newest) return nullptr;
    wanted = newest->version;
  }
  if (wanted.rfind("v", 0) == 0) wanted = wanted.substr(1);
  const TorchRelease* rel = c.catalog.find_release(wanted);
  if (!rel) {
    // A local source tree of a newer/older point release still follows its minor's rules.
    for (const auto& r : c.catalog.releases)
      if (major_minor(r.version) == major_minor(wanted) && v.source_dir) rel = &r;
  }
  if (!rel) {
    std::vector<std::string> known;
    const TorchRelease* newest = nullptr;
    for (const auto& r : c.catalog.releases) {
      known.push_back(r.version);
      if (!newest || compare_versions(r.version, newest->version) > 0) newest = &r;
    }
    // Newer than the data is its own case: the facts a build needs (CUDA and Python
    // support, arch lists, the build interface) are not known yet, and a guess is wrong.
    if (newest && compare_versions(wanted, newest->version) > 0)
      c.input_error(
          "torch",
          fmt::format(
              "torch {} is newer than tailor's data (the newest release it knows is {}): its CUDA "
              "and Python support, arch lists and build interface are not known here",
              wanted, newest->version),
          fmt::format("plan {} (--torch {}), or use a tailor whose data knows {}", newest->version,
                      newest->version, wanted));
    else
      c.input_error("torch", fmt::format("torch {} is not a release tailor knows", wanted),
                    fmt::format("choose one of {} (data/pytorch/versions.toml), or --source DIR",
                                join(known, ", ")));
    return nullptr;
  }
  c.plan.torch_version = wanted;
  c.plan.git_tag = v.source_dir ? "" : "v" + wanted;
  c.plan.git_url = v.source_dir ? "" : v.git_url.value_or(c.catalog.source_url);
  return rel;
}

void resolve_python(Context& c, const TorchRelease* rel) {
  const auto& v = c.plan.variant;
  std::string want = v.python ? major_minor(*v.python) : "";
  if (want.empty() && !c.host.pythons.empty()) want = major_minor(c.host.pythons.front().version);
  if (want.empty() && rel) want = rel->pythons.front();
  c.plan.python_version = want;
  for (const auto& p : c.host.pythons)
    if (major_minor(p.version) == want) {
      c.plan.python = p.path;
      break;
    }
  if (c.plan.python.empty()) {
    c.plan.python = "python" + want;
    if (c.same_platform())
      c.host_problem(
          "python", fmt::format("no Python {} found on this host", want),
          fmt::format(
              "install python{0} with its -dev and -venv packages, or name it with --python",
              want));
  }
  if (rel) c.take(check_python_for_release(*rel, want));
}

const probe::CudaToolkit* resolve_cuda(Context& c, const TorchRelease* rel) {
  auto& p = c.plan;
  const auto& v = p.variant;
  if (v.cpu_only.value_or(false)) {
    p.cuda = false;
    return nullptr;
  }
  p.cuda = true;
  // The toolkit decision is plan/toolkit_choice's: the CUDA asked for, else the newest
  // installed toolkit this release supports.
  const probe::CudaToolkit* tk =
      v.cuda ? toolkit_of(c.host, *v.cuda) : newest_toolkit(c.host, rel ? &rel->cudas : nullptr);
  if (v.cuda) {
    p.cuda_version = *v.cuda;
  } else if (tk) {
    p.cuda_version = tk->release;
  } else {
    c.input_error("cuda",
                  "no CUDA version given and no CUDA toolkit supported by this torch found here",
                  "name one with --cuda 12.6 (or build CPU-only with --cpu-only)");
    return nullptr;
  }
  const cuda::CudaVersion& release = *p.cuda_version;
  if (rel) c.take(check_cuda_for_release(*rel, release));
  if (tk) {
    p.cuda_home = tk->root;
  } else {
    p.cuda_home = "/usr/local/cuda-" + release.to_string();
    if (c.same_platform())
      c.host_problem(
          "cuda", fmt::format("CUDA {} toolkit not found on this host", release.to_string()),
          fmt::format(
              "install cuda-toolkit-{}-{} (NVIDIA's repository) or choose an installed CUDA",
              release.major, release.minor));
  }
  return tk;
}

void resolve_targets(Context& c) {
  auto& p = c.plan;
  const auto& v = p.variant;
  if (!p.cuda) {
    if (!v.arch.empty() || !v.gpu.empty())
      c.input_error(v.gpu.empty() ? "arch" : "gpu", "GPU targets were given for a CPU-only build",
                    fmt::format("drop {} or drop --cpu-only", v.gpu.empty() ? "--arch" : "--gpu"));
    return;
  }
  // The one resolution every command uses; the problem's field names the input (flag or
  // tailor.toml key), so the message carries no flag of its own.
  cuda::TargetRequest request;
  request.arch = v.arch;
  request.gpu = v.gpu;
  request.prefix_errors = false;
  request.detect = [&c] { return probe::detected_gpus(c.host.gpus); };
  cuda::ArchSpecContext context;
  if (p.cuda_version)
    if (auto caps = cuda::nvcc_capabilities_from_table(*p.cuda_version)) context.nvcc = *caps;
  auto resolved = cuda::resolve_target_request(request, context);
  if (!resolved) {
    c.input_error(v.gpu.empty() ? "arch" : "gpu", resolved.error().message,
                  "see `tailor arch --help` for the accepted spellings");
    return;
  }
  if (resolved->source == cuda::TargetSource::detected) {
    std::vector<std::string> ccs;
    for (const auto& g : c.host.gpus) ccs.push_back(g.compute_capability->str());
    p.notes.push_back("GPU targets taken from the GPUs on this host: " + join(ccs, ", "));
  }
  p.targets = resolved->targets;
  if (p.cuda_version) c.take(check_targets_for_nvcc(p.targets, *p.cuda_version));
}

void resolve_cpu_target(Context& c) {
  auto& p = c.plan;
  std::optional<std::string> wanted = p.variant.cpu_target;
  const bool implied_here =
      c.implied && c.implied->platform == p.platform && !c.implied->cpu_target.empty();
  if (!wanted && implied_here) {
    wanted = c.implied->cpu_target;
    p.notes.push_back(
        fmt::format("CPU target {} implied by {} (pass --cpu-target to choose another)", *wanted,
                    c.implied->source));
  }
  if (!wanted) {
    // Nothing asked and nothing implied: on an Arm host say which target tunes for it.
    if (c.same_platform() && p.platform == "aarch64" && !c.host.cpu.neoverse_class.empty())
      for (const auto& k : c.catalog.cpu_targets)
        if (k.platform == "aarch64" && k.neoverse == c.host.cpu.neoverse_class) {
          p.notes.push_back(
              fmt::format("no CPU target: the compiler's default; this host is Neoverse {} class "
                          "({}): --cpu-target {} tunes for it and for machines of that class",
                          k.neoverse, c.host.cpu.model.empty() ? "?" : c.host.cpu.model, k.name));
          break;
        }
    return;
  }
  const CpuTarget* t = c.catalog.find_cpu_target(*wanted);
  if (!t) {
    std::vector<std::string> known;
    for (const auto& k : c.catalog.cpu_targets) {
      std::string s = k.name;
      if (!k.aliases.empty()) s += " (" + join(k.aliases, ", ") + ")";
      known.push_back(s);
    }
    c.input_error("cpu_target", fmt::format("unknown CPU target '{}'", *wanted),
                  "choose one of: " + join(known, "; "));
    return;
  }
  Problems ps = check_cpu_target_platform(*t, p.platform, c.catalog);
  if (!ps.empty()) {
    c.take(std::move(ps));
    return;
  }
  if (p.variant.cpu_target && implied_here) {
    const CpuTarget* there = c.catalog.find_cpu_target(c.implied->cpu_target);
    if (there && there->platform == t->platform && t->level > there->level)
      c.add(
          ProblemSeverity::warning, ProblemKind::input, "cpu_target",
          fmt::format("{} has {} CPUs; a {} build may stop with an illegal instruction there",
                      c.implied->source, there->name, t->name),
          fmt::format("--cpu-target {} (or leave it out) for {}", there->name, c.implied->source));
  }
  p.cpu_target = t->name;
  p.cpu_flags = t->flags;
  if (!t->isa_note.empty())
    p.cpu_flags.push_back(t->isa_note);
  else
    p.notes.push_back(
        fmt::format("{}: the toolchain has no ISA note for {}; the target is recorded in the build "
                    "report and release notes only",
                    t->name, p.platform));
  // The build imports and tests the result on this host: a newer ISA than the host's stops that.
  if (c.same_platform() && t->platform == "aarch64" && !t->requires_features.empty() &&
      !c.host.cpu.features.empty()) {
    std::vector<std::string> missing;
    for (const auto& f : t->requires_features)
      if (std::find(c.host.cpu.features.begin(), c.host.cpu.features.end(), f) ==
          c.host.cpu.features.end())
        missing.push_back(f);
    if (!missing.empty()) {
      std::string host =
          c.host.cpu.model.empty() ? "this host's CPU" : "this host (" + c.host.cpu.model + ")";
      c.add(ProblemSeverity::warning, ProblemKind::host, "cpu_target",
            fmt::format(
                "{} lacks {} that a {} build uses; the import check will stop with an illegal "
                "instruction here and must run on a {} machine",
                host, join(missing, ", "), t->name, t->name),
            "build on a host with that CPU, or choose a lower --cpu-target");
    }
  }
  if (c.same_platform() && t->platform == "x86_64" &&
      c.host.cpu.isa_level.rfind("x86-64-v", 0) == 0) {
    int host_level = c.host.cpu.isa_level.back() - '0';
    if (host_level < t->level)
      c.add(ProblemSeverity::warning, ProblemKind::host, "cpu_target",
            fmt::format(
                "this host is {}; a {} build will not import here (illegal instruction), so the "
                "import check must run on a {} machine",
                c.host.cpu.isa_level, t->name, t->name),
            "build on a host with that CPU level, or accept that verification runs elsewhere");
  }
}

void resolve_features(Context& c, const probe::CudaToolkit* tk) {
  auto& p = c.plan;
  for (const auto& [name, on] : p.variant.features) {
    const FeatureSwitch* f = c.catalog.find_feature(name);
    if (!f) {
      std::vector<std::string> known;
      std::string nearest;
      size_t best = 99;
      for (const auto& k : c.catalog.features) {
        known.push_back(k.name);
        size_t d = edit_distance(to_lower(name), k.name);
        if (d < best) best = d, nearest = k.name;
      }
      c.input_error("features",
                    fmt::format("unknown feature '{}'{}", name,
                                best <= 3 ? " (did you mean " + nearest + "?)" : ""),
                    "features: " + join(known, ", "));
      continue;
    }
    if (on && f->needs_cuda && !p.cuda)
      c.input_error("features", fmt::format("{} needs CUDA, but this is a CPU-only build", f->name),
                    fmt::format("drop --with {} or choose --cuda", f->name));
    if (on && !f->builds_on(p.platform))
      c.input_error("features",
                    fmt::format("{} cannot be built for {} (only {})", f->name, p.platform,
                                join(f->platforms, ", ")),
                    fmt::format("drop --with {}", f->name));
  }
  for (const auto& f : c.catalog.features) {
    auto it = p.variant.features.find(f.name);
    bool on = it != p.variant.features.end() ? it->second : f.default_on(p.platform);
    if (f.needs_cuda && !p.cuda) on = false;
    if (!f.builds_on(p.platform)) on = false;
    p.features[f.name] = on;
    // Off by this default where the official wheels build it: say so, and how to choose.
    if (auto note = f.off_notes.find(p.platform);
        !on && it == p.variant.features.end() && note != f.off_notes.end())
      p.notes.push_back(note->second);
  }
  if (p.cuda && p.features["cudnn"] && tk && tk->cudnn_version.empty() && c.same_platform()) {
    bool asked = p.variant.features.count("cudnn") > 0;
    c.host_problem(
        "features",
        fmt::format("cuDNN is {} but was not found for CUDA {} ({})",
                    asked ? "asked for" : "on by default", p.cuda_text(), tk->root),
        fmt::format(
            "apt-get install libcudnn9-dev-cuda-{} (NVIDIA's repository), or --without cudnn",
            p.cuda_version->major));
  }
}

void resolve_blas_and_type(Context& c) {
  auto& p = c.plan;
  std::string blas = to_lower(p.variant.blas.value_or("openblas"));
  if (blas == "openblas")
    p.blas = "OpenBLAS";
  else if (blas == "mkl")
    p.blas = "MKL";
  else
    c.input_error("blas", fmt::format("unknown BLAS '{}'", *p.variant.blas),
                  "choose openblas or mkl");
  if (p.blas == "MKL" && p.platform == "aarch64")
    c.input_error("blas", "MKL is x86_64-only", "use --blas openblas on aarch64");
  std::string bt = p.variant.build_type.value_or("Release");
  const std::string types[] = {"Release", "RelWithDebInfo", "Debug", "MinSizeRel"};
  auto it = std::find_if(std::begin(types), std::end(types),
                         [&](const std::string& t) { return to_lower(t) == to_lower(bt); });
  if (it == std::end(types))
    c.input_error("build_type", fmt::format("unknown build type '{}'", bt),
                  "choose Release, RelWithDebInfo, Debug or MinSizeRel");
  else
    p.build_type = *it;
  if (p.variant.compress) {
    std::string m = to_lower(*p.variant.compress);
    if (m != "size" && m != "speed" && m != "none")
      c.input_error("compress", fmt::format("unknown fatbin compression '{}'", *p.variant.compress),
                    "choose size, speed or none");
    else if (!p.cuda)
      c.input_error("compress", "fatbin compression applies only to CUDA builds",
                    "drop --compress or choose --cuda");
  }
}

void resolve_manylinux(Context& c) {
  auto& p = c.plan;
  if (p.variant.manylinux) {
    p.manylinux = normalize_manylinux(*p.variant.manylinux);
    auto parts = split_any(p.manylinux, "_");
    if (parts.size() != 2 || parts[0] != "2")
      c.input_error("manylinux",
                    fmt::format("manylinux tag '{}' is not like 2_28", *p.variant.manylinux),
                    "e.g. --manylinux 2_28");
  } else {
    p.manylinux = manylinux_from_glibc(c.host.os.glibc);
    if (p.manylinux.empty()) p.manylinux = "2_28";
    if (!c.same_platform())
      p.notes.push_back(
          fmt::format("manylinux_{} assumed from this host's glibc; the real tag is decided by the "
                      "glibc of the {} build host",
                      p.manylinux, p.platform));
  }
  // A problem of this host, not of the variant: `plan` describes a build that its fix (an
  // image of that glibc, `--format dockerfile`) can run elsewhere, so there it warns.
  if (c.same_platform())
    for (auto& pr : check_glibc_for_manylinux(c.host.os.glibc, p.manylinux, c.catalog)) {
      pr.severity = c.host_severity();
      c.plan.problems.push_back(std::move(pr));
    }
}

}  // namespace

bool TorchPlan::has_errors() const {
  return std::any_of(problems.begin(), problems.end(),
                     [](const auto& p) { return p.severity == ProblemSeverity::error; });
}

int TorchPlan::exit_code() const {
  bool input = false, host = false;
  for (const auto& p : problems) {
    if (p.severity != ProblemSeverity::error) continue;
    (p.kind == ProblemKind::input ? input : host) = true;
  }
  return input ? 2 : host ? 1 : 0;
}

std::string manylinux_from_glibc(std::string_view glibc) {
  auto parts = split_any(glibc, ".");
  if (parts.size() < 2) return "";
  for (const auto& part : parts)
    if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos) return "";
  return parts[0] + "_" + parts[1];
}

namespace {

// The platform: --platform, else what the GPUs imply (a GPU or instance that exists on one
// platform only implies that platform and its CPU), else this host's. With no --arch and
// no --platform, the GPUs of this host speak for the build (a T4G here means an AWS g5g:
// aarch64 with Graviton2).
void resolve_platform(Context& c) {
  TorchPlan& plan = c.plan;
  const TorchVariant& variant = plan.variant;
  const probe::HostReport& host = c.host;
  plan.host_platform = normalize_platform(!host.os.arch.empty() ? host.os.arch : host.cpu.arch);
  plan.platform = variant.platform ? normalize_platform(*variant.platform) : plan.host_platform;
  std::vector<std::string> gpu_names = variant.arch;
  gpu_names.insert(gpu_names.end(), variant.gpu.begin(), variant.gpu.end());
  if (gpu_names.empty() && !variant.platform)
    for (const auto& g : host.gpus) gpu_names.push_back(g.name);
  if (auto implied = implied_platform(gpu_names); !implied) {
    c.input_error("platform", implied.error().message, "name GPUs of one platform per variant");
  } else if (*implied) {
    c.implied = **implied;
    if (!variant.platform) {
      plan.platform = c.implied->platform;
      plan.notes.push_back(
          fmt::format("platform {} implied by {}", c.implied->platform, c.implied->source));
    } else if (plan.platform != c.implied->platform) {
      c.input_error(
          "platform",
          fmt::format("platform {} conflicts with {}, which exists only on {}", *variant.platform,
                      c.implied->source, c.implied->platform),
          fmt::format("drop --platform (the GPU implies {}), or name a GPU that {} machines carry",
                      c.implied->platform, plan.platform));
    }
  }
  if (plan.platform != "x86_64" && plan.platform != "aarch64") {
    c.input_error("platform",
                  fmt::format("unknown platform '{}'", variant.platform.value_or(plan.platform)),
                  "choose x86_64 or aarch64");
    plan.platform = plan.host_platform;
  }
  c.take(check_platform(plan.platform, plan.host_platform, c.options.purpose));
}

// The host compilers the build's nvcc takes: the installed toolkit's own limits
// (include/crt/host_config.h), else what the data knows of that CUDA's nvcc.
void resolve_host_compiler(Context& c, const TorchRelease& rel, const probe::CudaToolkit* tk) {
  TorchPlan& plan = c.plan;
  probe::CudaToolkit nvcc = tk ? *tk : probe::CudaToolkit{};
  nvcc.release = plan.cuda_version.value_or(cuda::CudaVersion{});
  if (!nvcc.max_gcc_major && plan.cuda_version)
    if (int known = c.catalog.max_gcc_for(*plan.cuda_version); known > 0)
      nvcc.max_gcc_major = known;
  ProblemSeverity sev = c.same_platform() ? c.host_severity() : ProblemSeverity::warning;
  plan.min_gcc = rel.min_gcc;
  plan.max_gcc = nvcc.max_gcc_major.value_or(0);
  auto choice = choose_host_compiler(c.host, rel.min_gcc, nvcc, sev, plan.problems);
  plan.host_compiler = choice.cxx.empty() ? "/usr/bin/g++" : choice.cxx;
}

// The jobs (the estimate's, or --jobs with the estimate beside it) and what the build
// takes at that count.
void resolve_jobs(Context& c) {
  TorchPlan& plan = c.plan;
  const auto& options = c.options;
  EstimateInput est{plan.cuda,
                    plan.targets,
                    plan.features["flash-attention"],
                    plan.variant.compress ? to_lower(*plan.variant.compress)
                                          : (plan.cuda && plan.cuda_version &&
                                                     *plan.cuda_version >= cuda::CudaVersion{13, 0}
                                                 ? "size"
                                                 : ""),
                    c.host.memory.usable,
                    c.host.cpu.build_cores()};
  estimate_jobs(est, c.catalog.estimates, plan);
  if (options.jobs) {
    if (*options.jobs < 1) {
      c.input_error("jobs", fmt::format("--jobs {}: must be at least 1", *options.jobs),
                    "e.g. --jobs 4");
    } else {
      plan.jobs_reason =
          fmt::format("--jobs {} (tailor's estimate: {})", *options.jobs, plan.jobs_reason);
      plan.jobs = *options.jobs;
    }
  }
  estimate_outputs(est, c.catalog.estimates, plan.jobs, plan.estimate);
}

// The wheel's file name, and the plan's name (the variant's, else after the wheel).
void name_wheel(TorchPlan& plan) {
  std::string py_tag = "cp" + [&] {
    std::string s = plan.python_version;
    s.erase(std::remove(s.begin(), s.end(), '.'), s.end());
    return s;
  }();
  plan.wheel_name = fmt::format("torch-{}-{}-{}-manylinux_{}_{}.whl", plan.wheel_version, py_tag,
                                py_tag, plan.manylinux, plan.platform);
  plan.name =
      !plan.variant.name.empty() ? plan.variant.name : fmt::format("torch-{}", plan.wheel_version);
}

// The notes every plan ends with; then every suggested command in the problems' fixes and
// the notes asks for this same plan: the user's flags, resolved.
void add_closing_notes(TorchPlan& plan) {
  plan.notes.push_back(
      fmt::format("PYTORCH_BUILD_VERSION carries the local label ({}): torch's "
                  "tools/generate_torch_version.py uses it as the whole version, so {} alone "
                  "would give a wheel without +{}",
                  plan.wheel_version, plan.torch_version, wheel_label(plan)));
  if (plan.cuda)
    plan.notes.push_back(
        "FORCE_CUDA is not set: it is read by extension packages, not by PyTorch's own build");
  plan.notes.push_back("MAX_JOBS: " + plan.jobs_reason);
  if (!plan.for_this_host())
    plan.notes.push_back(fmt::format(
        "MAX_JOBS, CUDA_HOME, the compiler and the Python interpreter above were resolved on "
        "this host; the --format sh script finds and counts them again on the machine it runs "
        "on (PYTHON, CUDA_HOME, CUDAHOSTCXX and MAX_JOBS override), and `tailor plan {}` on the {} "
        "build host gives its own values",
        k_plan_flags_placeholder, plan.platform));
  const std::string flags = plan_command_flags(plan);
  auto fill = [&](std::string& text) {
    for (size_t pos; (pos = text.find(k_plan_flags_placeholder)) != std::string::npos;)
      text.replace(pos, k_plan_flags_placeholder.size(), flags);
  };
  for (auto& pr : plan.problems) fill(pr.fix);
  for (auto& note : plan.notes) fill(note);
}

}  // namespace

TorchPlan resolve_torch_plan(const TorchVariant& variant, const probe::HostReport& host,
                             const ResolveOptions& options) {
  TorchPlan plan;
  plan.variant = variant;
  Context c{torch_catalog(), host, options, plan};
  resolve_platform(c);
  const TorchRelease* rel = resolve_release(c);
  if (rel) plan.requirements = rel->requirements;
  resolve_python(c, rel);
  const probe::CudaToolkit* tk = resolve_cuda(c, rel);
  resolve_targets(c);
  resolve_cpu_target(c);
  resolve_features(c, tk);
  resolve_blas_and_type(c);
  resolve_manylinux(c);
  if (plan.cuda && rel) resolve_host_compiler(c, *rel, tk);
  resolve_jobs(c);
  build_env(c, tk);
  name_wheel(plan);
  build_layout(c);
  resolve_system_libraries(c);
  resolve_cache(c);
  build_steps(c, rel);
  plan.run = torch_run_policy(plan, host, options);
  add_closing_notes(plan);
  return plan;
}

}  // namespace tailor::plan
