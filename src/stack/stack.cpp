// run_stack: resolve with pip, download and inspect the wheels that may carry device code,
// decide each package's outcome.
#include "stack/stack.h"
#include "stack/stack_cache.h"

#include <gnu/libc-version.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cuda/arch_spec.h"
#include "cuda/compatibility.h"
#include "cuda/cuda_version.h"
#include "cuda/target_request.h"
#include "cuda/target_set.h"
#include "cuda/gpu_platform.h"
#include "cuda/torch_wheels.h"
#include "formats/wheel.h"
#include "inspect/cuda_providers.h"
#include "inspect/inspect_report.h"
#include "inspect/verdicts.h"
#include "plan/extension_recipe.h"
#include "probe/gpu_query.h"
#include "probe/probe.h"
#include "util/files.h"
#include "util/interrupt.h"
#include "util/sha256.h"
#include "util/strings.h"
#include "util/version.h"

namespace fs = std::filesystem;

namespace tailor::stack {

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

constexpr auto k_pip_timeout = std::chrono::minutes(20);


std::string normalise_machine(std::string m) {
  if (m == "arm64") return "aarch64";
  if (m == "amd64") return "x86_64";
  return m;
}

Expected<CommandResult> run_checked(CommandRunner& runner, CommandSpec spec, const std::string& what) {
  auto r = runner.run(spec);
  if (r.interrupted) return make_error("interrupted");
  if (!r.started) return make_error(fmt::format("{}: cannot run {}", what, spec.argv.empty() ? "" : spec.argv[0]));
  if (r.timed_out) return make_error(what + ": timed out");
  return r;
}

/// The requirement's distribution name (normalised): "torch>=2.9; python_version>'3'" -> "torch".
std::string requirement_name(std::string_view req) {
  static const std::regex re(R"(^\s*([A-Za-z0-9][A-Za-z0-9._-]*))");
  std::cmatch m;
  if (!std::regex_search(req.begin(), req.end(), m, re)) return "";
  return formats::normalize_distribution_name(m[1].str());
}

bool has_extra_marker(std::string_view req) {
  auto semi = req.find(';');
  return semi != std::string_view::npos && req.substr(semi).find("extra") != std::string_view::npos;
}

/// The CUDA major of torch's CUDA ("13.0" -> 13); nullopt for a CPU build.
std::optional<int> cuda_major_of(const std::string& torch_cuda) {
  auto v = cuda::parse_cuda_version(torch_cuda);
  return v ? std::optional<int>(v->major) : std::nullopt;
}

struct Context {
  const StackRequest& request;
  CommandRunner& runner;
  Target target;
  std::string python;        // runs pip
  std::string torch_python;  // --torch PYTHON: its installed torch is part of the stack
  IndexOptions index;
  std::string cache;
  StackResult result;
};

std::vector<std::string> pip_target_argv(const Context& c) {
  nlohmann::json env = {{"platform_machine", c.target.platform},
                        {"python_version", c.target.python},
                        {"python_full_version", c.target.python + ".0"},
                        {"platform_system", "Linux"},
                        {"sys_platform", "linux"},
                        {"os_name", "posix"}};
  if (!c.target.cross) env = nlohmann::json::object();
  return {c.python, "-c", python_helper("pip_target.py"), env.dump()};
}

std::vector<std::string> target_tag_args(const Context& c) {
  std::vector<std::string> args;
  if (!c.target.cross) return args;
  for (const auto& t : pip_platform_tags(c.target)) args.insert(args.end(), {"--platform", t});
  args.insert(args.end(), {"--python-version", c.target.python, "--implementation", "cp"});
  return args;
}

struct PipRun {
  bool ok = false;
  std::vector<ResolvedDist> dists;
  std::string err;
  std::string command;
  bool reused = false;  ///< a stored resolution that still holds (stack_cache.h)
};

PipCacheOptions pip_cache_options(const Context& c) {
  PipCacheOptions o;
  o.dir = (fs::path(c.cache) / "resolutions").string();
  o.refresh = c.request.refresh;
  for (const auto& [k, v] : process_environment())
    if (k.starts_with("PIP_")) o.environment[k] = v;
  o.progress = c.request.progress;
  o.warn = c.request.warn;
  return o;
}

/// One `pip install --dry-run --report` through the target wrapper, or the stored
/// resolution of the same command while the index pages it read are unchanged.
Expected<PipRun> pip_dry_run(Context& c, const std::vector<std::string>& requirements,
                             const std::vector<std::string>& extra_args, bool ignore_installed, bool stored_only = false) {
  fs::path scratch = fs::path(c.cache) / "tmp" / fmt::format("report-{}-{}", ::getpid(), std::rand());
  std::error_code ec;
  fs::create_directories(scratch, ec);
  fs::path report = scratch / "report.json";
  CommandSpec spec;
  spec.argv = pip_target_argv(c);
  // `args` as run; `keyed` the same with this run's own paths left out (the cache's key).
  std::vector<std::string> args = {"install", "--dry-run", "--disable-pip-version-check", "--quiet", "--report", report.string()};
  std::vector<std::string> keyed = {"install", "--dry-run", "--disable-pip-version-check", "--quiet", "--report", "{report}"};
  // pip's own lines say what it is fetching (where an index has no PEP 658 metadata files,
  // every wheel it considers is downloaded whole): shown as progress, else kept quiet.
  if (c.request.progress_detail) {
    args.erase(args.begin() + 3);
    spec.on_line = [&c](std::string_view line) {
      std::string_view t = trim(line);
      if (t.starts_with("Collecting ") || t.starts_with("Downloading ") || t.starts_with("Using cached "))
        c.request.progress_detail("pip: " + std::string(t));
    };
  }
  std::vector<std::string> rest;
  if (ignore_installed) rest.push_back("--ignore-installed");
  if (c.target.cross) {
    args.insert(args.end(), {"--target", (scratch / "target").string()});
    keyed.insert(keyed.end(), {"--target", "{target}"});
  }
  auto tags = target_tag_args(c);
  rest.insert(rest.end(), tags.begin(), tags.end());
  auto idx = c.index.args();
  rest.insert(rest.end(), idx.begin(), idx.end());
  rest.insert(rest.end(), extra_args.begin(), extra_args.end());
  for (const auto& f : c.request.requirement_files) rest.insert(rest.end(), {"-r", f});
  rest.insert(rest.end(), requirements.begin(), requirements.end());
  args.insert(args.end(), rest.begin(), rest.end());
  keyed.insert(keyed.end(), rest.begin(), rest.end());
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.timeout = k_pip_timeout;
  spec.env["PIP_NO_INPUT"] = "1";
  std::vector<std::string> key_argv = pip_target_argv(c);
  key_argv.insert(key_argv.end(), keyed.begin(), keyed.end());
  PipRun run;
  // The command as recorded (--json) is the same with and without progress.
  std::vector<std::string> recorded = args;
  if (c.request.progress_detail) recorded.insert(recorded.begin() + 3, "--quiet");
  run.command = "pip " + join(recorded, " ");
  auto options = pip_cache_options(c);
  options.stored_only = stored_only;
  auto r = resolve_with_cache(c.runner, spec, report.string(), key_argv, scratch.string(), options);
  fs::remove_all(scratch, ec);
  if (!r) return r.error();
  run.err = r->output;
  run.reused = r->reused;
  if (r->ok) {
    TAILOR_TRY(dists, parse_pip_report(r->report));
    run.ok = true;
    run.dists = std::move(dists);
  }
  return run;
}

Expected<std::string> interpreter_facts(CommandRunner& runner, const std::string& python, std::string& machine,
                                        std::string* executable) {
  CommandSpec spec;
  spec.argv = {python, "-c",
               "import platform,sys; print(platform.machine()); print('%d.%d' % sys.version_info[:2]); print(sys.executable)"};
  spec.timeout = std::chrono::seconds(30);
  auto r = runner.run(spec);
  if (!r.ok()) return make_error(fmt::format("{}: cannot run this Python{}", python, r.err.empty() ? "" : ": " + std::string(trim(r.err))));
  auto lines = split_any(r.out, "\n");
  if (lines.size() < 2) return make_error(python + ": unexpected output");
  machine = normalise_machine(std::string(trim(lines[0])));
  if (executable && lines.size() >= 3) *executable = std::string(trim(lines[2]));
  return std::string(trim(lines[1]));
}

// ---- decisions ------------------------------------------------------------------------
std::string targets_text(const std::vector<std::string>& targets) { return targets.empty() ? "no device code" : join(targets, " "); }

std::string needs_text(const cuda::ComputeCapability& cc) {
  return fmt::format("sm_{} (or an older sm_{}x) or PTX <= {}", cc.number(), cc.major, cc.str());
}

void decide_torch(Context& c, Row& row, const ResolvedDist& d, const std::vector<ResolvedDist>& all) {
  stack::decide_torch(c.target, c.request.cuda, d, all, row, c.result.torch);
}

void decide_runtime(Context& c, Row& row, const ResolvedDist& d) {
  row.kind = Kind::cuda_runtime;
  std::string major = cuda_runtime_major(d.key, d.version);
  row.reason = major.empty() ? "NVIDIA CUDA library" : fmt::format("NVIDIA CUDA {} library", major);
  auto torch_major = cuda_major_of(c.result.torch.cuda);
  if (!major.empty() && torch_major && std::to_string(*torch_major) != major)
    c.result.notes.push_back(fmt::format("{} {} is a CUDA {} library next to torch's CUDA {}", d.name, d.version, major,
                                         c.result.torch.cuda));
}

/// The CUDA majors a library's CUDA runtime needs name ("12" for libcudart.so.12).
std::set<std::string> cuda_majors_of(const inspect::InspectedLibrary& lib) {
  std::set<std::string> out;
  for (const auto& n : lib.needed_libraries) {
    if (n.kind != inspect::NeededKind::cuda_runtime) continue;
    auto match = inspect::CudaProviders::get().match(n.soname);
    if (match)
      for (const auto* p : match->providers) out.insert(p->cuda);
  }
  return out;
}

/// The reason a wheel cannot be used on the target (empty when it can), from its inspection.
/// A wheel may carry one library per CUDA major and load the one for torch's CUDA at run
/// time (bitsandbytes): libraries built for another CUDA major are set aside, and the rest
/// must run on every target GPU.
std::string judge_wheel(Context& c, Row& row, const inspect::WheelReport& wheel) {
  row.targets = wheel.target_names();
  bool device = !row.targets.empty();
  row.kind = device ? Kind::cuda : (wheel.libraries.empty() ? Kind::pure : Kind::native);
  auto torch_major = cuda_major_of(c.result.torch.cuda);
  std::string torch_cuda = torch_major ? std::to_string(*torch_major) : "";
  inspect::WheelReport usable = wheel;
  usable.libraries.clear();
  std::set<std::string> other_majors;
  size_t cuda_linked = 0;
  for (const auto& lib : wheel.libraries) {
    auto majors = cuda_majors_of(lib);
    if (!majors.empty()) ++cuda_linked;
    if (!torch_cuda.empty() && !majors.empty() && !majors.count(torch_cuda)) {
      other_majors.insert(majors.begin(), majors.end());
      continue;
    }
    usable.libraries.push_back(lib);
  }
  std::vector<std::string> problems;
  if (cuda_linked > 0 && !other_majors.empty() &&
      std::none_of(usable.libraries.begin(), usable.libraries.end(),
                   [](const auto& l) { return !l.targets.empty() || !cuda_majors_of(l).empty(); }))
    problems.push_back(fmt::format("its libraries are for CUDA {}; torch uses CUDA {}",
                                   join(std::vector<std::string>(other_majors.begin(), other_majors.end()), ", "), c.result.torch.cuda));
  // Does every (usable) library with device code run on every target GPU?
  std::set<cuda::FatbinCode> usable_codes;  // canonical order (cuda::FatbinCode's)
  for (const auto& l : usable.libraries)
    for (const auto& t : l.targets) usable_codes.insert(t.code);
  if (device && problems.empty() && !usable_codes.empty()) {
    inspect::InspectReport report;
    report.wheels.push_back(usable);
    inspect::VerdictTargets gpus;
    gpus.devices = c.target.gpus;
    auto verdicts = inspect::evaluate(report, gpus);
    row.covers = "yes";
    if (verdicts) {
      for (const auto& v : verdicts->items) {
        if (v.pass) continue;
        row.covers = "no";
        std::string lib = v.library.substr(v.library.find('!') == std::string::npos ? 0 : v.library.find('!') + 1);
        std::vector<std::string> has;
        for (const auto& l : usable.libraries)
          if (l.path == lib || wheel.path + "!" + l.path == v.library)
            for (const auto& t : l.targets) has.push_back(t.name);
        problems.push_back(fmt::format("{} has {}; {} needs {}", fs::path(lib).filename().string(), targets_text(has),
                                       v.device.str(), needs_text(v.device)));
        break;
      }
    }
  } else if (device && !problems.empty()) {
    row.covers = "no";
  }
  // The C++ ABI of a library that links torch must be torch's.
  for (const auto& lib : usable.libraries) {
    bool links_torch = std::any_of(lib.needed_libraries.begin(), lib.needed_libraries.end(),
                                   [](const inspect::NeededLibrary& n) { return n.kind == inspect::NeededKind::torch; });
    if (links_torch && lib.cxx11_abi && c.result.torch.cxx11_abi && *lib.cxx11_abi != *c.result.torch.cxx11_abi) {
      problems.push_back(fmt::format("{} uses the {} C++ ABI; torch {} uses the {}", fs::path(lib.path).filename().string(),
                                     *lib.cxx11_abi ? "C++11" : "old", c.result.torch.version, *c.result.torch.cxx11_abi ? "C++11" : "old"));
      break;
    }
  }
  if (!problems.empty()) return join(problems, "; ");
  if (device) {
    std::vector<std::string> usable_targets;
    for (const auto& code : usable_codes) usable_targets.push_back(code.name());
    row.reason = fmt::format("has {}; runs on {}", join(usable_targets, " "), c.target.gpu_label());
    if (!other_majors.empty())
      row.reason += fmt::format(" (with CUDA {}; also carries builds for CUDA {})", c.result.torch.cuda,
                                join(std::vector<std::string>(other_majors.begin(), other_majors.end()), ", "));
  } else {
    row.reason = row.kind == Kind::native ? "native code, no CUDA device code" : "pure Python";
  }
  return "";
}

/// The cache path of a file with this sha256.
fs::path cache_path(const Context& c, const std::string& sha256, const std::string& filename) {
  return fs::path(c.cache) / "files" / sha256.substr(0, 2) / sha256 / filename;
}

Expected<std::string> file_sha256(const fs::path& path) {
  TAILOR_TRY(digest, Sha256::of_file(path.string()));
  return Sha256::hex(digest);
}

/// Brings these files into the cache (pip download, sha256 checked); returns the paths.
Expected<std::map<std::string, fs::path>> fetch_into_cache(Context& c, const std::vector<const ResolvedDist*>& dists) {
  std::map<std::string, fs::path> out;
  std::vector<const ResolvedDist*> missing;
  for (const auto* d : dists) {
    if (is_sha256_hex(d->sha256) && fs::exists(cache_path(c, d->sha256, d->filename))) {
      out[d->key] = cache_path(c, d->sha256, d->filename);
      ++c.result.cache_hits;
    } else {
      missing.push_back(d);
    }
  }
  if (missing.empty()) return out;
  if (c.request.progress) {
    std::vector<std::string> names;
    for (const auto* d : missing)
      if (names.size() < 3) names.push_back(d->filename);
    if (missing.size() > names.size()) names.push_back(fmt::format("{} more", missing.size() - names.size()));
    c.request.progress(fmt::format("downloading {} file{} with pip: {}", missing.size(), missing.size() == 1 ? "" : "s", join(names, ", ")));
  }
  fs::path scratch = fs::path(c.cache) / "tmp" / fmt::format("download-{}-{}", ::getpid(), std::rand());
  std::error_code ec;
  fs::create_directories(scratch, ec);
  CommandSpec spec;
  spec.argv = {c.python, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps", "-d", scratch.string()};
  bool all_wheels = std::all_of(missing.begin(), missing.end(), [](const ResolvedDist* d) { return d->wheel; });
  if (all_wheels) {
    spec.argv.push_back("--only-binary=:all:");
    auto tags = target_tag_args(c);
    spec.argv.insert(spec.argv.end(), tags.begin(), tags.end());
  }
  auto idx = c.index.args();
  spec.argv.insert(spec.argv.end(), idx.begin(), idx.end());
  for (const auto* d : missing) spec.argv.push_back(d->url);
  spec.timeout = k_pip_timeout;
  spec.env["PIP_NO_INPUT"] = "1";
  // pip download prepares an sdist's metadata: isolated, that installs its build
  // requirements first (torch and its CUDA libraries for a CUDA extension: gigabytes).
  // Against this interpreter's packages first; isolated when that fails. The file is the
  // same either way (its sha256 is checked below).
  Expected<CommandResult> r = make_error("");
  if (!all_wheels) {
    CommandSpec local = spec;
    local.argv.push_back("--no-build-isolation");
    r = run_checked(c.runner, local, "pip download");
  }
  if (all_wheels || (r && r->exit_code != 0)) {
    fs::remove_all(scratch, ec);
    fs::create_directories(scratch, ec);
    r = run_checked(c.runner, spec, "pip download");
  }
  if (!r) {
    fs::remove_all(scratch, ec);
    return r.error();
  }
  if (r->exit_code != 0) {
    fs::remove_all(scratch, ec);
    return make_error("pip download: " + pip_error_line(r->err + r->out));
  }
  for (const auto* d : missing) {
    fs::path got = scratch / d->filename;
    if (!fs::exists(got)) {
      fs::remove_all(scratch, ec);
      return make_error(fmt::format("pip download did not write {}", d->filename));
    }
    auto hashed = file_sha256(got);
    if (!hashed) {
      fs::remove_all(scratch, ec);
      return hashed.error();
    }
    std::string sha = *hashed;
    if (!d->sha256.empty() && sha != d->sha256) {
      fs::remove_all(scratch, ec);
      return make_error(fmt::format("{}: sha256 {} differs from the index's {}", d->filename, sha, d->sha256));
    }
    fs::path dest = cache_path(c, sha, d->filename);
    fs::create_directories(dest.parent_path(), ec);
    fs::rename(got, dest, ec);
    if (ec) {
      fs::remove_all(scratch, ec);
      return make_error(fmt::format("{}: {}", dest.string(), ec.message()));
    }
    out[d->key] = dest;
    ++c.result.downloads;
  }
  fs::remove_all(scratch, ec);
  return out;
}

/// Finds NAME's sdist (pinned to `version` when given) with pip, --no-deps.
Expected<std::optional<ResolvedDist>> find_sdist(Context& c, const std::string& requirement) {
  // A lookup stored by an earlier run first, isolated or not: the isolated one of a CUDA
  // extension fails each time (its build needs torch), which is never stored.
  for (bool isolated : {true, false}) {
    std::vector<std::string> extra = {"--no-deps", "--no-binary=:all:"};
    if (!isolated) extra.push_back("--no-build-isolation");
    TAILOR_TRY(run, pip_dry_run(c, {requirement}, extra, true, true));
    if (run.ok && !run.dists.empty() && !run.dists.front().wheel) return std::optional<ResolvedDist>(run.dists.front());
  }
  for (bool isolated : {true, false}) {
    std::vector<std::string> extra = {"--no-deps", "--no-binary=:all:"};
    if (!isolated) extra.push_back("--no-build-isolation");
    // pip refuses sdists with --platform unless --no-deps, which is set: the tags stay.
    TAILOR_TRY(run, pip_dry_run(c, {requirement}, extra, true));
    if (run.ok && !run.dists.empty() && !run.dists.front().wheel) return std::optional<ResolvedDist>(run.dists.front());
    // No sdist of the package itself. A build dependency the isolated build could not get
    // (--no-binary=:all: holds for them too: torch for xformers) is not that: the build
    // without isolation, against this interpreter's packages, may still read the sdist.
    if (unsatisfied_requirement(run.err) == requirement_name(requirement)) return std::optional<ResolvedDist>();
  }
  return std::optional<ResolvedDist>();
}

/// What building from this sdist needs beyond a compiler (Rust, CMake ...), when missing.
std::string build_needs(Context& c, const fs::path& sdist) {
  CommandSpec spec;
  spec.argv = {c.python, "-c", python_helper("sdist_build_system.py"), sdist.string()};
  spec.timeout = std::chrono::seconds(60);
  auto r = c.runner.run(spec);
  if (!r.ok()) return "";
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  if (j.is_discarded() || !j.contains("requires")) return "";
  std::vector<std::string> needs;
  for (const auto& req : j["requires"]) {
    if (!req.is_string()) continue;
    std::string name = requirement_name(req.get<std::string>());
    for (const auto& n : facts().build_needs)
      if (name == n.requirement && find_in_path(n.tool).empty())
        needs.push_back(fmt::format("needs {} ({} is not on PATH)", n.what, n.tool));
  }
  std::sort(needs.begin(), needs.end());
  needs.erase(std::unique(needs.begin(), needs.end()), needs.end());
  return join(needs, "; ");
}

/// Turns an unusable or missing wheel into a build from the sdist, or unsupported.
Expected<void> fall_back_to_source(Context& c, Row& row, const std::string& requirement, const std::string& why) {
  std::optional<ResolvedDist> sdist;
  if (!row.sdist_url.empty()) {  // pip resolved it from source already
    sdist = ResolvedDist{row.name, row.key, row.version, row.sdist_url, row.sdist_sha256, row.sdist_file, false, row.requested, {}};
  } else {
    TAILOR_TRY(found, find_sdist(c, requirement));
    sdist = std::move(found);
  }
  if (!sdist) {
    row.buildable = "no";
    row.outcome = Outcome::unsupported;
    row.reason = why + "; no sdist on the index";
    return {};
  }
  TAILOR_TRY(paths, fetch_into_cache(c, {&*sdist}));
  row.buildable = "yes";
  row.outcome = Outcome::build;
  row.sdist_url = sdist->url;
  if (sdist->sha256.empty()) {
    TAILOR_TRY(sha, file_sha256(paths.at(sdist->key)));
    row.sdist_sha256 = sha;
  } else {
    row.sdist_sha256 = sdist->sha256;
  }
  row.sdist_file = paths.at(sdist->key).string();
  if (row.version.empty()) row.version = sdist->version;
  const auto& recipe = plan::recipe_for(row.key);
  row.recipe = recipe.name == "generic" ? "generic" : recipe.name;
  std::string needs = build_needs(c, paths.at(sdist->key));
  row.reason = fmt::format("{}; build from {} ({} recipe){}", why, sdist->filename, row.recipe, needs.empty() ? "" : "; " + needs);
  return {};
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

/// The commands that say what a torch wheel runs on: download it for the target, inspect
/// it with the target's GPUs ("pip download ... URL && tailor inspect FILE --gpu 8.6").
std::string torch_deciding_command(const Target& target, const ResolvedDist& d) {
  auto name = formats::parse_wheel_filename(d.filename);
  std::string platform = name && !name->platform_tags.empty() ? name->platform_tags.front() : "linux_" + target.platform;
  std::string gpu = target.gpu_text;
  if (gpu.empty()) {
    std::vector<std::string> ccs;
    for (const auto& cc : target.gpus) ccs.push_back(cc.str());
    gpu = join(ccs, ",");
  }
  return fmt::format("pip download --no-deps --only-binary=:all: --platform {} --python-version {} -d . {} && tailor inspect {} --gpu {}",
                     shell_quote(platform), shell_quote(target.python), shell_quote(d.url.empty() ? "torch==" + d.version : d.url),
                     shell_quote(d.filename), shell_quote(gpu));
}
}  // namespace

/// The `tailor build torch` that builds the stack's own torch (version, Python, platform,
/// CUDA, GPUs), runnable as printed; `tailor plan` with the same flags shows it first.
std::string torch_build_command(const Target& target, const std::string& version, std::string_view cuda) {
  std::string gpus;
  if (!target.gpu_text.empty()) gpus = " --gpu " + shell_quote(target.gpu_text);
  else
    for (const auto& cc : target.gpus) gpus += " --gpu " + shell_quote(cc.str());
  // The release, not the wheel's local label: "2.11.0+cu130" is 2.11.0 for CUDA 13.0, and
  // --cuda carries the CUDA.
  const std::string release = version.substr(0, version.find('+'));
  return fmt::format("tailor build torch --torch {} --python {} --platform {}{}{}", shell_quote(release),
                     shell_quote(target.python), shell_quote(target.platform),
                     cuda.empty() ? "" : " --cuda " + shell_quote(std::string(cuda)), gpus);
}

void decide_torch(const Target& target, std::string_view asked_cuda, const ResolvedDist& d,
                  const std::vector<ResolvedDist>& all, Row& row, TorchChoice& choice) {
  row.kind = Kind::torch;
  auto name = formats::parse_wheel_filename(d.filename);
  // The wheel's label ("cu130"), else the CUDA runtime it pulls in ("13.0.96").
  std::optional<cuda::CudaVersion> release;
  if (name)
    if (auto v = cuda::parse_cuda_version(name->local_label)) release = *v;
  if (!release)
    for (const auto& o : all)
      if (o.key.starts_with("nvidia-cuda-runtime"))
        if (auto v = cuda::parse_cuda_version(o.version)) release = *v;
  const std::string cuda = release ? release->to_string() : "";
  choice.version = d.version;
  choice.cuda = cuda;
  choice.source = "resolved";
  choice.cxx11_abi = compare_versions(d.version, facts().torch_cxx11_abi_since) >= 0 ? std::optional<bool>(true) : std::nullopt;
  if (cuda.empty()) {
    row.covers = "no";
    row.outcome = Outcome::build;
    row.buildable = "yes";
    row.recipe = "tailor build torch";
    row.reason = fmt::format("torch {} for {} from this index is a CPU-only build; `{}` builds one for {}", d.version,
                             target.platform, torch_build_command(target, d.version, asked_cuda), target.gpu_label());
    return;
  }
  if (auto asked = cuda::parse_cuda_version(asked_cuda); !asked_cuda.empty() && (!asked || *asked != *release)) {
    row.covers = "-";
    row.outcome = Outcome::unsupported;
    row.reason = fmt::format("torch {} is a CUDA {} build; --cuda {} asked for another (no such torch on these indexes)", d.version,
                             cuda, asked_cuda);
    return;
  }
  std::string list;
  for (const auto& w : cuda::official_torch_arch_lists())
    if (w.cuda == *release && w.platform == target.platform) list = w.torch_cuda_arch_list;
  choice.arch_list = list;
  if (list.empty()) {
    // Nothing says what it carries: unknown, never prebuilt, with what decides it.
    row.covers = "?";
    row.outcome = Outcome::unknown;
    row.reason = fmt::format("CUDA {} build; its arch list for {} is not in tailor's data, so whether it runs on {} is unknown: "
                             "decide it with `{}`, or install it and run tailor stack with --torch PYTHON",
                             cuda, target.platform, target.gpu_label(), torch_deciding_command(target, d));
    return;
  }
  auto set = cuda::parse_arch_spec(list);
  std::vector<std::string> missing;
  if (set)
    for (const auto& cc : target.gpus)
      if (cuda::coverage_on(*set, cc).mode == cuda::RunMode::none) missing.push_back(cc.str());
  for (const auto& t : set ? set->targets : std::vector<cuda::CudaTarget>{}) row.targets.push_back(t.name());
  if (missing.empty()) {
    row.covers = "yes";
    row.reason = fmt::format("CUDA {} build for {}: {}", cuda, target.platform, list);
    return;
  }
  row.covers = "no";
  row.outcome = Outcome::build;
  row.buildable = "yes";
  row.recipe = "tailor build torch";
  row.reason = fmt::format("official CUDA {} wheels for {} carry {}; {} is not among them: `{}` builds one", cuda,
                           target.platform, list, join(missing, ", "), torch_build_command(target, d.version, cuda));
}

Expected<Target> resolve_target(const StackRequest& request, CommandRunner& runner, std::string* interpreter_path) {
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
  TAILOR_TRY(implied, cuda::variant_platform(request.platform.empty() ? std::nullopt : std::optional<std::string>(request.platform),
                                             gpus ? gpus->named : std::vector<std::string>{}));
  t.platform = !request.platform.empty() ? normalise_machine(request.platform) : implied ? *implied : machine;
  if (t.platform != "x86_64" && t.platform != "aarch64")
    return make_error(fmt::format("--platform {}: expected x86_64 or aarch64", request.platform));
  static const std::regex py_re(R"(3\.\d{1,2})");
  t.python = request.python.empty() ? python : request.python;
  if (!std::regex_match(t.python, py_re)) return make_error(fmt::format("--python {}: expected 3.X, e.g. 3.10", t.python));
  t.cross = t.platform != machine || t.python != python;
  if (!request.glibc.empty()) {
    auto v = parse_version(request.glibc);
    if (!v || v->major() != 2) return make_error(fmt::format("--glibc {}: expected 2.X, e.g. 2.35", request.glibc));
    t.glibc = request.glibc;
  } else {
    t.glibc = t.platform == machine ? std::string(gnu_get_libc_version()) : facts().default_target_glibc;
  }
  if (!gpus) {
    if (t.cross) return make_error("the target is another machine: name its GPUs with --gpu or --arch");
    TAILOR_TRY(detected, cuda::resolve_target_request(gpu_request));
    gpus = std::move(detected);
  }
  t.gpus = gpus->devices;
  if (gpus->source != cuda::TargetSource::detected) t.gpu_text = join(gpus->named, ";");
  std::sort(t.gpus.begin(), t.gpus.end());
  return t;
}

Expected<StackResult> run_stack(const StackRequest& request, CommandRunner& runner) {
  if (request.packages.empty() && request.requirement_files.empty())
    return make_error("name the packages (PACKAGE[==VER]... or -r requirements.txt)");
  Context c{request, runner, {}, request.interpreter, {}, request.index, request.cache_dir.empty() ? user_cache_dir("stack") : request.cache_dir, {}};
  std::vector<std::string> requirements = request.packages;

  // --torch: a version to pin, or an interpreter whose installed torch the stack uses.
  bool torch_interpreter = request.torch.find('/') != std::string::npos || request.torch.starts_with("python");
  if (torch_interpreter) {
    c.torch_python = request.torch;
    if (request.interpreter == "python3") c.python = request.torch;
  }
  StackRequest with_python = request;
  with_python.interpreter = c.python;
  std::string executable;
  TAILOR_TRY(target, resolve_target(with_python, runner, &executable));
  // The interpreter itself from here on: a pyenv shim costs a few bash scripts per run.
  if (!executable.empty() && executable.starts_with('/') && ::access(executable.c_str(), X_OK) == 0) c.python = executable;
  c.target = target;
  c.result.target = target;
  if (request.platform.empty())
    if (auto implied = cuda::implied_platform({c.target.gpu_text}); implied && *implied)
      c.result.notes.push_back(fmt::format("platform {} implied by {}", (*implied)->platform, (*implied)->source));
  if (torch_interpreter) {
    if (c.target.cross) return make_error("--torch PYTHON uses that interpreter's torch: the target must be this machine");
    auto py = probe::probe_python(c.torch_python, runner, std::chrono::seconds(120));
    if (!py || !py->torch)
      return make_error(fmt::format("--torch {}: no importable torch{}", c.torch_python, py && !py->torch_error.empty() ? " (" + py->torch_error + ")" : ""));
    c.result.torch = {py->torch->version, py->torch->cuda_version, "", "installed in " + c.torch_python, py->torch->cxx11_abi};
    std::vector<std::string> arch;
    for (const auto& a : py->torch->arch_list) arch.push_back(a);
    c.result.torch.arch_list = join(arch, " ");
  } else if (!request.torch.empty()) {
    if (!parse_version(request.torch)) return make_error(fmt::format("--torch {}: expected a version (2.11.0) or a Python interpreter", request.torch));
    bool named = std::any_of(requirements.begin(), requirements.end(), [](const std::string& r) { return requirement_name(r) == "torch"; });
    if (named) return make_error("--torch and a torch requirement both given: keep one");
    requirements.insert(requirements.begin(), "torch==" + request.torch);
  }
  if (!request.cuda.empty() && !torch_interpreter && !c.index.no_index) {
    TAILOR_TRY(url, pytorch_index_url(request.cuda));
    c.index.extra_index_urls.push_back(url);
  }
  for (const auto& r : requirements)
    if (requirement_name(r).empty()) return make_error(fmt::format("requirement '{}': expected NAME[==VERSION]", r));

  auto progress = [&](const std::string& line) {
    if (request.progress) request.progress(line);
  };
  auto detail = [&](const std::string& line) {
    if (request.progress_detail) request.progress_detail(line);
  };
  // 1. Binary-only resolution for the target; packages with no wheel are retried from
  //    source (this machine) or set aside and looked up as sdists (another machine).
  progress(fmt::format("resolving {} for {} Python {} with pip", join(requirements, " "), c.target.platform, c.target.python));
  auto t0 = Clock::now();
  std::set<std::string> no_wheel;
  std::vector<std::string> set_aside;  // requirement strings (cross)
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
    auto it = std::find_if(requirements.begin(), requirements.end(), [&](const std::string& q) { return requirement_name(q) == missing; });
    if (it == requirements.end())
      return make_error(fmt::format("pip could not resolve the stack for {}: {} (a dependency) has no wheel for the target",
                                    c.target.platform, missing));
    no_wheel.insert(missing);
    set_aside.push_back(*it);
    requirements.erase(it);
    if (requirements.empty() && c.request.requirement_files.empty()) break;
  }
  c.result.resolve_seconds = since(t0);
  progress(fmt::format("{} {} package{} in {:.1f} s", c.result.resolution_reused ? "reused the resolution of" : "resolved",
                       run.dists.size(), run.dists.size() == 1 ? "" : "s", c.result.resolve_seconds));

  // 2. Rows, and the downloads that inspection needs.
  auto t1 = Clock::now();
  std::vector<Row> rows;
  std::vector<const ResolvedDist*> to_inspect;
  std::set<std::string> resolved_keys;
  for (const auto& d : run.dists) resolved_keys.insert(d.key);
  // torch first: the others are judged against it.
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
      if (!dep.empty() && !has_extra_marker(req) && resolved_keys.count(dep) && dep != d->key) row.depends.push_back(dep);
    }
    if (d->wheel) {
      row.wheel_url = d->url;
      row.wheel_sha256 = d->sha256;
      row.wheel_file = d->filename;
    }
    if (d->key == "torch" && d->wheel) {
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
  if (!c.torch_python.empty()) {
    Row row;
    row.name = row.key = "torch";
    row.version = c.result.torch.version;
    row.kind = Kind::torch;
    row.outcome = Outcome::installed;
    row.reason = fmt::format("{}; CUDA {}; {}", c.result.torch.source, c.result.torch.cuda.empty() ? "none" : c.result.torch.cuda,
                             c.result.torch.arch_list.empty() ? "no GPU targets" : c.result.torch.arch_list);
    auto set = cuda::parse_arch_spec(c.result.torch.arch_list);
    row.covers = "yes";
    for (const auto& cc : c.target.gpus)
      if (!set || cuda::coverage_on(*set, cc).mode == cuda::RunMode::none) row.covers = "no";
    if (set)
      for (const auto& t : set->targets) row.targets.push_back(t.name());
    if (row.covers == "no") {
      row.outcome = Outcome::unsupported;
      row.reason = fmt::format("the installed torch ({}) has no kernels for {}: `tailor build torch --gpu {}`",
                               c.result.torch.arch_list.empty() ? "CPU-only" : c.result.torch.arch_list, c.target.gpu_label(),
                               c.target.gpu_text.empty() ? c.target.gpus.front().str() : c.target.gpu_text);
    }
    rows.insert(rows.begin(), std::move(row));
  }
  progress(fmt::format("inspecting {} wheel{} that may carry device code", to_inspect.size(), to_inspect.size() == 1 ? "" : "s"));
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
      detail(fmt::format("inspecting {}", d->filename));
      auto report = inspect::inspect_paths({file.string()});
      if (!report || report->wheels.empty()) {
        row.outcome = Outcome::unsupported;
        row.covers = "?";
        row.reason = fmt::format("{} does not read as a wheel: {}", d->filename, report ? "no wheel" : report.error().message);
        continue;
      }
      stored = std::move(report->wheels.front());
      if (auto w = inspections.store(sha, *stored); !w && c.request.warn)
        c.request.warn("cannot store the inspection of " + d->filename + ": " + w.error().message);
    }
    std::string why = judge_wheel(c, row, *stored);
    if (!why.empty())
      if (auto f = fall_back_to_source(c, row, d->key + "==" + d->version, why); !f) return f.error();
  }
  for (auto& row : rows)
    if (row.kind == Kind::source)
      if (auto f = fall_back_to_source(c, row, row.key + "==" + row.version, "no wheel for the target"); !f) return f.error();
  for (const auto& req : set_aside) {
    Row row;
    row.key = row.name = requirement_name(req);
    row.kind = Kind::source;
    row.requested = true;
    if (auto f = fall_back_to_source(c, row, req, fmt::format("no wheel for {} Python {}", c.target.platform, c.target.python)); !f)
      return f.error();
    if (row.outcome == Outcome::build)
      c.result.notes.push_back(fmt::format("{} has no wheel for the target; its dependencies were not resolved (pip resolves "
                                           "an sdist's dependencies only on the machine that builds it)", row.name));
    rows.push_back(std::move(row));
  }
  c.result.inspect_seconds = since(t1);
  // A CUDA package on a torch without CUDA cannot work whatever its wheel holds.
  bool any_cuda = std::any_of(rows.begin(), rows.end(), [](const Row& r) { return r.kind == Kind::cuda; });
  if (any_cuda && c.result.torch.cuda.empty() && !c.result.torch.version.empty())
    c.result.notes.push_back(fmt::format("torch {} has no CUDA on {}: every CUDA package needs a CUDA torch first", c.result.torch.version,
                                         c.target.platform));
  order_rows(rows);
  c.result.rows = std::move(rows);
  c.result.index = c.index;
  c.result.torch_python = c.torch_python;
  return std::move(c.result);
}

}  // namespace tailor::stack
