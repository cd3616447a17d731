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
#include <span>
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
#include "inspect/torch_pin.h"
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
#include "wheelhouse/wheelhouse_fetch.h"
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

namespace {

/// The variants the driver said it built (builder/driver_events.h checks each is its
/// target's own) of the targets that were requested.
std::map<std::string, std::string> requested_variants(
    const std::map<std::string, std::string>& said, const std::vector<std::string>& requested) {
  std::map<std::string, std::string> out;
  for (const auto& [target, variant] : said)
    if (std::find(requested.begin(), requested.end(), target) != requested.end())
      out[target] = variant;
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
  for (auto it = fs::recursive_directory_iterator(
           source_dir, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator() && seen < 4000; it.increment(ec)) {
    const fs::path& p = it->path();
    const std::string name = p.filename().string();
    if (it->is_directory(ec)) {
      if (name.starts_with(".") || name == "build" || name == "dist" || name == "venv")
        it.disable_recursion_pending();
      continue;
    }
    ++seen;
    const bool top = p.parent_path() == fs::path(source_dir);
    if ((top && name.ends_with(".py") && !name.starts_with("tailor-")) ||
        name == "CMakeLists.txt" || name.ends_with(".cmake"))
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
      if (line.find(token) != std::string::npos && !trim(line).starts_with("#") &&
          std::regex_search(line, word))
        return fmt::format("{}:{}", fs::relative(p, source_dir, ec).string(), n);
  }
  return {};
}

/// nvcc refused a target nobody asked for: the package chose it. The fix names the
/// package's file and line, never an arch list the user did not give.
void name_package_archs(ExtensionBuildState& s, bool kept) {
  static const std::regex arch_token("\\b(compute|sm)_(\\d+[a-z]?)\\b");
  for (auto& d : s.result.diagnoses) {
    if (d.pattern_id != "nvcc-unsupported-arch" && d.pattern_id != "nvcc-unsupported-gpu-name")
      continue;
    std::smatch m;
    if (!std::regex_search(d.quoted_line, m, arch_token)) continue;
    const std::string sm = "sm_" + m[2].str();
    const auto& asked = s.result.report.targets;
    if (std::find(asked.begin(), asked.end(), sm) != asked.end()) continue;
    std::string where = package_line_with(s.source_dir, m[0].str());
    if (where.empty())
      where =
          package_line_with(s.source_dir, (m[1].str() == "sm" ? "compute_" : "sm_") + m[2].str());
    const std::string whose =
        where.empty() ? std::string("the package's own build") : "the package's " + where;
    d.cause = fmt::format(
        "{} asks for {} itself (the request was {}), and this nvcc cannot generate code for it.",
        whose, m[0].str(), join(asked, ", "));
    d.fix =
        kept ? fmt::format(
                   "Build without --keep-package-archs, so the requested targets replace the "
                   "package's; "
                   "or edit {}.",
                   where.empty() ? "the package's target flags" : where)
             : fmt::format(
                   "tailor replaces the targets a package sets in setup.py's nvcc flags, "
                   "TORCH_CUDA_ARCH_LIST and CMake's CUDA_ARCHITECTURES, but not this one: edit {} "
                   "(or use a CUDA toolkit that still supports {}).",
                   where.empty() ? "the package's target flags" : where, m[0].str());
  }
}

}  // namespace

// 3. Source into the work folder, the plan, its patches.
builder::StepResult prepare_build(const ExtensionBuildOptions& o, ExtensionBuildContext& ctx,
                                  ExtensionBuildState& s) {
  outputs::BuildReport& rep = s.result.report;
  plan::ExtensionBuildRequest& req = s.request;
  status(o, fmt::format("==> preparing source {} in {}", rep.source, s.work_dir));
  auto src = source::prepare_source(s.spec, s.work_dir, rep.python, ctx.runner);
  if (!src)
    return stop(
        s.spec.kind == source::SourceKind::sdist || s.spec.kind == source::SourceKind::directory
            ? builder::BuildStatus::bad_input
            : builder::BuildStatus::build_failed,
        src.error().message);
  s.source_dir = *src;
  if (o.package.empty() && s.spec.kind != source::SourceKind::directory &&
      s.spec.kind != source::SourceKind::example) {
    std::string declared = source::detect_package_name(*src);
    if (!declared.empty() &&
        plan::normalise_dist_name(declared) != plan::normalise_dist_name(s.package)) {
      s.package = declared;
      req.package_name = s.package;
    }
  }
  rep.package = s.package;
  req.source_dir = *src;
  {
    auto epoch_var = ctx.environment.find("SOURCE_DATE_EPOCH");
    auto epoch_env = source::source_date_epoch_from_env(
        epoch_var == ctx.environment.end() ? nullptr : epoch_var->second.c_str());
    if (!epoch_env) return stop(builder::BuildStatus::bad_input, epoch_env.error().message);
    auto identity = source::identify_source(s.spec, *src, s.work_dir, ctx.runner, *epoch_env);
    if (!identity)
      return stop(builder::BuildStatus::build_failed,
                  "identifying the source: " + identity.error().message);
    s.identity = std::move(*identity);
  }
  if (auto stopped = prepare_cross(o, ctx, s)) return stopped;
  auto p = plan::resolve_extension_build(req, s.host);
  if (!p) return stop(builder::BuildStatus::bad_input, p.error().message);
  s.build_plan = *p;
  rep.recipe = p->recipe_name.empty() ? s.recipe->name : p->recipe_name;
  if (auto patched = plan::apply_patches(*p, *src); !patched)
    return stop(builder::BuildStatus::build_failed,
                "patching the source: " + patched.error().message);
  rep.env = p->env;
  rep.unset_env = p->unset_env;
  if (auto stopped = bridge_removed_apis(o, s)) return stopped;
  // The compilers preflight chose because the caller's links the C++ runtime statically.
  for (const char* var : {"CXX", "CC", "CUDAHOSTCXX", "NVCC_CCBIN"})
    if (auto it = req.environment.find(var), was = ctx.environment.find(var);
        it != req.environment.end() &&
        (was == ctx.environment.end() || was->second != it->second) && !rep.env.count(var))
      rep.env[var] = it->second;
  {
    auto wrapped = wrap_cached_compilers(p->cached_compilers,
                                         (fs::path(s.work_dir) / "compiler-wrappers").string());
    if (!wrapped) return stop(builder::BuildStatus::build_failed, wrapped.error().message);
    for (const auto& [var, wrapper] : *wrapped) rep.env[var] = wrapper;
  }
  if (s.toolkit && !rep.env.count("CUDA_HOME")) rep.env["CUDA_HOME"] = s.toolkit->root;
  s.build_plan.run.reproducible = plan::Reproducibility{
      s.identity->source_date_epoch, *src, p->cache.tool != CacheTool::sccache,
      s.toolkit ? std::optional(s.toolkit->release) : std::nullopt};
  for (const auto& file : p->helper_files) {
    // The build driver's package is a folder beside the source.
    std::error_code ec;
    fs::create_directories(fs::path(file.path).parent_path(), ec);
    if (auto written = write_file_atomic(file.path, file.text); !written)
      return stop(builder::BuildStatus::build_failed,
                  "writing " + file.path + ": " + written.error().message);
  }
  rep.jobs = p->jobs;
  rep.jobs_reason = p->jobs_reason;
  return std::nullopt;
}

namespace {
// --wheelhouse: the published wheel of this build's inputs (those its provenance records)
// into the staging folder the build would have written, or nothing and the build goes on.
builder::StepResult fetch_from_wheelhouse(const ExtensionBuildOptions& o, ExtensionBuildState& s) {
  outputs::BuildReport& rep = s.result.report;
  if (!s.identity) return std::nullopt;
  outputs::BuildProvenance here;
  outputs::fill_provenance_toolchain(here, rep.toolchain);
  wheelhouse::BuildInputs inputs{rep.package,
                                 s.identity->digest,
                                 rep.targets,
                                 here.toolchain["torch"],
                                 here.toolchain["nvcc"],
                                 here.toolchain["python"],
                                 rep.recipe,
                                 o.profile};
  // The staging folder starts empty, as the build's own run makes it (plan's fresh_dir).
  std::error_code ec;
  fs::remove_all(s.request.out_dir, ec);
  fs::create_directories(s.request.out_dir, ec);
  if (ec) return stop(builder::BuildStatus::build_failed, s.request.out_dir + ": " + ec.message());
  std::string why_not;
  auto fetched =
      wheelhouse::fetch_matching_wheel(*s.wheelhouse_store, inputs, s.request.out_dir, why_not);
  if (!fetched)
    return stop(builder::BuildStatus::bad_input, "--wheelhouse: " + fetched.error().message);
  if (!fetched->has_value()) {
    status(o, fmt::format("==> wheelhouse {}: nothing for these inputs ({}); building",
                          s.wheelhouse, why_not));
    return std::nullopt;
  }
  rep.wheel_from = (*fetched)->origin;
  const std::string line =
      fmt::format("==> fetched {} from the wheelhouse (sha256 {}): nothing to compile",
                  fs::path((*fetched)->path).filename().string(), (*fetched)->sha256.substr(0, 16));
  status(o, line);
  // The log published beside the wheel says where it came from (no compile wrote one).
  rep.log_path = (fs::path(s.work_dir) / "wheelhouse-fetch.log").string();
  auto logged = write_file_atomic(rep.log_path, fmt::format("{}\nfrom {} (sha256 {})\n", line,
                                                            rep.wheel_from, (*fetched)->sha256));
  if (!logged) return stop(builder::BuildStatus::build_failed, logged.error().message);
  return std::nullopt;
}
}  // namespace

// 4. Build: the plan through the one builder (builder/run_plan.h).
builder::StepResult run_build(const ExtensionBuildOptions& o, ExtensionBuildContext& ctx,
                              ExtensionBuildState& s) {
  outputs::BuildReport& rep = s.result.report;
  if (s.wheelhouse_store) {  // opened with the build's settings (read_build_config)
    if (auto fetched = fetch_from_wheelhouse(o, s); fetched || !rep.wheel_from.empty())
      return fetched;
  }
  plan::ExtensionBuildPlan p = s.build_plan;
  p.env = rep.env;
  p.unset_env = rep.unset_env;
  p.jobs = rep.jobs;
  p.jobs_reason = rep.jobs_reason;
  builder::BuildSession session = ctx.session(o, rep);
  // A copy of the user's folder is built: the diagnosis names the user's files.
  std::error_code ec;
  if ((rep.source_kind == "directory" || rep.source_kind == "example") &&
      fs::is_directory(rep.source, ec))
    session.diagnose_source_dir = fs::absolute(rep.source, ec).lexically_normal().string();
  builder::PlanRun run = builder::run_plan(p, session);
  for (auto& check : run.preflight) s.result.preflight.checks.push_back(std::move(check));
  if (!run.outcome) return run.stop;
  // What the build driver said it did (its events, builder/driver_events.h).
  const builder::DriverFacts& driver = run.outcome->facts.driver;
  rep.split_compile = driver.split_compile;
  rep.package_choices = driver.choices;
  for (const auto& change : driver.compat) rep.package_choices.push_back(change);
  rep.package_variants = requested_variants(driver.variants, rep.targets);
  rep.split_units = driver.split_units;
  for (auto& j : rep.job_timeline)
    for (const auto& [unit, k] : rep.split_units)
      if (j.kind == "cu" && (j.input == unit || j.input.ends_with("/" + unit))) j.split = k;
  if (rep.split_compile > 0)
    for (auto& j : rep.job_timeline)
      if (j.kind == "cu") j.split = rep.split_compile;
  rep.duration_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - s.started).count();
  if (run.stop) {
    s.result.error_block = std::move(run.error_block);
    s.result.diagnoses = std::move(run.diagnoses);
    name_package_archs(s, o.keep_package_archs);
    name_known_removals(o, s, run.outcome->facts.tail);
  }
  return run.stop;
}

namespace {
// The check line of the search-path rewrite: what left each library, or that nothing had to.
outputs::CheckResult search_path_check(const std::vector<outputs::SearchPathRemoval>& removals) {
  if (removals.empty())
    return {"search-path", outputs::CheckStatus::passed,
            "no RUNPATH/RPATH entry outside the wheel"};
  std::vector<std::string> parts;
  for (const auto& r : removals)
    parts.push_back(fmt::format("{}: removed {} {}{}", r.member, r.tag, join(r.removed, ":"),
                                r.after.empty() ? "" : fmt::format(" (kept {})", r.after)));
  return {"search-path", outputs::CheckStatus::passed,
          "build machine folders removed from the wheel's libraries: " + join(parts, "; ")};
}
// The torch pin of a wheel whose libraries link torch: the build's torch (the toolchain's
// "2.11.0+cu130 (CUDA 13.0)"), none for a wheel that does not link it.
Expected<std::optional<outputs::TorchPinEdit>> torch_pin_of(const std::string& wheel,
                                                            const outputs::BuildReport& rep) {
  auto it = rep.toolchain.find("torch");
  if (it == rep.toolchain.end()) return std::optional<outputs::TorchPinEdit>();
  auto torch = inspect::parse_torch_build(it->second);
  if (!torch) return std::optional<outputs::TorchPinEdit>();
  TAILOR_TRY(links, outputs::wheel_links_torch(wheel));
  if (!links) return std::optional<outputs::TorchPinEdit>();
  return std::optional<outputs::TorchPinEdit>(outputs::TorchPinEdit{
      inspect::torch_local_label(*torch), inspect::torch_requirement(*torch)});
}
// The built wheel rewritten the same way from any machine (wheel_normaliser), with its torch
// pin when its libraries link torch; `wheel` is its path after (the pin renames it).
builder::StepResult normalise_built_wheel(ExtensionBuildState& s, std::string& wheel) {
  outputs::BuildReport& rep = s.result.report;
  auto pin = torch_pin_of(wheel, rep);
  if (!pin) return stop(builder::BuildStatus::verify_failed, pin.error().message);
  if (*pin) rep.provenance->torch_requirement = (*pin)->requirement;
  auto n = outputs::normalise_wheel(wheel, {s.identity->source_date_epoch,
                                            outputs::provenance_file_text(*rep.provenance),
                                            {},
                                            {},
                                            *pin});
  if (!n) {
    rep.checks.push_back({"search-path", outputs::CheckStatus::failed, n.error().message});
    return stop(builder::BuildStatus::verify_failed,
                "the built wheel cannot be normalised: " + n.error().message);
  }
  wheel = s.wheel = n->path;
  rep.wheel = fs::path(wheel).filename().string();
  rep.checks.push_back(search_path_check(n->search_paths));
  if (*pin)
    rep.checks.push_back(
        {"torch-pin", outputs::CheckStatus::passed,
         fmt::format("the libraries link torch: METADATA requires {}, the version carries +{}",
                     (*pin)->requirement, (*pin)->label)});
  return std::nullopt;
}
}  // namespace

// 5. The wheel, verified against the request.
builder::StepResult verify_wheel(const ExtensionBuildOptions& o, ExtensionBuildContext&,
                                 ExtensionBuildState& s) {
  outputs::BuildReport& rep = s.result.report;
  const plan::ExtensionBuildRequest& req = s.request;
  std::error_code ec;
  std::string wheel;
  for (const auto& e : fs::directory_iterator(req.out_dir, ec))
    if (e.path().extension() == ".whl") wheel = e.path().string();
  if (wheel.empty())
    return stop(builder::BuildStatus::build_failed,
                fmt::format("the build finished but left no wheel in {}", req.out_dir));
  s.wheel = wheel;
  rep.wheel = fs::path(wheel).filename().string();
  auto hash_wheel = [&]() -> StepResult {
    auto mapped = MappedFile::open(wheel);
    if (!mapped) return stop(builder::BuildStatus::build_failed, mapped.error().message);
    rep.sha256 = Sha256::hex(Sha256::of(mapped->bytes()));
    rep.size = mapped->bytes().size();
    return std::nullopt;
  };
  if (auto st = hash_wheel()) return st;
  // Same inputs, same bytes: rewrite the package's wheel deterministically, with provenance
  // (the source identity comes from prepare_build).
  if (s.identity) {
    rep.provenance =
        outputs::make_build_provenance(rep, *s.identity, s.spec, plan::recipe_for(s.package));
    rep.provenance->profile = o.profile;
    rep.provenance->split_units = rep.split_units;
  }
  // A wheel from the wheelhouse is one tailor published as it built it: kept byte for byte.
  if (s.identity && rep.wheel_from.empty()) {
    if (auto st = normalise_built_wheel(s, wheel)) return st;
    if (auto st = hash_wheel()) return st;
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
  auto verification =
      outputs::verify_wheel_targets(wheel, expected, s.build_plan.package_additions);
  if (!verification) return stop(builder::BuildStatus::verify_failed, verification.error().message);
  if (auto st = check_wheel_machine(s, verification->library_machines)) return st;
  rep.bytes_per_target = verification->bytes_per_target;
  // A package with no CUDA source (a CPU extension) has no device code to build: the
  // wheel is right as it is, and the summary says the targets had nothing to apply to. One
  // with CUDA sources and no device code still fails (its CUDA part was skipped).
  const bool no_device_code = !verification->any_device_code && verification->libraries.empty();
  const std::string cuda_source =
      no_device_code ? source::first_cuda_source(s.source_dir) : std::string();
  if (no_device_code && cuda_source.empty()) {
    rep.checks.push_back(
        {"targets", outputs::CheckStatus::warning,
         fmt::format("no device code: {} has no CUDA source (.cu, .cuh), a CPU extension; "
                     "the requested {} had nothing to apply to",
                     s.package, join(rep.targets, ", "))});
  } else {
    const std::string jit = no_device_code ? source::jit_compile_site(s.source_dir) : std::string();
    if (no_device_code && !jit.empty())
      verification->fallback_hint = fmt::format(
          " (the source has CUDA code, e.g. {}, which the package compiles when it is imported: "
          "torch.utils.cpp_extension's load at {}; nothing of it is built ahead of time, so no "
          "wheel carries it: install the package as it is on the GPU machine, where its first "
          "import compiles it, with TORCH_CUDA_ARCH_LIST set to the targets)",
          cuda_source, jit);
    else if (no_device_code)
      verification->fallback_hint = fmt::format(
          " (the source has CUDA code, e.g. {}, but the build compiled none: a setup.py that "
          "builds its "
          "CUDA part only when it finds CUDA or a GPU skipped it)",
          cuda_source);
    if (!verification->ok()) {
      rep.checks.push_back(
          {"targets", outputs::CheckStatus::failed, verification->describe_problems()});
      // One line (the error line escapes control characters): a library's problems a clause each.
      auto lines = split_any(verification->describe_problems(), "\n");
      std::erase_if(lines, [](const std::string& l) { return trim(l).empty(); });
      return stop(builder::BuildStatus::verify_failed,
                  "the wheel's targets differ from the request: " + join(lines, "; "));
    }
    rep.checks.push_back({"targets", outputs::CheckStatus::passed, verification->summary()});
  }
  // What `tailor inspect` would say of this wheel, said here: a failure stops the build, a
  // warning is a check of its own in the summary and the report.
  if (!verification->inspect_failures.empty()) {
    std::string text = join(verification->inspect_failures, "; ");
    rep.checks.push_back({"inspect", outputs::CheckStatus::failed, text});
    return stop(builder::BuildStatus::verify_failed, "tailor inspect fails the wheel: " + text);
  }
  rep.checks.push_back(
      verification->inspect_warnings.empty()
          ? outputs::CheckResult{"inspect", outputs::CheckStatus::passed,
                                 "no warnings (RECORD, manylinux tag, search paths)"}
          : outputs::CheckResult{"inspect", outputs::CheckStatus::warning,
                                 join(verification->inspect_warnings, "; ")});
  if (!verification->runtime_problems.empty()) {
    // Caught here, before the import test or the package's tests die of it (a segfault
    // on the first exception torch throws): name the compiler that did it.
    std::string text = join(verification->runtime_problems, "; ");
    if (auto cxx = s.request.environment.find("CXX");
        cxx != s.request.environment.end() && !cxx->second.empty())
      text += fmt::format(" [the C++ compiler came from the environment: CXX={}]", cxx->second);
    rep.checks.push_back({"runtime", outputs::CheckStatus::failed, text});
    return stop(builder::BuildStatus::verify_failed,
                "the wheel's C++ runtime does not match torch's: " + text);
  }
  return std::nullopt;
}

// 8. Publish wheel, report and log together; an interrupted run publishes nothing.
builder::StepResult publish_outputs(const ExtensionBuildOptions& o, ExtensionBuildContext&,
                                    ExtensionBuildState& s) {
  outputs::BuildReport& rep = s.result.report;
  rep.duration_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - s.started).count();
  auto published = outputs::publish_build(o.out_dir, rep, s.wheel);
  if (!published) return stop(builder::BuildStatus::build_failed, published.error().message);
  s.result.published = *published;
  s.result.status = builder::BuildStatus::ok;
  return std::nullopt;
}

}  // namespace tailor::workflow
