// The pip commands stack runs (a dry-run resolution through the target wrapper, downloads
// into the sha256-keyed file cache) and the requirement strings they take.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <regex>

#include "formats/wheel.h"
#include "stack/stack_cache.h"
#include "stack/stack_context.h"
#include "util/files.h"
#include "util/sha256.h"
#include "util/strings.h"

namespace fs = std::filesystem;

namespace tailor::stack {

Expected<CommandResult> run_checked(CommandRunner& runner, CommandSpec spec,
                                    const std::string& what) {
  auto r = runner.run(spec);
  if (r.interrupted) return make_error("interrupted");
  if (!r.started)
    return make_error(
        fmt::format("{}: cannot run {}", what, spec.argv.empty() ? "" : spec.argv[0]));
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

namespace {

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

/// The cache path of a file with this sha256.
fs::path cache_path(const Context& c, const std::string& sha256, const std::string& filename) {
  return fs::path(c.cache) / "files" / sha256.substr(0, 2) / sha256 / filename;
}

}  // namespace

std::vector<std::string> target_tag_args(const Context& c) {
  std::vector<std::string> args;
  if (!c.target.cross) return args;
  for (const auto& t : pip_platform_tags(c.target)) args.insert(args.end(), {"--platform", t});
  args.insert(args.end(), {"--python-version", c.target.python, "--implementation", "cp"});
  return args;
}

Expected<PipRun> pip_dry_run(Context& c, const std::vector<std::string>& requirements,
                             const std::vector<std::string>& extra_args, bool ignore_installed,
                             bool stored_only) {
  fs::path scratch =
      fs::path(c.cache) / "tmp" / fmt::format("report-{}-{}", ::getpid(), std::rand());
  std::error_code ec;
  fs::create_directories(scratch, ec);
  fs::path report = scratch / "report.json";
  CommandSpec spec;
  spec.argv = pip_target_argv(c);
  // `args` as run; `keyed` the same with this run's own paths left out (the cache's key).
  std::vector<std::string> args = {"install", "--dry-run", "--disable-pip-version-check",
                                   "--quiet", "--report",  report.string()};
  std::vector<std::string> keyed = {"install", "--dry-run", "--disable-pip-version-check",
                                    "--quiet", "--report",  "{report}"};
  // pip's own lines say what it is fetching (where an index has no PEP 658 metadata files,
  // every wheel it considers is downloaded whole): shown as progress, else kept quiet.
  if (c.request.progress_detail) {
    args.erase(args.begin() + 3);
    spec.on_line = [&c](std::string_view line) {
      std::string_view t = trim(line);
      if (t.starts_with("Collecting ") || t.starts_with("Downloading ") ||
          t.starts_with("Using cached "))
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

Expected<std::string> file_sha256(const fs::path& path) {
  TAILOR_TRY(digest, Sha256::of_file(path.string()));
  return Sha256::hex(digest);
}

Expected<std::map<std::string, fs::path>> fetch_into_cache(
    Context& c, const std::vector<const ResolvedDist*>& dists) {
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
    if (missing.size() > names.size())
      names.push_back(fmt::format("{} more", missing.size() - names.size()));
    c.request.progress(fmt::format("downloading {} file{} with pip: {}", missing.size(),
                                   missing.size() == 1 ? "" : "s", join(names, ", ")));
  }
  fs::path scratch =
      fs::path(c.cache) / "tmp" / fmt::format("download-{}-{}", ::getpid(), std::rand());
  std::error_code ec;
  fs::create_directories(scratch, ec);
  CommandSpec spec;
  spec.argv = {c.python,    "-m",      "pip",
               "download",  "--quiet", "--disable-pip-version-check",
               "--no-deps", "-d",      scratch.string()};
  bool all_wheels =
      std::all_of(missing.begin(), missing.end(), [](const ResolvedDist* d) { return d->wheel; });
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
      return make_error(
          fmt::format("{}: sha256 {} differs from the index's {}", d->filename, sha, d->sha256));
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

}  // namespace tailor::stack
