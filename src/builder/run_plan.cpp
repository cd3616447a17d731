#include "builder/run_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "builder/reproducible_env.h"
#include "builder/resume.h"
#include "cache/cache_ledger.h"
#include "cache/cache_stats.h"
#include "cache/compiler_cache.h"
#include "cache/sccache_dist.h"
#include "governor/governor_profile.h"
#include "outputs/ninja_log.h"
#include "plan/unit_times.h"
#include "util/interrupt.h"
#include "util/strings.h"
#include "workpath/fixed_folder.h"

namespace tailor::builder {
namespace fs = std::filesystem;
namespace dist = cache::dist;
namespace {

StepResult stop(BuildStatus status, std::string message) {
  return StepStop{status, std::move(message)};
}

/// What one run holds while its steps run.
struct Run {
  const plan::BuildPlan& plan;
  const plan::ExecutionPolicy& policy;
  BuildSession& session;
  outputs::BuildReport& rep;
  PlanRun& out;
  std::optional<workpath::FixedFolder> fixed_folder;
  std::optional<workpath::FixedPath> fixed;
  std::unique_ptr<cache::SccacheServer> sccache_server;
  std::optional<dist::BuildSession> dist_session;
  std::map<std::string, std::string> cache_env;
  std::optional<cache::CacheStats> before;
  std::unique_ptr<governor::MemoryGovernor> governor;
  std::string key;
};

std::vector<plan::Step>& steps(Run& r) { return r.out.steps; }

// --sandbox: the namespace also has no network and a read-only file system but for the
// work folder (the steps' temporary folder moves into it), the compiler cache's folder and
// /dev/shm; tried once with `true` before the build, so a kernel that cannot (Linux older
// than 5.12) says so at once.
Expected<void> make_sandbox(Run& r, workpath::FixedPath& fp) {
  fp.sandbox = true;
  const Environment& env = r.session.environment;
  DiskInterface& disk = r.session.disk;
  // ccache writes its cache in the compile (sccache's server runs outside the sandbox):
  // its folder as ccache 4 picks it, made now (only a folder that exists can stay writable).
  if (r.plan.cache.tool == cache::CacheTool::ccache) {
    std::string dir;
    const std::string home = env.value("HOME");
    if (auto it = r.plan.cache.env.find("CCACHE_DIR"); it != r.plan.cache.env.end())
      dir = it->second;
    else if (!env.value("CCACHE_DIR").empty())
      dir = env.value("CCACHE_DIR");
    else if (!home.empty() && disk.is_directory(home + "/.ccache"))
      dir = home + "/.ccache";
    else if (!env.value("XDG_CACHE_HOME").empty())
      dir = env.value("XDG_CACHE_HOME") + "/ccache";
    else if (!home.empty())
      dir = home + "/.cache/ccache";
    if (!dir.empty()) {
      disk.make_dirs(dir);
      fp.writable.push_back(dir);
    }
  }
  const std::string tmp = (fs::path(r.policy.mapped_dir) / "tmp").string();
  disk.make_dirs(tmp);
  for (auto& st : steps(r)) {
    st = workpath::in_fixed_path(std::move(st), fp);
    for (const char* var : {"TMPDIR", "TEMP", "TMP"}) st.env[var] = workpath::to_fixed(tmp, fp);
  }
  CommandSpec spec;
  spec.argv = workpath::fixed_path_argv(fp, r.policy.mapped_dir, {"true"});
  spec.timeout = std::chrono::seconds(20);
  CommandResult res = r.session.runner.run(spec);
  if (!res.ok()) {
    std::string why(trim(res.err.empty() ? res.out : res.err));
    if (why.empty()) why = fmt::format("exit {}", res.exit_code);
    return make_error("--sandbox: " + why.substr(0, why.find('\n')));
  }
  return {};
}

// The steps see their folder at one fixed path by the best route this machine allows
// (workpath/fixed_path.h; --dist keeps the real path: the dist session starts its server
// itself). Says where and how in the report; without a fixed path, a warning on stderr and
// in the report says why and what would fix it. The folder route also locks the fixed
// folder, which a second build of the package waits for.
StepResult enter_fixed_path(Run& r) {
  const plan::ExecutionPolicy& p = r.policy;
  outputs::BuildReport& rep = r.rep;
  auto warn = [&](const std::string& why) {
    rep.work_path = p.mapped_dir;
    rep.work_path_route =
        std::string(workpath::fixed_path_route_name(workpath::FixedPathRoute::none));
    rep.work_path_note = why;
    r.session.warn(why);
  };
  if (p.sandbox && p.dist)
    return stop(BuildStatus::bad_input,
                "--sandbox with --dist: the dist servers are reached over the network");
  // sccache's compiles talk to the build's server over loopback, which the sandbox's own
  // network namespace does not share.
  if (p.sandbox && r.plan.cache.tool == cache::CacheTool::sccache)
    return stop(
        BuildStatus::bad_input,
        "--sandbox with sccache: its compiles reach the build's sccache server over the "
        "network, which the sandbox has none of; build with --cache ccache or --cache none");
  if (p.dist) {
    warn(
        "--dist: built in the work folder itself (the dist servers compile at the client's paths), "
        "so nvcc's symbol "
        "names carry this work folder's path; fix: build without --dist for a wheel whose bytes do "
        "not depend on it");
    return std::nullopt;
  }
  // The plan chose the real path (`tailor __governed`: a configured tree names its own
  // paths): said in the report, no warning with a fix for a path nobody asked for.
  if (p.work_path == plan::ExecutionPolicy::WorkPath::real && !p.sandbox) {
    rep.work_path = p.mapped_dir;
    rep.work_path_route =
        std::string(workpath::fixed_path_route_name(workpath::FixedPathRoute::none));
    rep.work_path_note = "the plan builds at the real path";
    return std::nullopt;
  }
  auto var = r.session.environment.get(workpath::k_fixed_path_route_variable);
  auto forced = workpath::parse_fixed_path_route(var ? var->c_str() : nullptr);
  if (!forced) return stop(BuildStatus::bad_input, forced.error().message);
  if (p.sandbox && *forced && **forced != workpath::FixedPathRoute::own_namespace)
    return stop(BuildStatus::bad_input,
                fmt::format("--sandbox: only tailor's own namespace makes one, not {}={}",
                            workpath::k_fixed_path_route_variable,
                            workpath::fixed_path_route_name(**forced)));
  if (p.sandbox) *forced = workpath::FixedPathRoute::own_namespace;
  const std::string fixed = workpath::fixed_work_path(p.package);
  workpath::FixedPathChoice choice;
  if (p.work_path == plan::ExecutionPolicy::WorkPath::real) {
    choice.refused.emplace_back(workpath::FixedPathRoute::none, "the plan builds at the real path");
  } else if (*forced == workpath::FixedPathRoute::none) {
    choice.forced = fmt::format("{}=none", workpath::k_fixed_path_route_variable);
  } else if (r.session.fixed_path) {
    choice = r.session.fixed_path(p.mapped_dir, fixed, *forced);
  } else {
    choice.refused.emplace_back(workpath::FixedPathRoute::none, "not asked for");
  }
  if (choice.path && choice.path->route == workpath::FixedPathRoute::folder) {
    // Held by another build of the package (--no-wait, or an interrupt while waiting): stop,
    // as for the work folder's own lock, rather than build with other bytes.
    auto locked = workpath::FixedFolder::acquire(p.mapped_dir, choice.path->fixed, p.wait_for_lock,
                                                 r.session.status);
    if (!locked)
      return stop(BuildStatus::build_failed, "the fixed work folder: " + locked.error().message);
    r.fixed_folder.emplace(std::move(*locked));
  }
  rep.work_path_tried = choice.refusals();
  if (p.sandbox) {
    if (!choice.path)
      return stop(BuildStatus::preflight_failed,
                  "--sandbox: no private namespace here (" + choice.refusals() + ")");
    if (auto made = make_sandbox(r, *choice.path); !made)
      return stop(BuildStatus::preflight_failed, made.error().message);
  }
  if (!choice.path) {
    warn(workpath::no_fixed_path_warning(choice));
    return std::nullopt;
  }
  if (!p.sandbox)
    for (auto& st : steps(r)) st = workpath::in_fixed_path(std::move(st), *choice.path);
  rep.work_path = choice.path->fixed;
  rep.work_path_route = std::string(workpath::fixed_path_route_name(choice.path->route));
  r.session.say(fmt::format(
      "==> fixed work path {} ({}{}{})", rep.work_path, rep.work_path_route,
      p.sandbox ? ", sandbox: no network, writes only to the work folder and the cache" : "",
      choice.forced.empty() || p.sandbox ? "" : ", " + choice.forced));
  rep.sandbox = p.sandbox;
  r.fixed = std::move(choice.path);
  return std::nullopt;
}

// sccache: the build's own server, so its statistics are this build's alone (--dist
// starts the build's server itself, with the cluster's client config); ccache: its
// counts before the run.
StepResult start_cache(Run& r) {
  const plan::CacheDecision& c = r.plan.cache;
  r.rep.cache_tool = c.tool;
  r.rep.cache_storage = c.storage;
  r.cache_env = c.env;
  if (c.executable.empty() || !r.policy.cache_statistics) return std::nullopt;
  // ccache's base_dir rewrites the compiler's absolute paths under the work folder into
  // relative ones on the command line, which reach the debug info (DW_AT_name
  // "../../csrc/x.cpp" where an uncached build has "./csrc/x.cpp"): a cached build's bytes
  // would differ. At the fixed path every work folder is the same folder, so it has
  // nothing left to do.
  if (r.fixed && c.tool == cache::CacheTool::ccache)
    if (auto it = r.cache_env.find("CCACHE_BASEDIR");
        it != r.cache_env.end() &&
        fs::path(it->second).lexically_normal() == fs::path(r.policy.mapped_dir).lexically_normal())
      r.cache_env.erase(it);
  if (c.tool == cache::CacheTool::sccache && !r.policy.dist) {
    // The server itself runs outside any sandbox: it may reach a shared storage.
    std::optional<workpath::FixedPath> server_path = r.fixed;
    if (server_path) server_path->sandbox = false;
    auto server = cache::SccacheServer::start(
        c.executable, c.env, r.session.runner,
        server_path ? workpath::fixed_path_argv(*server_path, r.policy.mapped_dir, {})
                    : std::vector<std::string>{});
    if (!server)
      return stop(BuildStatus::build_failed,
                  fmt::format("compiler cache ({}): {}", c.storage, server.error().message));
    r.sccache_server = std::move(*server);
    for (const auto& [k, v] : r.sccache_server->env()) r.cache_env[k] = v;
  } else if (c.tool == cache::CacheTool::ccache) {
    if (auto st = cache::read_cache_stats(c.tool, c.executable, r.session.runner, r.cache_env))
      r.before = *st;
  }
  return std::nullopt;
}

// Resume: the build tree stays while the build is configured the same (the job count,
// which follows free memory, does not change what is built).
bool resume_tree(Run& r) {
  if (!r.policy.resume) return false;
  std::string fingerprint = join(r.rep.targets, ",");
  const std::string& jobs_var = r.policy.jobs.variable;
  for (plan::Step st : steps(r)) {
    st.env.erase(jobs_var);
    st.env.erase("MAKEFLAGS");
    std::erase(st.unset_env, jobs_var);
    fingerprint += "\n" + render_step_shell(st);
  }
  return keep_build_tree_if_unchanged(r.session.disk, r.policy.build_dir, r.policy.work_dir,
                                      fingerprint);
}

// --dist: the checks that can be made now (one preflight line each), then this build's
// own sccache server with the dist client config; not part of the fingerprint (the port
// changes every run, what is built does not).
StepResult start_dist_session(Run& r) {
  outputs::BuildReport& rep = r.rep;
  CommandRunner& runner = r.session.runner;
  auto env_dist = r.session.environment.get("TAILOR_DIST");
  const char* env_value = env_dist ? env_dist->c_str() : nullptr;
  auto checks = dist::check_dist(*r.policy.dist, env_value, runner);
  std::string first_failure;
  for (const auto& c : checks) {
    bool ok = c.level != dist::DistCheck::Level::fail;
    r.out.preflight.push_back(
        {"dist-" + c.name, ok, c.line, ok ? "" : c.line, ok ? "" : "tailor doctor --dist"});
    if (!ok && first_failure.empty()) first_failure = c.line;
    r.session.say(fmt::format("==> dist {}: {}", dist::level_name(c.level), c.line));
  }
  if (!first_failure.empty())
    return stop(BuildStatus::preflight_failed, "distributed compiles: " + first_failure);
  auto config = dist::load_client_config(*r.policy.dist, env_value);
  if (!config) return stop(BuildStatus::preflight_failed, config.error().message);
  // The storage (--cache-url, [cache]) is the dist build's too: its server checks the
  // shared cache first and distributes only what misses.
  auto session = dist::start_build_session(*config, r.plan.cache.env, runner);
  if (!session) return stop(BuildStatus::preflight_failed, session.error().message);
  r.dist_session = std::move(*session);
  for (auto& st : steps(r))
    for (const auto& [k, v] : r.dist_session->env) st.env[k] = v;
  rep.dist = outputs::BuildReport::Dist{};
  rep.dist->scheduler_url = config->scheduler_url;
  rep.dist->client_config = config->path;
  return std::nullopt;
}

void take_cache_stats(Run& r, const cache::CacheStats& d) {
  r.rep.cache_hits = d.hits;
  r.rep.cache_misses = d.misses;
  r.rep.cache_errors = d.errors;
  for (const auto& [name, c] : d.categories) r.rep.cache_categories[name] = {c.hits, c.misses};
  if (r.session.record_cache_use) cache::record_cache_use(r.rep.cache_tool, d);
}

// What the dist build's own server counted, from its statistics before and after.
void account_dist_session(Run& r) {
  outputs::BuildReport& rep = r.rep;
  const dist::BuildSession& session = *r.dist_session;
  auto end = dist::finish_build_session(session, r.session.runner);
  if (!end) {
    rep.dist->notes.push_back(end.error().message);
    return;
  }
  auto b = dist::parse_dist_stats_json(session.stats_before);
  auto a = dist::parse_dist_stats_json(*end);
  if (b && a) {
    dist::DistStats d = dist::dist_stats_delta(*b, *a);
    rep.dist->compilations = d.compilations;
    rep.dist->dist_compiles = d.dist_compiles;
    rep.dist->dist_errors = d.dist_errors;
    rep.dist->not_distributable = d.not_distributable;
    rep.dist->per_server = d.per_server;
    rep.dist->notes = dist::dist_notes(d);
  } else {
    rep.dist->notes.push_back(!a ? a.error().message : b.error().message);
  }
  auto cb = cache::parse_sccache_stats_json(session.stats_before);
  auto ca = cache::parse_sccache_stats_json(*end);
  if (cb && ca) take_cache_stats(r, cache::stats_delta(*cb, *ca));
}

std::optional<governor::GovernorProfile> learned(Run& r) {
  if (r.session.profile_path.empty()) return std::nullopt;
  auto known = governor::read_governor_profile(r.session.profile_path, r.key);
  if (!known || !*known) return std::nullopt;
  return **known;
}

// The static count, and with --memory-budget the count that fits the budget.
void static_jobs(Run& r, const std::string& why) {
  const plan::JobPolicy& j = r.policy.jobs;
  governor::GovernorReport off;
  off.mode = "static";
  off.reason = why;
  if (j.budget && !j.fixed && j.prior_job_bytes > 0) {
    int fit = static_cast<int>(std::max<uint64_t>(1, *j.budget / j.prior_job_bytes));
    if (fit < r.rep.jobs) {
      r.rep.jobs = fit;
      r.rep.jobs_reason = fmt::format("--memory-budget {} MiB / {} MiB per job = {}",
                                      *j.budget >> 20, j.prior_job_bytes >> 20, fit);
      const int value = j.counts_nvcc_threads ? fit * j.nvcc_threads : fit;
      for (auto& st : steps(r))
        if (st.uses_plan_env) st.env[j.variable] = std::to_string(value);
    }
  }
  r.rep.governor = off;
}

// The memory governor for this build (governor/memory_governor.h), or why the static count
// runs instead. It changes only the job variables, which the fingerprint leaves out; it
// starts once the build's sccache server (plain or dist) is up, to count its children.
void start_memory_governor(Run& r) {
  const plan::JobPolicy& j = r.policy.jobs;
  governor::GovernorFacts facts;
  facts.jobs = j.fixed;
  facts.recipe = j.recipe;
  facts.pip_build = j.pip_build;
  facts.jobs_variable = j.variable;
  facts.jobs_count_nvcc_threads = j.counts_nvcc_threads;
  facts.serial = j.serial;
  facts.ninja_version = j.ninja_version;
  if (auto why = governor::static_reason(facts, governor::governor_settings()))
    return static_jobs(r, *why);
  if (!r.session.start_governor) return static_jobs(r, "no jobserver in this session");
  governor::GovernorOptions g;
  g.fifo_path = (fs::path(r.policy.work_dir) / "jobserver.fifo").string();
  g.prior_job_bytes = j.prior_job_bytes;
  g.budget = j.budget;
  g.max_jobs = std::max<size_t>(1, j.max_jobs);
  g.limit_bytes = j.memory_limit;
  // What earlier builds of this package measured (a damaged record is ignored here and
  // replaced when this build records its own).
  if (auto known = learned(r)) {
    g.known_peaks = known->peaks;
    g.known_builds = known->builds;
  }
  const std::string reason =
      fmt::format("ninja {} is a jobserver client; tokens by measured memory, up to {} jobs{}",
                  j.ninja_version, g.max_jobs,
                  g.known_builds ? fmt::format("; job peaks from {} earlier build{}",
                                               g.known_builds, g.known_builds == 1 ? "" : "s")
                                 : "");
  g.reason = reason;
  const size_t max_jobs = g.max_jobs;
  std::optional<pid_t> server = r.sccache_server ? r.sccache_server->server_pid()
                                : r.dist_session ? cache::sccache_server_pid(r.dist_session->port)
                                                 : std::nullopt;
  if (server) g.cache_servers.push_back(*server);
  g.available = r.session.available_memory;
  auto governor = r.session.start_governor(std::move(g));
  if (!governor)
    return static_jobs(r, "the jobserver could not start: " + governor.error().message);
  governor::GovernorReport on;
  on.mode = "governor";
  on.reason = reason;
  r.rep.governor = on;
  // A make older than 4.4 inside the build (GCC 13's LTO link runs one through lto-wrapper
  // when MAKEFLAGS names a jobserver) stops on the fifo: such a make gets a shim first on
  // PATH that runs it without the jobserver. Seen on Ubuntu 24.04 (gcc 13, make 4.3).
  std::string shim_dir;
  if (!j.make_without_jobserver.empty()) {
    auto dir = governor::write_make_shim(r.session.disk,
                                         (fs::path(r.policy.work_dir) / "make-shim").string(),
                                         j.make_without_jobserver);
    if (dir)
      shim_dir = *dir;
    else
      r.session.say("==> note: " + dir.error().message);
  }
  const std::string inherited = r.session.environment.get("PATH").value_or("/usr/bin:/bin");
  for (auto& st : steps(r)) {
    if (!st.uses_plan_env) continue;
    st.env.erase(j.variable);  // torch passes -j to ninja only from MAX_JOBS
    st.unset_env.push_back(j.variable);
    st.env["MAKEFLAGS"] = (*governor)->makeflags();
    // How many modules the build driver runs at once (each Ninja then takes tokens).
    st.env["TAILOR_JOBS"] = std::to_string(max_jobs);
    if (!shim_dir.empty()) {
      auto path = st.env.find("PATH");
      st.env["PATH"] = shim_dir + ":" + (path != st.env.end() ? path->second : inherited);
    }
  }
  r.governor = std::move(*governor);
}

// What earlier builds of the same key measured per unit, else what tailor measured for the
// recipe and profile (data/build/unit_times.toml): the build driver starts the longest
// first. Only the order changes, never what is compiled or linked.
void hand_over_unit_times(Run& r) {
  auto known = learned(r);
  const std::map<std::string, uint64_t>* times = known ? &known->unit_ms : nullptr;
  const plan::UnitTimesChoice choice =
      plan::choose_unit_times(times, r.policy.unit_times_recipe, r.policy.unit_times_profile);
  if (choice.unit_ms.empty()) return;
  const std::string file = (fs::path(r.policy.work_dir) / "unit-times.json").string();
  if (!r.session.disk.write(file, nlohmann::json(choice.unit_ms).dump() + "\n", false)) return;
  r.rep.units_known = choice.unit_ms.size();
  r.rep.unit_times_from = choice.source;
  const std::string from =
      choice.measured
          ? (choice.learned ? "earlier builds and measured builds of " : "measured builds of ") +
                r.policy.unit_times_recipe + " (data/build/unit_times.toml)"
          : "earlier builds";
  for (auto& st : steps(r)) {
    if (!st.uses_plan_env) continue;
    st.env["TAILOR_UNIT_TIMES"] = r.fixed ? workpath::to_fixed(file, *r.fixed) : file;
    st.env["TAILOR_UNIT_TIMES_FROM"] = from;
  }
}

// What this build's finished jobs measured teaches the next build of the package, even a
// failed or interrupted one's (the governor learns nothing once an interrupt has come),
// once what it did not compile itself is known: a build with cache hits or reused steps
// only raises the kept peaks (peak_update). Best effort: a read-only cache folder must not
// fail a build.
void record_learned(Run& r) {
  if (r.session.profile_path.empty()) return;
  const outputs::BuildReport& rep = r.rep;
  governor::BuildReuse reuse;
  reuse.cache_used = r.plan.cache.used();
  reuse.cache_hits = rep.cache_hits;
  reuse.tree_kept = r.out.tree_kept;
  reuse.units_reused = rep.units_reused;
  // Each unit's time, keyed by its source in the package (seen at the fixed path or not).
  std::vector<std::string> roots = {r.policy.build_dir};
  if (r.fixed) roots.push_back(workpath::to_fixed(r.policy.build_dir, *r.fixed));
  (void)governor::record_governor_profile(
      r.session.profile_path, r.key,
      r.governor ? rep.governor->finished_peaks : std::map<std::string, uint64_t>{},
      governor::governor_settings().profile_max_entries, governor::peak_update(reuse),
      outputs::unit_times(rep.job_timeline, roots));
}

// The cache's counts of this build, from its own server or ccache's before and after.
void finish_cache(Run& r) {
  Expected<cache::CacheStats> d = make_error("no statistics");
  const plan::CacheDecision& c = r.plan.cache;
  // Nothing starts after a signal (util/interrupt.h): no counts then.
  if (r.sccache_server) {
    if (interrupt_signal() == 0) d = r.sccache_server->stats();
    r.sccache_server->stop();
  } else if (r.before && !r.policy.dist && interrupt_signal() == 0) {
    if (auto after = cache::read_cache_stats(c.tool, c.executable, r.session.runner, r.cache_env))
      d = cache::stats_delta(*r.before, *after);
  }
  if (d) take_cache_stats(r, *d);
}

// Everything up to the steps themselves; a stop when the run cannot start.
StepResult prepare_run(Run& r) {
  const plan::ExecutionPolicy& p = r.policy;
  if (!p.fresh_dir.empty()) {
    r.session.disk.remove_all(p.fresh_dir);
    r.session.disk.make_dirs(p.fresh_dir);
  }
  // The same bytes and cache keys from any work folder: the steps, and the build's own
  // sccache server, see the work folder at one fixed path.
  if (auto stopped = enter_fixed_path(r)) return stopped;
  if (auto stopped = start_cache(r)) return stopped;
  r.out.tree_kept = resume_tree(r);
  if (p.dist)
    if (auto stopped = start_dist_session(r)) return stopped;
  start_memory_governor(r);
  auto run_log = start_run_log(r.session.disk, p.work_dir);
  if (!run_log) return stop(BuildStatus::build_failed, run_log.error().message);
  r.rep.log_path = *run_log;
  // After the fingerprint: the server's port changes every run and decides nothing built.
  for (auto& st : steps(r))
    if (st.uses_plan_env)
      for (const auto& [k, v] : r.cache_env)
        st.env[k] = r.fixed ? workpath::to_fixed(v, *r.fixed) : v;
  hand_over_unit_times(r);
  // A rebuild splits exactly the units the wheel's own build split (its provenance), none
  // learned: the bytes of a split unit depend on K.
  if (p.split_units) {
    const std::string units = nlohmann::json(*p.split_units).dump();
    for (auto& st : steps(r))
      if (st.uses_plan_env) st.env["TAILOR_SPLIT_UNITS"] = units;
  }
  return std::nullopt;
}

// The one diagnosis of a failed step, from its last lines as the runner kept them; line
// numbers are the log's. `source_dir`: the user's folder the build compiled a copy of;
// `step`: the kind of step that failed (diagnose::DiagnoseOptions::step).
void diagnose_failed_step(PlanRun& out, const LogTail& tail, const std::string& source_dir,
                          const std::string& step) {
  // A step whose output outgrew the tail: its first error is in the head it kept.
  std::string text = tail.head_text();
  size_t first = tail.head_first_line;
  if (text.empty() || !diagnose::first_error_block(text)) {
    text = tail.text();
    first = tail.first_line;
  }
  const size_t shift = first - 1;
  out.error_block = diagnose::first_error_block(text);
  if (out.error_block) {
    out.error_block->first_line += shift;
    out.error_block->last_line += shift;
  }
  diagnose::DiagnoseOptions options;
  options.source_dir = source_dir;
  options.first_line = first;
  options.step = step;
  out.diagnoses = diagnose::diagnose_log(text, options);
}

std::string failed_step_line(const RunOutcome& outcome) {
  const StepOutcome& last = outcome.steps.back();
  return fmt::format("step '{}' failed ({})", last.title,
                     !last.started    ? "could not start"
                     : last.timed_out ? "timed out"
                     : last.exit_code == 137
                         ? "killed by SIGKILL, exit 137: most often the out-of-memory killer"
                         : fmt::format("exit {}", last.exit_code));
}

}  // namespace

StepResult settle_cache_storage(const cache::CacheSettings& settings,
                                std::optional<cache::CacheTool>& tool,
                                const BuildSession& session) {
  if (tool == cache::CacheTool::none || !settings.shared() || !session.check_storage)
    return std::nullopt;
  auto check = session.check_storage(settings);
  if (!check)
    return stop(
        BuildStatus::bad_input,
        fmt::format(
            "compiler cache {}: {} (fix the storage's settings, or build with --cache none)",
            cache::describe_cache_storage(settings), check.error().message));
  if (!check->reachable) {
    session.warn(fmt::format("compiler cache {}: {}; building without a compiler cache",
                             cache::describe_cache_storage(settings), check->detail));
    tool = cache::CacheTool::none;
  }
  return std::nullopt;
}

std::string plan_record_key(const plan::BuildPlan& plan, const std::vector<std::string>& targets) {
  return governor::governor_profile_key(plan.run.package, plan.run.record_name, targets,
                                        plan.run.jobs.nvcc_threads);
}

PlanRun run_plan(const plan::BuildPlan& plan, BuildSession& session) {
  outputs::BuildReport& report = session.report;
  PlanRun out;
  Run r{plan, plan.run, session, report, out};
  r.key = plan_record_key(plan, report.targets);
  report.jobs = plan.jobs;
  report.jobs_reason = plan.jobs_reason;
  // The reproducibility settings join the build's variables here, for torch and extension
  // builds alike, and the report records the variables the steps ran with.
  std::map<std::string, std::string> env = plan.env;
  if (const auto& rep = plan.run.reproducible) {
    add_reproducible_build_env(env, session.environment.variables(), rep->source_date_epoch,
                               rep->source_dir, rep->nvcc_objtemp, rep->nvcc);
    add_reproducible_build_env(report.env, session.environment.variables(), rep->source_date_epoch,
                               rep->source_dir, rep->nvcc_objtemp, rep->nvcc);
  }
  out.steps = plan_steps(plan, env, session.environment.variables(), plan.run.build_dir);
  if (auto stopped = prepare_run(r)) {
    out.stop = stopped;
    return out;
  }
  session.say(fmt::format(
      "==> building {} ({}){}; log: {}",
      r.governor ? "under the memory governor" : fmt::format("with {} jobs", report.jobs),
      r.governor ? report.governor->reason : report.jobs_reason,
      plan.cache.used() ? fmt::format(", cache {}", plan.cache.tool_name()) : "", report.log_path));
  std::unique_ptr<ProgressDisplay> own_display;
  if (!session.display)
    own_display = make_progress_display(session.style, session.status ? session.status : stderr);
  BuildRunner runner(session.runner, session.display ? *session.display : *own_display,
                     session.disk, report.log_path, session.clock);
  // The job timeline: what this run appends to the build folder's .ninja_log files.
  const auto ninja_logs_before = outputs::ninja_log_sizes(session.disk, plan.run.ninja_root);
  // The folder route: the work folder's contents are at the fixed path for the run, and
  // back afterwards whatever the run's end (a failed or interrupted build resumes there).
  if (r.fixed_folder)
    if (auto moved = r.fixed_folder->move_in(); !moved) {
      (void)r.fixed_folder->move_out();
      out.stop = stop(BuildStatus::build_failed, "the fixed work folder: " + moved.error().message);
      return out;
    }
  auto outcome = runner.run(out.steps);
  if (r.fixed_folder)
    if (auto moved = r.fixed_folder->move_out(); !moved) {
      out.stop = stop(BuildStatus::build_failed, "the fixed work folder: " + moved.error().message);
      return out;
    }
  outputs::BuildJobs jobs =
      outputs::collect_build_jobs(session.disk, plan.run.ninja_root, ninja_logs_before);
  report.job_timeline = std::move(jobs.jobs);
  report.job_timeline_dropped = jobs.dropped;
  if (r.dist_session) account_dist_session(r);
  if (r.governor) report.governor = r.governor->finish();
  if (!outcome) {
    record_learned(r);
    out.stop = stop(BuildStatus::build_failed, outcome.error().message);
    return out;
  }
  out.outcome = *outcome;
  if (plan.run.resume)
    if (auto reused = account_reused_units(session.disk, plan.run.work_dir, out.tree_kept,
                                           outcome->facts.ninja_steps)) {
      report.units_reused = reused->reused;
      report.units_total = reused->total;
      report.units_source = reused->source;
    }
  finish_cache(r);
  record_learned(r);
  if (!outcome->ok()) {
    // The rows for the kind of step that failed: tailor's own clone is never the package's.
    const size_t failed = outcome->steps.size();
    const bool clone = failed > 0 && failed <= out.steps.size() &&
                       out.steps[failed - 1].role == plan::StepRole::clone;
    diagnose_failed_step(out, outcome->facts.tail, session.diagnose_source_dir,
                         clone ? "clone" : "build");
    // An interrupt before the first step started leaves no step at all.
    if (outcome->steps.empty() || outcome->interrupted || interrupt_signal() != 0)
      out.stop = stop(BuildStatus::build_failed, "interrupted");
    else
      out.stop = stop(BuildStatus::build_failed, failed_step_line(*outcome));
  }
  return out;
}

}  // namespace tailor::builder
